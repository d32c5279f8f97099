"""The drop-in on TRL's preference and RL trainers, as a probe of TRL's own scripts met it (tests/user_corpus holds
those scripts, run unmodified, in `make test-all`): GRPO's rows and batches hold no input_ids, so nothing counted
its tokens and measuring turned itself off at the end; its loss, like DPO's and KTO's, is not a cross-entropy
over the vocabulary, so no uniform guess applies to it."""
import pytest
from datasets import Dataset
from transformers import Trainer

from src import attach
from src.dropin.callback import own_objective
from src.report.analysis import throughput
from src.report.sections import Loss
from tests.test_dropin_defects import TEXTS, _config, _report, _tokenizer

trl = pytest.importorskip("trl")


def test_a_trainer_with_its_own_objective_is_told_from_one_training_on_the_models_cross_entropy():
    class MySFT(trl.SFTTrainer):
        pass

    class MyDPO(trl.DPOTrainer):
        pass

    def of(cls):
        return own_objective(cls.__new__(cls))

    assert [of(c) for c in (trl.DPOTrainer, trl.KTOTrainer, trl.GRPOTrainer, trl.RewardTrainer, MyDPO)] == [True] * 5
    assert [of(c) for c in (trl.SFTTrainer, MySFT, Trainer)] == [False] * 3


def test_rates_no_row_was_counted_for_are_unknown_and_a_loss_without_a_guess_says_none():
    assert throughput({"samples": 0, "all": 0, "real": 0, "loss": 0}, 5, 0.5).real_tokens_per_s is None
    assert throughput({"samples": 8, "all": 80, "real": 60, "loss": 0}, 1, 0.5).loss_tokens_per_s is None
    assert Loss(initial=0.693, final=0.654, curve=[(1, 0.693), (2, 0.654)]).line() == "0.693 -> 0.654"
    assert Loss(initial=4.6, final=4.1, expected_initial=4.543, curve=[(1, 4.6), (2, 4.1)]).line().endswith(
        "(uniform guess: 4.543)")


def test_grpo_is_measured_to_the_end_without_figures_it_cannot_count(tmp_path):
    from transformers import Qwen3ForCausalLM

    tokenizer = _tokenizer()
    model = Qwen3ForCausalLM(_config(eos_token_id=2))
    prompts = Dataset.from_dict({"prompt": TEXTS[:16]})
    args = trl.GRPOConfig(output_dir=str(tmp_path), max_steps=7, per_device_train_batch_size=4, num_generations=4,
                          max_completion_length=4, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                          bf16=False, seed=0)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=[lambda completions, **kw: [float(len(c)) for c in completions]],
                              args=args, train_dataset=prompts, processing_class=tokenizer)
    attach(trainer)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and "turned_off" not in rep, rep.get("turned_off")
    assert rep["step_time_s"]["mean"] > 0 and rep["throughput"]["real_tokens_per_s"] is None
    assert rep["loss"]["expected_initial"] is None and "flops" not in rep
    from src.report.document import Report, format_summary

    assert "throughput   unknown: the batches the Trainer fetched held no rows" in format_summary(Report.from_dict(rep))


def test_two_trainers_on_one_output_dir_keep_both_reports(tmp_path):
    """A script that trains, then resumes in a second Trainer on the same output_dir: the second report went over
    the first. Each train() call keeps its own folder, and asking again for the one it has gives it back."""
    from src.dropin.callback import own_folder

    first, second = (1, 1), (1, 2)  # one callback's first and second train() calls
    folder = tmp_path / "trainsweep"
    assert own_folder(folder, first) == folder and own_folder(folder, first) == folder
    assert own_folder(folder, second) == tmp_path / "trainsweep-2"
    assert own_folder(tmp_path / "trainsweep-2", second) == tmp_path / "trainsweep-2"


def test_a_resumed_run_reports_the_steps_it_ran_not_its_checkpoints(tmp_path):
    from transformers import DataCollatorWithPadding, Qwen3ForSequenceClassification, set_seed

    from tests.test_dropin_defects import _args, _classified

    tokenizer = _tokenizer()
    data = _classified(tokenizer)

    def trainer(steps):
        set_seed(0)
        model = Qwen3ForSequenceClassification(_config(num_labels=3))
        return Trainer(model=model, args=_args(tmp_path, max_steps=steps, save_strategy="steps", save_steps=4),
                       train_dataset=data, data_collator=DataCollatorWithPadding(tokenizer))

    trainer(4).train()
    resumed = trainer(8)
    attach(resumed)
    resumed.train(resume_from_checkpoint=True)
    curve = _report(tmp_path)["loss"]["curve"]
    assert [step for step, _ in curve] == [5, 6, 7, 8]


