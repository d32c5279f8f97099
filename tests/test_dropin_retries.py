"""Runs that don't fit one train() and one Trainer: auto_find_batch_size's retry after an out-of-memory error
(transformers calls on_train_begin again, at a smaller batch, with no on_train_end between); one TrainsweepCallback()
in each fold's Trainer of a k-fold loop; a sped-up classifier saved whole with torch.save; evaluate() around train()."""
import json

import pytest
import torch
from transformers import Qwen3ForSequenceClassification, Trainer, TrainerCallback, set_seed

from src import TrainsweepCallback, attach
from tests.test_dropin_defects import _args, _classified, _config, _tokenizer, _train


class OutOfMemoryAtFirst(TrainerCallback):
    """Raises what accelerate's find_executable_batch_size takes for an out-of-memory error on the first step of a
    try at more than `fits` rows a micro-batch, as a GPU too small for them would."""

    def __init__(self, fits: int):
        self.fits, self.trainer, self.tries = fits, None, []

    def on_step_begin(self, args, state, control, **kw):
        self.tries.append(self.trainer._train_batch_size)
        if self.trainer._train_batch_size > self.fits:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def _auto_batch_run(out, attached: bool):
    tokenizer = _tokenizer()
    set_seed(0)
    oom = OutOfMemoryAtFirst(fits=12)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                      args=_args(out, auto_find_batch_size=True, per_device_train_batch_size=16),
                      train_dataset=_classified(tokenizer), processing_class=tokenizer, callbacks=[oom])
    oom.trainer = trainer
    if attached:
        attach(trainer)
    return _train(trainer), oom.tries


def test_auto_find_batch_size_retry_reports_the_batch_that_trained(tmp_path):
    plain, tries = _auto_batch_run(tmp_path / "plain", attached=False)
    assert tries[:3] == [16, 14, 12] and set(tries[3:]) == {12}  # accelerate takes 0.9 of the batch a try
    losses, _ = _auto_batch_run(tmp_path / "attached", attached=True)
    assert losses == plain  # the retries train as without trainsweep
    out = tmp_path / "attached"
    assert not (out / "trainsweep-2").exists() and not (out / "trainsweep-3").exists()
    rep = json.loads((out / "trainsweep" / "report.json").read_text())
    assert rep["status"] == "ok", rep.get("error")
    assert rep["config"]["batch"]["size"] == 12
    assert rep["tokens"]["samples"] == 12 * rep["step_time_s"]["n"]  # the timed steps' rows, each counted once
    assert "auto_find_batch_size" in rep["retried"] and "16, 14" in rep["retried"]


def test_one_callback_instance_in_each_folds_trainer_reports_on_the_fold_training(tmp_path):
    """A k-fold loop that builds its callbacks once: before, the second fold's report read the first fold's Trainer
    (its taps, its optimizer) and counted none of the second fold's rows."""
    tokenizer = _tokenizer()
    callback = TrainsweepCallback()
    for fold, rows in enumerate((96, 48)):
        set_seed(fold)
        trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)),
                          args=_args(tmp_path / f"fold{fold}", learning_rate=1e-4 * (fold + 1)),
                          train_dataset=_classified(tokenizer, rows), processing_class=tokenizer, callbacks=[callback])
        _train(trainer)
        rep = json.loads((tmp_path / f"fold{fold}" / "trainsweep" / "report.json").read_text())
        assert rep["status"] == "ok", rep.get("error")
        assert rep["data"]["rows"] == rows
        assert rep["config"]["trainer"]["lr"] == 1e-4 * (fold + 1)
        assert rep["tokens"]["samples"] == 8 * rep["step_time_s"]["n"] > 0


@pytest.mark.parametrize("adapters", [False, True])
def test_a_sped_up_classifier_saved_whole_loads_back_with_its_own_forward(tmp_path, adapters):
    """torch.save(model) of a classifier under speedup's packing, in a callback and after train(): the pooling's
    forward pickles by name, so the loaded model scores a padded row as the trained one does."""
    import io

    tokenizer = _tokenizer()
    set_seed(0)
    model = Qwen3ForSequenceClassification(_config(num_labels=3))
    if adapters:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="SEQ_CLS"))
    saved = []

    class SaveWhole(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kw):
            if state.global_step == 2:
                torch.save(model, tmp_path / "step2.pt")
                saved.append(2)

    trainer = Trainer(model=model, args=_args(tmp_path), train_dataset=_classified(tokenizer),
                      processing_class=tokenizer, callbacks=[SaveWhole()])
    attach(trainer, speedup={"verify": False})
    _train(trainer)
    assert trainer.trainsweep_speedup.on("padding-free batches") and saved == [2]
    buffer = io.BytesIO()
    torch.save(trainer.model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    row = {"input_ids": torch.tensor([[3, 4, 5, 0]]), "attention_mask": torch.tensor([[1, 1, 1, 0]])}
    trainer.model.eval(), loaded.eval()
    with torch.no_grad():
        assert torch.equal(trainer.model(**row).logits, loaded(**row).logits)
        torch.load(tmp_path / "step2.pt", weights_only=False).eval()(**row)


def test_an_evaluation_before_training_leaves_its_timing_out_of_the_eval_line(tmp_path, capsys):
    """evaluate() before train() makes the Trainer time the model's preparation: the eval line listed
    model_preparation_time beside the loss as if it were a metric."""
    tokenizer = _tokenizer()
    set_seed(0)
    rows = _classified(tokenizer)
    trainer = Trainer(model=Qwen3ForSequenceClassification(_config(num_labels=3)), args=_args(tmp_path), train_dataset=rows,
                      eval_dataset=rows.select(range(16)), processing_class=tokenizer)
    attach(trainer)
    trainer.evaluate()
    trainer.train()
    capsys.readouterr()
    metrics = trainer.evaluate()
    out = capsys.readouterr().out
    rep = json.loads((tmp_path / "trainsweep" / "report.json").read_text())
    assert "eval_model_preparation_time" in metrics and rep["eval"]["final"]["loss"] == metrics["eval_loss"]
    from src.report.document import Report, format_summary

    line = next(l for l in format_summary(Report.from_dict(rep)).splitlines() if l.strip().startswith("eval"))
    assert "loss" in line and "preparation_time" not in line, line
