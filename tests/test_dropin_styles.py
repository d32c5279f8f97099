"""TrainingArguments and Trainer styles the user corpus met (tests/user_corpus: neftune_clm, custom_sampler_subclass,
tokens_seen_clm), each failing on the code before its fix: speedup packed under NEFTune, whose noise shrinks with
the batch's width; packed rows in its own order over a Trainer subclass's own sampler (a curriculum dropped
silently); and under include_num_input_tokens_seen="non_padding" the Trainer counted each pack's padding as tokens
seen. Tiny models on a CPU, speedup unverified (verify=False: no timing)."""
import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models
from torch.utils.data import SequentialSampler
from transformers import (DataCollatorForLanguageModeling, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments, set_seed)

from src import speedup

LENGTHS = [5 + (i * 7) % 40 for i in range(64)]


def _tokenizer() -> PreTrainedTokenizerFast:
    words = {f"w{i}": i for i in range(128)}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(words, unk_token="w1")),
                                   pad_token="w0", unk_token="w1", eos_token="w0")  # pad = eos, as Llama scripts set


def _rows() -> Dataset:
    g = torch.Generator().manual_seed(0)
    return Dataset.from_dict({"input_ids": [torch.randint(2, 128, (n,), generator=g).tolist() for n in LENGTHS]})


def _trainer(out, cls=Trainer, eval_dataset=None, **args) -> Trainer:
    set_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, pad_token_id=0,
                                         attn_implementation="sdpa"))
    args = TrainingArguments(**{"output_dir": str(out), "max_steps": 4, "per_device_train_batch_size": 8,
                                "learning_rate": 1e-3, "logging_steps": 1, "report_to": [], "use_cpu": True,
                                "save_strategy": "no", "seed": 0, **args})
    # no processing_class: the Trainer's non-padding count then has only the attention mask to go by
    return cls(model=model, args=args, train_dataset=_rows(), eval_dataset=eval_dataset,
               data_collator=DataCollatorForLanguageModeling(_tokenizer(), mlm=False))


def _losses(trainer) -> list[float]:
    trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def test_neftune_noise_scaled_by_the_batch_width_leaves_batches_as_they_are(tmp_path):
    trainer = _trainer(tmp_path / "sped", neftune_noise_alpha=5)
    done = speedup(trainer, verify=False, quiet=True)
    assert not any(lv.on for lv in done.levers), done.text()
    assert "NEFTune (neftune_noise_alpha=5" in done.levers[0].detail
    assert _losses(trainer) == _losses(_trainer(tmp_path / "plain", neftune_noise_alpha=5))


class Curriculum(Trainer):
    def _get_train_sampler(self, train_dataset=None):
        return SequentialSampler(train_dataset if train_dataset is not None else self.train_dataset)


class OwnLoader(Trainer):
    def get_train_dataloader(self):
        return super().get_train_dataloader()


@pytest.mark.parametrize("cls, method", [(Curriculum, "_get_train_sampler"), (OwnLoader, "get_train_dataloader")])
def test_a_subclass_drawing_its_own_rows_keeps_its_order(cls, method, tmp_path):
    trainer = _trainer(tmp_path / "sped", cls=cls)
    done = speedup(trainer, verify=False, quiet=True)
    assert not any(lv.on for lv in done.levers), done.text()
    assert f"{cls.__name__}.{method} is your own" in done.levers[0].detail
    if cls is Curriculum:
        assert _losses(trainer) == _losses(_trainer(tmp_path / "plain", cls=cls))


def test_a_train_dataloader_set_on_the_trainer_itself_keeps_its_order(tmp_path):
    """Not a subclass: the script assigns its own loader to the Trainer object; speedup would have replaced it."""
    trainer = _trainer(tmp_path / "sped")
    own = trainer.get_train_dataloader
    trainer.get_train_dataloader = lambda: own()
    done = speedup(trainer, verify=False, quiet=True)
    assert not any(lv.on for lv in done.levers), done.text()
    assert "your trainer.get_train_dataloader is your own (set on the Trainer)" in done.levers[0].detail
    assert vars(trainer)["get_train_dataloader"] is not own and trainer.get_train_dataloader.__name__ == "<lambda>"


def test_non_padding_tokens_seen_counts_the_packs_real_tokens(tmp_path):
    # one epoch: every row once, so the Trainer's count is every row's tokens, whatever the packs' padding
    trainer = _trainer(tmp_path, max_steps=-1, num_train_epochs=1, include_num_input_tokens_seen="non_padding")
    done = speedup(trainer, verify=False, quiet=True)
    assert done.levers[0].on and "num_input_tokens_seen counts each pack's real tokens" in done.levers[0].detail
    trainer.train()
    assert trainer.state.num_input_tokens_seen == sum(LENGTHS)


def test_all_tokens_seen_counts_the_packs_positions_and_says_so(tmp_path):
    trainer = _trainer(tmp_path, max_steps=-1, num_train_epochs=1, include_num_input_tokens_seen=True)
    done = speedup(trainer, verify=False, quiet=True)
    assert "num_input_tokens_seen counts the packs' positions" in done.levers[0].detail
    trainer.train()
    packs = len(done.batches[0])
    assert trainer.state.num_input_tokens_seen == packs * done.packing["tokens"]


