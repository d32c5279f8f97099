"""Never break a user's training (issue 48): every internal step of `attach` and `speedup` is made to raise in
turn, and the script must still train to the end with the losses it logs without trainsweep, bit for bit, while
one line names the part that turned itself off and the report lists it."""
import json

import pytest
import torch
from transformers import (Qwen3Config, Qwen3ForSequenceClassification, Trainer, TrainerCallback, TrainingArguments,
                          set_seed)

from src import attach
from src.checks import preflight
from src.dropin import callback as dropin_callback
from src.dropin import judging, outcome
from src.levers import apply as levers_apply
from src.levers import loss_scale, packing, verify
from src.measure import meter
from src.report import analysis, document
from src.report import files as report_files


class TensorRows(torch.utils.data.Dataset):
    """The commonest style in the wild: a torch Dataset whose rows are dicts of tensors."""

    def __len__(self):
        return 96

    def __getitem__(self, i):
        n = 4 + (i * 7) % 13
        ids = torch.tensor([3 + (i * 5 + j * 3) % 40 for j in range(n)])
        return {"input_ids": ids, "attention_mask": torch.ones(n, dtype=torch.long), "labels": torch.tensor(i % 3)}


def collate(rows):
    width = max(len(r["input_ids"]) for r in rows)
    pad = lambda t: torch.cat([t, t.new_zeros(width - len(t))])  # noqa: E731
    return {"input_ids": torch.stack([pad(r["input_ids"]) for r in rows]),
            "attention_mask": torch.stack([pad(r["attention_mask"]) for r in rows]),
            "labels": torch.stack([r["labels"] for r in rows])}


def _trainer(out, accum=2) -> Trainer:
    set_seed(0)
    model = Qwen3ForSequenceClassification(Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, num_labels=3, pad_token_id=0, attention_dropout=0.1))
    args = TrainingArguments(output_dir=str(out), max_steps=8, per_device_train_batch_size=4,
                             gradient_accumulation_steps=accum, logging_steps=1, report_to=[], use_cpu=True,
                             save_strategy="no", seed=0)
    return Trainer(model=model, args=args, train_dataset=TensorRows(), data_collator=collate)


def _losses(trainer) -> list[float]:
    trainer.train()
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _losses(_trainer(tmp_path_factory.mktemp("plain")))


def _boom(*args, **kwargs):
    raise RuntimeError("injected")


# (where, name, the part that turns off): each of attach's internal steps
ATTACH_STEPS = [
    (dropin_callback, "trainer_of", "measuring"),
    (dropin_callback.Rows, "head", "measuring"),
    (dropin_callback, "config_from_trainer", "measuring"),
    (dropin_callback, "tokenizer_of", "measuring"),
    (preflight, "preflight", "the checks"),
    (judging, "grad_accum_loss", None),  # each check group stands alone: listed not_run, nothing turns off
    (dropin_callback.TrainsweepCallback, "_checks", "the checks"),
    (meter.Measure, "from_config", "measuring"),
    (dropin_callback, "tap", "measuring"),
    (meter.TokenCounter, "add", "measuring"),
    (meter.Measure, "on_train_begin", "measuring"),
    (meter.Measure, "on_step_begin", "measuring"),
    (meter.Measure, "on_pre_optimizer_step", "measuring"),
    (meter.Measure, "on_optimizer_step", "measuring"),
    (meter.Measure, "on_step_end", "measuring"),
    (meter.Measure, "on_log", "measuring"),
    (meter.Measure, "on_train_end", "measuring"),
    (analysis, "analyse", "measuring"),
    (document, "format_summary", "the report"),
    (report_files, "write", "the report"),
    (outcome, "watch", "watching train()"),
]


@pytest.mark.parametrize("where, name, part", ATTACH_STEPS, ids=[f"{getattr(w, '__name__', w)}.{n}" for w, n, _ in ATTACH_STEPS])
def test_a_failing_step_of_attach_turns_itself_off_and_training_goes_on_bit_for_bit(where, name, part, plain, tmp_path,
                                                                                       monkeypatch, capsys):
    monkeypatch.setattr(where, name, _boom)
    trainer = _trainer(tmp_path)
    if name == "trainer_of":  # callbacks=[TrainsweepCallback()]: the callback looks for its Trainer itself
        callback = dropin_callback.TrainsweepCallback()
        trainer.add_callback(callback)
    else:
        callback = attach(trainer)
    assert _losses(trainer) == plain
    err = capsys.readouterr().err
    if part is None:
        assert "turned itself off" not in err
        return
    assert err.count("turned itself off") == 1 and f"trainsweep: {part} turned itself off (RuntimeError: injected)" in err
    assert callback.guard.off == {part: "RuntimeError: injected"}
    report = tmp_path / "trainsweep" / "report.json"
    if part != "the report" and report.exists():
        rep = json.loads(report.read_text())
        assert rep["turned_off"] == {part: "RuntimeError: injected"}
        assert rep["status"] == ("error" if part == "measuring" else "ok")


class RaisesAtTrainEnd(TrainerCallback):
    """A script's own callback, added after attach: it raises once trainsweep's report is written."""

    def on_train_end(self, args, state, control, **kwargs):
        raise ValueError("the script's own callback failed")


