"""trainsweep.speedup on PEFT methods other than plain LoRA (tests/user_corpus/scripts/peft_*.py run them whole):
adapters that can't read packed rows leave the batches as they are and say why, AdaLoRA's per-micro-batch
regulariser keeps its weight, and the report names the adapter that trains."""
import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling

from src import speedup
from src.dropin.reading import peft_of
from tests.test_speedup import LENGTHS, Tok, _causal_lm, _classifier, _rows, _trainer


def _lever(done, name="padding-free batches"):
    return next(lv for lv in done.levers if lv.name == name)


def _lm_trainer(tmp_path, config, **kw):
    from peft import get_peft_model

    model = get_peft_model(_causal_lm(), config)
    return _trainer(tmp_path, model=model, data=_rows(label=False),
                    collator=DataCollatorForLanguageModeling(Tok(), mlm=False), **kw)


def test_prompt_learning_adapters_keep_the_scripts_batches(tmp_path):
    """PEFT prepends its virtual tokens once per batch row and drops position_ids: packed sequences would share one
    prompt and attend to each other (on a GPU the A/B's loss agreed within 2% and kept the lever)."""
    from peft import PrefixTuningConfig, PromptEncoderConfig, PromptTuningConfig, get_peft_model

    for i, config in enumerate([PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4),
                                PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4)]):
        trainer = _lm_trainer(tmp_path / str(i), config)
        done = speedup(trainer, verify=False, quiet=True)
        assert not _lever(done).on and "virtual tokens" in _lever(done).detail, done.text()
        assert "get_train_dataloader" not in vars(trainer) and not done.applied()
    model = get_peft_model(_classifier(), PromptEncoderConfig(task_type="SEQ_CLS", num_virtual_tokens=4,
                                                               encoder_hidden_size=16))
    trainer = _trainer(tmp_path / "cls", model=model)
    done = speedup(trainer, verify=False, quiet=True)
    assert not _lever(done).on and "p_tuning" in _lever(done).detail
    assert "forward" not in vars(model.get_base_model())  # the classifier's own forward: no per-sequence pooling


def test_an_activated_lora_keeps_the_scripts_batches(tmp_path):
    """aLoRA adapts each row from its invocation tokens' last occurrence: a pack's earlier sequences would go
    unadapted."""
    from peft import LoraConfig

    done = speedup(_lm_trainer(tmp_path, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM",
                                                    alora_invocation_tokens=[7, 8])), verify=False, quiet=True)
    assert not _lever(done).on and "aLoRA" in _lever(done).detail, done.text()
    assert not _lever(done, "fused LoRA").on and not _lever(done, "bf16 adapters").on  # adapters: their levers said


def test_adalora_keeps_its_micro_batches_when_its_regulariser_is_on(tmp_path):
    from peft import AdaLoraConfig, LoraConfig

    def config(kind, **kw):
        if kind == "lora":
            return LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
        return AdaLoraConfig(init_r=6, target_r=2, total_step=6, target_modules=["q_proj", "v_proj"],
                             task_type="CAUSAL_LM", **kw)

    # 4 rows x 4 micro-batches: the packs hold them in 3, so AdaLoRA's term would weigh 0.75x
    lora = speedup(_lm_trainer(tmp_path / "lora", config("lora"), bs=4, accum=4), verify=False, quiet=True)
    assert lora.on("padding-free batches") and lora.packing["grad_accum"] != 4
    done = speedup(_lm_trainer(tmp_path / "ada", config("adalora"), bs=4, accum=4), verify=False, quiet=True)
    assert not _lever(done).on and "orthogonal regularisation" in _lever(done).detail, done.text()
    unregularised = speedup(_lm_trainer(tmp_path / "ada0", config("adalora", orth_reg_weight=0.0), bs=4, accum=4),
                            verify=False, quiet=True)
    assert unregularised.on("padding-free batches")