def test_preference_collators_make_two_sequences_of_a_row_and_plain_ones_one():
    from transformers import DataCollatorWithPadding

    from src.dropin.padding import sequences_per_row
    from trl.trainer.dpo_trainer import DataCollatorForPreference as DPOPairs
    from trl.trainer.reward_trainer import DataCollatorForPreference as RewardPairs

    dpo = [{"prompt_ids": [5, 6], "chosen_ids": [7], "rejected_ids": [8, 9]}]
    reward = [{"chosen_ids": [5, 6, 7], "rejected_ids": [5, 8]}]
    assert sequences_per_row(dpo, DPOPairs(pad_token_id=0)) == 2
    assert sequences_per_row(reward, RewardPairs(pad_token_id=0)) == 2
    assert sequences_per_row([{"input_ids": [5, 6, 7]}], DataCollatorWithPadding(_tokenizer())) == 1
    assert sequences_per_row(reward, DataCollatorWithPadding(_tokenizer())) == 1  # it fails on these rows: taken at 1


def test_a_reward_model_is_a_reward_task_and_its_samples_are_the_pairs_it_trained_on(tmp_path):
    """TRL's reward.py: a one-logit classifier on chosen/rejected pairs was reported as a regression, and its
    samples/s counted each pair's two sequences (twice the rows the batch size and "per step" count)."""
    from transformers import Qwen3ForSequenceClassification

    from src.report.document import Report, format_summary

    tokenizer = _tokenizer()
    model = Qwen3ForSequenceClassification(_config(num_labels=1))
    pairs = Dataset.from_dict({"prompt": TEXTS[:32], "chosen": TEXTS[32:64], "rejected": TEXTS[64:96]})
    args = trl.RewardConfig(output_dir=str(tmp_path), max_steps=14, per_device_train_batch_size=4,
                            gradient_accumulation_steps=2, logging_steps=1, report_to=[], save_strategy="no",
                            use_cpu=True, bf16=False, seed=0, max_length=64)
    trainer = trl.RewardTrainer(model=model, args=args, train_dataset=pairs, processing_class=tokenizer)
    attach(trainer, warmup_steps=2)
    trainer.train()
    rep = _report(tmp_path)
    assert rep["status"] == "ok" and rep["config"]["task"]["name"] == "reward"
    assert rep["data"]["sequences_per_sample"] == 2
    rows_per_step = rep["throughput"]["samples_per_s"] * rep["step_time_s"]["mean"]
    assert rows_per_step == pytest.approx(4 * 2, rel=1e-6)
    unchecked = [c for c in rep["diagnostics"] if c["status"] == "not_run"]
    assert unchecked and all("2 sequences side by side" in c["value"] for c in unchecked)
    summary = format_summary(Report.from_dict(rep))
    assert "= 8 (rows of 2 sequences: samples count rows) per step" in summary and " reward," in summary
    assert summary.count("2 sequences side by side") == 1  # one line for the groups that share a reason


def test_sfts_dft_loss_is_its_own_objective_with_no_uniform_guess():
    """SFTConfig(loss_type="dft") weights each token's loss by its probability: a run started at 0.012, and the
    report set it beside ln(vocab) = 6.25 as its uniform guess."""
    from types import SimpleNamespace

    from src.dropin.callback import own_objective

    assert own_objective(SimpleNamespace(args=SimpleNamespace(loss_type="dft")))
    assert not own_objective(SimpleNamespace(args=SimpleNamespace(loss_type="nll")))
    assert not own_objective(SimpleNamespace(args=SimpleNamespace()))  # transformers' TrainingArguments: no loss_type


def test_sfts_wrapped_packing_cuts_blocks_and_truncates_nothing(tmp_path):
    """SFTConfig(packing=True, packing_strategy="wrapped") joins every text and cuts blocks of max_length: each row
    at max_length read as truncation ("the ends of these rows are cut"), where nothing was lost."""
    from transformers import Qwen3ForCausalLM

    model = Qwen3ForCausalLM(_config())
    text = Dataset.from_dict({"text": TEXTS})
    args = trl.SFTConfig(output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=4, logging_steps=1,
                         report_to=[], save_strategy="no", use_cpu=True, bf16=False, seed=0, max_length=16,
                         packing=True, packing_strategy="wrapped")
    trainer = trl.SFTTrainer(model=model, args=args, train_dataset=text, processing_class=_tokenizer())
    attach(trainer, warmup_steps=1)
    trainer.train()
    truncation = next(c for c in _report(tmp_path)["diagnostics"] if c["check"] == "data.truncation")
    assert truncation["status"] == "pass" and "no row was cut short" in truncation["hint"]