def test_rows_holding_an_input_the_packs_would_drop_keep_their_batches(tmp_path):
    """GPT-2 reads token_type_ids (an embedding added even where all are 0): packs carry input_ids, labels and
    position_ids only, so packing rows that hold them would change the loss without a word."""
    from transformers import DataCollatorWithPadding, GPT2Config, GPT2ForSequenceClassification

    set_seed(0)
    model = GPT2ForSequenceClassification(GPT2Config(vocab_size=128, n_embd=32, n_layer=1, n_head=2, num_labels=3,
                                                     pad_token_id=0))
    rows = _rows().map(lambda r, i: {"token_type_ids": [0] * len(r["input_ids"]), "labels": i % 3}, with_indices=True)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8, report_to=[],
                             use_cpu=True, save_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=rows, data_collator=DataCollatorWithPadding(_tokenizer()))
    done = speedup(trainer, verify=False, quiet=True)
    assert not done.on("padding-free batches"), done.text()
    assert "your rows hold token_type_ids, which the model reads" in done.levers[0].detail
    without = Trainer(model=model, args=args, train_dataset=rows.remove_columns("token_type_ids"),
                      data_collator=DataCollatorWithPadding(_tokenizer()))
    assert speedup(without, verify=False, quiet=True).on("padding-free batches")  # the same rows otherwise pack


def test_an_evaluation_after_load_best_model_at_end_names_the_weights_it_evaluated(tmp_path):
    """A newcomer's classifier: the report said 'eval ... (step 32)' for checkpoint-8's weights, which
    load_best_model_at_end had put back, and the end-of-training line never said which model train() returned."""
    import json

    from src import attach

    trainer = _trainer(tmp_path, eval_dataset=_rows().select(range(16)), max_steps=8, eval_strategy="steps",
                       eval_steps=2, save_strategy="steps", save_steps=2, load_best_model_at_end=True,
                       metric_for_best_model="loss")
    attach(trainer)
    trainer.train()
    best = trainer.state.best_model_checkpoint.rsplit("/", 1)[-1]
    report = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert report["eval"]["then"].startswith(f"train() ends with {best}'s weights, loss ")
    trainer.evaluate()
    report = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert report["eval"]["weights"] == f"{best}'s weights, loaded as the best at the end of training"
    assert f"({best}'s weights, loaded as the best" in (tmp_path / "trainsweep" / "report.md").read_text()


def test_one_trainer_trained_twice_keeps_both_reports(tmp_path, capsys):
    """A user-corpus script trains the head, unfreezes, and calls train() again on the same Trainer: the second
    report went over the first, and the launcher listed one."""
    import json

    from src import attach

    trainer = _trainer(tmp_path, max_steps=3)
    attach(trainer)
    trainer.train()
    trainer.args.max_steps = 5
    trainer.train()
    first, second = (json.loads((tmp_path / d / "report.json").read_text()) for d in ("trainsweep", "trainsweep-2"))
    assert first["config"]["trainer"]["max_steps"] == 3 and second["config"]["trainer"]["max_steps"] == 5
    assert capsys.readouterr().out.count("trainsweep report: ") == 2


def test_every_set_of_an_evaluation_on_a_dict_of_sets_is_reported(tmp_path):
    """eval_dataset={"in_domain": ..., "shifted": ...} logs one entry a set at the same step: the report showed the
    last set's alone, in training and after it."""
    import json

    from src import attach

    sets = {"in_domain": _rows().select(range(16)), "shifted": _rows().select(range(16, 40))}
    trainer = _trainer(tmp_path, eval_dataset=sets, max_steps=4, eval_strategy="steps", eval_steps=2)
    attach(trainer)
    trainer.train()
    report = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert {"in_domain_loss", "shifted_loss"} <= set(report["eval"]["final"]) and report["eval"]["step"] == 4
    trainer.evaluate()  # the Trainer evaluates each set in turn, one on_evaluate a set
    report = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert {"in_domain_loss", "shifted_loss"} <= set(report["eval"]["final"]) and report["eval"]["after_train"]
    assert "in_domain_loss" in (tmp_path / "trainsweep" / "report.md").read_text()


def test_a_model_the_script_compiled_itself_is_read_as_the_module_it_compiles(tmp_path):
    """`model = torch.compile(model)` before the Trainer: the report called the task "OptimizedModule", so no data or
    model check ran and no uniform guess was given."""
    import json

    from src import attach

    trainer = _trainer(tmp_path, remove_unused_columns=False)  # the Trainer's own advice for a compiled module
    trainer.model = trainer.model_wrapped = torch.compile(trainer.model, backend="eager")
    attach(trainer)
    trainer.train()
    report = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert report["config"]["task"]["name"] == "causal_lm" and report["loss"]["expected_initial"] is not None
    assert not [c for c in report["diagnostics"] if c["status"] == "not_run"], report["diagnostics"]


def test_weights_unfrozen_during_training_are_said_beside_the_flops(tmp_path):
    """A gradual-unfreezing script: the FLOPs a token are counted at train begin, with 0.73% of the weights
    training, and the report gave them without a word once a callback had unfrozen the rest."""
    import json

    from transformers import TrainerCallback

    from src import attach

    class Unfreeze(TrainerCallback):
        def on_step_begin(self, args, state, control, model=None, **kw):
            if state.global_step == 2:
                model.requires_grad_(True)

    trainer = _trainer(tmp_path, max_steps=6)
    for name, p in trainer.model.named_parameters():
        p.requires_grad = name.startswith("lm_head")
    trainer.add_callback(Unfreeze())
    attach(trainer, warmup_steps=2)
    trainer.train()
    flops = json.loads((tmp_path / "trainsweep" / "report.json").read_text())["flops"]
    assert flops["trainable_changed"].endswith("-> 100.00%")
    assert "the weights that train changed during training" in (tmp_path / "trainsweep" / "report.md").read_text()