class EosPad(Tok):
    pad_token_id = 2  # tokenizer.pad_token = tokenizer.eos_token, set on the tokenizer the collator holds


def test_the_lm_collators_own_pad_id_decides_which_tokens_go_unscored(tmp_path):
    """A DoRA script in PEFT's example's shape: pad = eos on the tokenizer the collator holds, no processing_class,
    the model's config pad id another token. transformers' collator sets every eos in the rows to -100; the packs
    scored them (the A/B's loss differed by 0.02%, so the lever stayed on)."""
    from peft import LoraConfig, get_peft_model

    g = torch.Generator().manual_seed(1)
    ids = [torch.randint(3, 500, (n - 1,), generator=g).tolist() + [2] for n in LENGTHS]  # each row ends in eos
    data = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]})
    model = get_peft_model(_causal_lm(), LoraConfig(r=4, use_dora=True, target_modules=["q_proj", "v_proj"],
                                                    task_type="CAUSAL_LM"))
    trainer = _trainer(tmp_path, model=model, data=data, collator=DataCollatorForLanguageModeling(EosPad(), mlm=False))
    plain = trainer.data_collator([data[i] for i in range(4)])
    assert not (plain["labels"] == 2).any()
    done = speedup(trainer, verify=False, quiet=True)
    assert done.on("padding-free batches")
    batch = next(iter(trainer.get_train_dataloader()))
    assert (batch["input_ids"] == 2).any() and not (batch["labels"] == 2).any()


def test_the_report_names_the_adapter_that_trains(tmp_path):
    from peft import AdaLoraConfig, IA3Config, LoraConfig, get_peft_model

    model = get_peft_model(_causal_lm(), LoraConfig(r=4, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    model.add_adapter("second", LoraConfig(r=16, target_modules=["v_proj"], task_type="CAUSAL_LM"))
    assert peft_of(model)["r"] == 4
    model.set_adapter("second")
    assert peft_of(model) == {"method": "lora", "r": 16, "compute_dtype": None}
    dora = get_peft_model(_causal_lm(), LoraConfig(r=8, use_dora=True, target_modules=["q_proj"]))
    assert peft_of(dora)["method"] == "dora"
    ada = get_peft_model(_causal_lm(), AdaLoraConfig(init_r=12, target_r=4, total_step=10, target_modules=["q_proj"]))
    assert peft_of(ada)["method"] == "adalora" and peft_of(ada)["r"] == 12  # AdaLoRA ignores LoraConfig's r (8)
    ia3 = get_peft_model(_causal_lm(), IA3Config(target_modules=["q_proj"], feedforward_modules=[]))
    assert peft_of(ia3) == {"method": "ia3", "r": None, "compute_dtype": None}


def test_the_initial_loss_is_not_judged_where_adalora_adds_its_regulariser(tmp_path):
    """AdaLoRA's model loss holds its orthogonal regularisation: on a random-init LM far above the cross-entropy
    (6.29 against ~4.54 in tests/user_corpus's peft_adalora_clm), judged as "weights did not load"."""
    import json

    from peft import AdaLoraConfig

    from src import attach

    def initial_loss(name, weight):
        config = AdaLoraConfig(init_r=6, target_r=2, total_step=6, target_modules=["q_proj", "v_proj"],
                               task_type="CAUSAL_LM", orth_reg_weight=weight)
        trainer = _lm_trainer(tmp_path / name, config, bs=4, accum=1)
        attach(trainer)
        trainer.train()
        checks = json.loads((tmp_path / name / "trainsweep" / "report.json").read_text())["diagnostics"]
        return next(c for c in checks if c["check"] == "model.initial_loss")

    regularised = initial_loss("ada", 10.0)
    assert regularised["status"] == "info" and "orthogonal regularisation" in regularised["expected"]
    assert initial_loss("ada0", 0.0)["status"] != "info"  # without it the loss is the task's, and judged