def test_train_raising_after_the_report_turns_it_to_error_and_the_error_reaches_the_script(tmp_path, capsys):
    trainer = _trainer(tmp_path / "raised")
    attach(trainer)
    trainer.add_callback(RaisesAtTrainEnd())
    with pytest.raises(ValueError, match="^the script's own callback failed$"):
        trainer.train()
    rep = json.loads((tmp_path / "raised" / "trainsweep" / "report.json").read_text())
    assert rep["status"] == "error"
    assert rep["error"] == "train() raised after trainsweep's report: ValueError: the script's own callback failed"
    assert "report.json now says so" in capsys.readouterr().err
    fine = _trainer(tmp_path / "fine")
    attach(fine)
    assert fine.train().global_step == 8  # train() returns what it returned, and its report keeps its ok
    assert json.loads((tmp_path / "fine" / "trainsweep" / "report.json").read_text())["status"] == "ok"


def test_a_check_group_that_fails_is_listed_as_not_run(monkeypatch, tmp_path):
    monkeypatch.setattr(judging, "grad_accum_loss", _boom)
    trainer = _trainer(tmp_path)
    attach(trainer)
    trainer.train()
    checks = {c["check"]: c for c in json.loads((tmp_path / "trainsweep" / "report.json").read_text())["diagnostics"]}
    assert checks["train.grad_accum_loss"]["status"] == "not_run" and "injected" in checks["train.grad_accum_loss"]["value"]
    assert checks["model.initial_loss"]["status"] != "not_run"  # the others still judged


# speedup's internal steps: each fails before training, so nothing is applied and the script trains as written
SPEEDUP_STEPS = [
    (levers_apply, "_fits"), (levers_apply.TrainRows, "read"), (packing, "plan_budget"), (loss_scale, "probe"),
    (loss_scale, "first_batch"), (levers_apply, "_varlen"), (levers_apply, "_regional_compile"),
    (levers_apply, "_step_overheads"), (levers_apply.cuda_graphs, "apply"), (verify, "verify"), (packing, "apply"),
]


@pytest.mark.parametrize("where, name", SPEEDUP_STEPS, ids=[f"{getattr(w, '__name__', w)}.{n}" for w, n in SPEEDUP_STEPS])
def test_a_failing_step_of_speedup_leaves_the_script_as_written(where, name, tmp_path, monkeypatch):
    rows = TensorRows()
    set_seed(0)
    model = Qwen3ForSequenceClassification(Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, num_labels=3, pad_token_id=0))
    from transformers import DataCollatorWithPadding

    class Pad:  # DataCollatorWithPadding's tokenizer needs only pad(); a readable collator lets speedup pack
        pad_token_id, padding_side, model_input_names = 0, "right", ["input_ids", "attention_mask"]

        def pad(self, features, return_tensors="pt", **kw):
            return collate([{k: torch.as_tensor(v) for k, v in f.items()} for f in features])

    def make(out):
        set_seed(0)
        args = TrainingArguments(output_dir=str(out), max_steps=6, per_device_train_batch_size=8, logging_steps=1,
                                 report_to=[], use_cpu=True, save_strategy="no", seed=0)
        m = Qwen3ForSequenceClassification(model.config)
        return Trainer(model=m, args=args, train_dataset=rows, data_collator=DataCollatorWithPadding(Pad()))

    expected = _losses(make(tmp_path / "plain"))
    monkeypatch.setattr(where, name, _boom)
    trainer = make(tmp_path / "sped")
    attach(trainer, speedup={"verify": name == "verify"})
    assert _losses(trainer) == expected
    if name == "verify":
        assert not trainer.trainsweep_speedup.applied()


def test_a_pack_that_cannot_be_built_mid_training_goes_as_a_padded_batch(tmp_path, monkeypatch, capsys):
    """The packing collator is ours and runs inside the user's training: a failure there is one line and a
    padded batch of the same rows, never a crash."""
    from src.data.packing import PackCollator
    from transformers import DataCollatorWithPadding

    class Pad:
        pad_token_id, padding_side, model_input_names = 0, "right", ["input_ids", "attention_mask"]

        def pad(self, features, return_tensors="pt", **kw):
            return collate([{k: torch.as_tensor(v) for k, v in f.items()} for f in features])

    set_seed(0)
    model = Qwen3ForSequenceClassification(Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, num_labels=3, pad_token_id=0))
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=8, logging_steps=1,
                             report_to=[], use_cpu=True, save_strategy="no", seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=TensorRows(), data_collator=DataCollatorWithPadding(Pad()))
    attach(trainer, speedup={"verify": False})
    assert trainer.trainsweep_speedup.on("padding-free batches")
    calls = {"n": 0}
    real = PackCollator.__call__

    def every_third_fails(self, items):
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise RuntimeError("injected")
        return real(self, items)

    monkeypatch.setattr(PackCollator, "__call__", every_third_fails)
    losses = _losses(trainer)
    assert len(losses) == 6 and all(torch.isfinite(torch.tensor(losses)))
    assert capsys.readouterr().err.count("a pack could not be built (RuntimeError: injected)") == 1


def test_a_checkpoint_save_is_kept_out_of_the_timed_steps(tmp_path, monkeypatch):
    """Issue 54, 1: the Trainer saves after on_step_end, so a save landed in the next timed step (a step time runs
    from the last step's end): with a save taking a second every 3 steps, no timed step may hold one."""
    import time

    from transformers import Trainer as HFTrainer

    real = HFTrainer._save_checkpoint

    def slow_save(self, *a, **kw):
        time.sleep(1.0)
        return real(self, *a, **kw)

    monkeypatch.setattr(HFTrainer, "_save_checkpoint", slow_save)
    trainer = _trainer(tmp_path, accum=1)
    trainer.args.max_steps, trainer.args.save_strategy, trainer.args.save_steps = 12, "steps", 3
    attach(trainer, warmup_steps=1)
    trainer.train()
    rep = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    times = rep["step_time_s"]["values"]
    assert len(times) >= 6 and max(times) < 0.5, times
