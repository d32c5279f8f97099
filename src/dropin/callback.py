"""trainsweep's measurement in your own Hugging Face Trainer script: two added lines,

    import trainsweep
    trainsweep.attach(trainer)        # before trainer.train()

give the run what `python -m src.run` gives its own: the preflight checks at train begin, and at train end the
printed summary and verdict and report.json + report.md (in <output_dir>/trainsweep/). Nothing else in the
script changes: no Trainer subclass, no new arguments, and training computes what it computed without it.

Every hook runs through a Guard (guard.py): a part of trainsweep that fails turns itself off with one line and is
listed in the report; the user's training never sees the error. What the callback knows of the run it reads from
the Trainer (reading.py); the measuring itself is src/measure/meter.py's.
"""
from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from omegaconf import OmegaConf
from transformers import TrainerCallback

from ..base.rng import held_by, rng_kept
from ..checks import preflight
from ..checks.script_words import in_script_words
from ..checks.training import device_facts, precision_checks, schedule_check
from ..data.prepare import length_stats
from ..data.row_shapes import indexed
from ..machine import env
from ..measure import meter
from ..measure.forwards import ForwardCounter, compiled_top
from ..measure.tap import tap
from ..model import build as models
from ..model import flops
from ..config.training import MeasureConfig
from ..report import analysis, document, files as report_files
from ..report.sections import Flops
from . import judging, outcome
from .judging import own_objective
from .guard import Guard
from .padding import sequences_per_row, untokenised_of
from .reading import (TASKS, Rows, caller_of_model, config_from_trainer, config_of, label_key, resolved_of,
                      tokenizer_of, trainer_of, trl_trainer)

CHECKS, MEASURING, REPORT = "the checks", "measuring", "the report"
FORWARDS = "counting forwards"  # its failure leaves the FLOPs at one forward a micro-batch, as without it
_FOLDERS: dict[Path, tuple] = {}  # report folders this process's callbacks write to, and whose (own_folder)


def best_loaded(args, state) -> str | None:
    """The checkpoint train() loaded back at its end (load_best_model_at_end), which later evaluations evaluate."""
    best = getattr(state, "best_model_checkpoint", None)
    return Path(best).name if best and getattr(args, "load_best_model_at_end", False) else None


def own_folder(path: Path, owner) -> Path:
    """`path`, or path-2, ... where another `owner` (a train() call) of this process reports there already: two
    Trainers on one output_dir (a run, then a resumed one), or one trained twice, keep every report. A rerun of the
    script writes over its own earlier reports, as the Trainer writes over its output_dir."""
    n, out = 1, Path(path)
    while _FOLDERS.setdefault(out.resolve(), owner) != owner:
        n += 1
        out = Path(path).with_name(f"{Path(path).name}-{n}")
    return out


def _to_meter(hook: str):
    """A Trainer hook that hands its call to the meter (src/measure/meter.py's Measure), guarded."""
    def forward(self, args, state, control, **kw):
        if self.meter is not None:
            self.guard.run(MEASURING, getattr(self.meter, hook), args, state, control, **kw)
            if not self.guard.is_on(MEASURING):
                self._detach()
    return forward


class TrainsweepCallback(TrainerCallback):
    """Preflight checks at train begin; tokens, step times and memory while training (src/measure/meter.py's
    Measure, built once the Trainer knows its step count); the report at train end. Tokens are counted from the
    micro-batches the Trainer fetches for each optimizer step (src/measure/tap.py): summed on the device, read
    once at the end, as src.run's Trainer counts them."""

    def __init__(self, out_dir: str | Path | None = None, checks: bool = True, **measure_settings):
        self.asked_dir = Path(out_dir) if out_dir else None  # None: <TrainingArguments.output_dir>/trainsweep
        self.out_dir, self.train_calls, self.checks = None, 0, checks
        self.measure_settings = MeasureConfig.known(measure_settings)  # warmup_steps=5, profile_steps=3, ...
        self.meter = self.report = self.trainer = self.forwards = self.speedup = None  # speedup: attach's, if asked
        self.guard, self._detachers, self.ended, self.tries = Guard(), [], True, []  # tries: batches out of memory

    # -- train begin -----------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, processing_class=None, train_dataloader=None, **kw):
        self._retrying()
        self.started, self.report, self.ended = time.perf_counter(), None, False  # none where measuring is off
        self.trainer = self.guard.run(MEASURING, trainer_of, self) or self.trainer  # an instance each fold's Trainer holds
        self.guard.run(MEASURING, self._begin, args, state, control, model, processing_class, train_dataloader, kw)
        if not self.guard.is_on(MEASURING):
            self._detach()

    def _retrying(self) -> None:
        """A begin with no end since the last: auto_find_batch_size's next try at a smaller batch in the same train()
        call. The earlier try's taps come off; the report is the last try's, in its folder, naming the others."""
        if self.ended:
            self.tries = []
        else:
            self.tries += [self.cfg.batch.size] if self.report is not None else []
            self._detach()
            self.train_calls -= 1

    def _begin(self, args, state, control, model, processing_class, train_dataloader, kw) -> None:
        model = models.uncompiled(model)  # read as the module it compiles (the timing wraps the Trainer's calls)
        self.first_step = state.global_step  # a resumed run starts past its checkpoint's steps, which it did not run
        self.train_calls += 1  # a second train() on this Trainer is another run: its report beside the first's
        self.out_dir = own_folder(self.asked_dir or Path(args.output_dir) / "trainsweep", (id(self), self.train_calls))
        speedup = getattr(self.trainer, "trainsweep_speedup", None)
        dataset, collator = self._script_data(train_dataloader, speedup)
        with rng_kept(dataset, collator):  # a dataset may draw per row: reading ahead must not move its draws
            rows, why = Rows.head(dataset, collator) if dataset is not None else (None, "no train dataset")
            per_row = sequences_per_row(dataset, collator) if rows is None and collator is not None else 1
            untokenised = untokenised_of(dataset, collator) if rows is None and dataset is not None else None  # images
        tokenizer = tokenizer_of(processing_class, collator)
        trl = trl_trainer(self.trainer) if self.trainer is not None else None
        cfg = config_from_trainer(args, state, model, rows, collator, tokenizer, self.measure_settings, trl,
                                  untokenised, self.trainer)
        if speedup is not None and speedup.on("padding-free batches"):  # the script's own batches, for the checks
            OmegaConf.update(cfg, "batch", {"size": args.per_device_train_batch_size,
                                            "grad_accum": speedup.packing["grad_accum_before"]}, merge=True)
        res = resolved_of(args, model)
        self.cfg, self.res = cfg, res
        rep = document.Report(config=OmegaConf.to_container(cfg), resolved=env.describe(res), env=env.info(res.device),
                              params=models.parameter_counts(model), timing_s={})
        if rows:
            rep.data = {"lengths": length_stats(rows), "rows": len(dataset)}  # lengths of the first rows
            rep.flops = self._flops(model, rep.data["lengths"]["token_weighted_mean"])
        if speedup is not None:
            rep.speedup = speedup.as_dict()
        if self.tries:
            rep.retried = (f"auto_find_batch_size: batch {', '.join(map(str, self.tries))} ran out of memory; this report "
                           f"is batch {cfg.batch.size}'s")
        self.report = rep
        if self.checks:
            checks = self.guard.run(CHECKS, self._checks, model, tokenizer, dataset, collator, rows, why, speedup)
            if checks is None:  # the checks turned themselves off: the report says none of them ran
                checks = judging.not_run(("preflight",), self.guard.off[CHECKS])
            script_collator = getattr(collator, "data_collator", collator)  # transformers' column-removing wrapper
            named = getattr(script_collator, "__name__", None) or type(script_collator).__name__  # a function, or a class
            rep.diagnostics = in_script_words(checks, bool(rows) and rows.padded, named, own_objective(self.trainer))
            if speedup is not None and speedup.on("padding-free batches"):
                rep.diagnostics = [judging.judged_unpacked(c) for c in rep.diagnostics]
            rep.timing_s["diagnostics"] = time.perf_counter() - self.started
        if speedup is not None and speedup.on("padding-free batches"):  # what trains: one pack a micro-batch
            OmegaConf.update(cfg, "batch", {"size": 1, "tokens": speedup.packing["tokens"],
                                            "grad_accum": speedup.packing["grad_accum"]}, merge=True)
            cfg.padding.strategy = "packed"
            rep.config = OmegaConf.to_container(cfg)
        counter = meter.TokenCounter(cfg.task.name, per_row, label_key(args))
        if per_row > 1:  # the summary's samples and "per step" are the script's rows, each several sequences
            rep.data = {**(rep.get("data") or {}), "sequences_per_sample": per_row}
        self.meter = meter.Measure.from_config(counter, res.device, cfg)
        self._count_with(counter, model)
        self.meter.on_train_begin(args, state, control, **kw)
        self.train_begin = time.perf_counter()

    def _script_data(self, train_dataloader, speedup):
        """The script's own dataset and collator, as its Trainer hands them to the model (unused columns removed);
        under speedup's packing, the ones the script wrote rather than the packs."""
        if speedup is not None and speedup.on("padding-free batches") and self.trainer is not None:
            trainer = self.trainer
            dataset, collator = trainer.train_dataset, trainer.data_collator
            if hasattr(trainer, "_remove_unused_columns") and hasattr(dataset, "column_names"):
                dataset = trainer._remove_unused_columns(dataset, description="training")
            if hasattr(trainer, "_get_collator_with_removed_columns"):
                collator = trainer._get_collator_with_removed_columns(collator, description="training")
            return dataset, collator
        return getattr(train_dataloader, "dataset", None), getattr(train_dataloader, "collate_fn", None)

    def _checks(self, model, tokenizer, dataset, collator, rows: Rows | None, why: str | None, speedup) -> list[dict]:
        """src.run's cheap checks on the model, collator and rows the script trains with (speedup's levers off
        meanwhile: the checks judge the script), and the accumulated loss's scale; a check that can't run is
        listed as such, never the user's training's problem."""
        cfg, res = self.cfg, self.res
        levers = speedup.applied() if speedup is not None else []
        for lever in levers:
            lever.toggle(False)
        try:
            with rng_kept(*held_by(self.trainer)):
                out = []
                if self.trainer is not None and (rows or indexed(self.trainer.train_dataset)):  # images, audio too
                    out += preflight.each([("train.grad_accum_loss",
                                            lambda: [judging.grad_accum_loss(self.trainer, dataset, collator)])])
                if rows and collator is not None and cfg.task.name in TASKS:
                    return out + preflight.preflight(cfg, res, model, None, collator, rows, tokenizer,
                                                     config_of(model), expensive=False)
                missing = why or f"{cfg.task.name}: a task the data and model checks don't know"
                unjudged = ("train.grad_accum_loss",) if not out and cfg.batch.grad_accum > 1 else ()  # never silent
                return out + judging.not_run(("tokenizer", "data", "model") + unjudged, missing) + preflight.each(
                    [("train.schedule", lambda: [schedule_check(cfg)]),
                     ("precision", lambda: precision_checks(cfg, res, device_facts(res)))])
        finally:  # a check cut short must not leave its gradients for the first step to add to
            model.zero_grad(set_to_none=True)
            for lever in levers:
                lever.toggle(True)

    def _count_with(self, counter: meter.TokenCounter, model) -> None:
        """Count every training micro-batch where the Trainer fetches it; without a Trainer to tap (transformers
        without get_batch_samples), where the model receives it."""
        def count(batch, pack_stats):
            # a batch without input_ids (pixel_values, input_values) counts its samples; its tokens are unknown
            if self.meter is not None:
                self.guard.run(MEASURING, counter.add_batch, batch, pack_stats)

        taps = tap(self.trainer) if self.trainer is not None else None
        if taps is not None:
            taps.listeners.append(count)
            self._detachers.append(lambda: taps.listeners.remove(count))
            self.guard.run(FORWARDS, self._count_forwards, taps, model)
            return

        def pre_hook(module, args, kwargs):
            # training micro-batches only: evaluation runs in eval mode, generation without grad
            import torch

            if module.training and torch.is_grad_enabled():
                count(kwargs, None)

        handle = model.register_forward_pre_hook(pre_hook, with_kwargs=True)
        self._detachers.append(handle.remove)

    def _count_forwards(self, taps, model) -> None:
        """Forwards a micro-batch (src/measure/forwards.py): R-Drop's two, DPO's reference scoring the batch."""
        counter = ForwardCounter.of_trainer(compiled_top(model, getattr(self.trainer, "model_wrapped", None)),
                                            self.trainer, on_error=lambda exc: self.guard.turn_off(FORWARDS, exc))
        taps.listeners.append(counter.listen)
        self.forwards = counter

        def remove():
            counter.remove()
            taps.listeners.remove(counter.listen)
            self.forwards = None
        self._detachers.append(remove)

    def _stepping(self, on: bool) -> None:
        if self.forwards is not None:
            self.forwards.stepping = on

    def _detach(self) -> None:
        """Measuring is off: nothing of ours stays in the Trainer's path."""
        while self._detachers:
            self.guard.run("detaching", self._detachers.pop())
        self.meter = None

    def _flops(self, model, seq: float) -> Flops | None:
        if getattr(model, "config", None) is None:  # a model of the script's own: no layer count to read
            return None
        return Flops(**flops.flops_per_token(model, model.config, seq, self.cfg.trainer.gradient_checkpointing))

    # -- the Trainer's step hooks, handed to the meter -------------------------------------------------
    _meter_step_begin, _meter_step_end = _to_meter("on_step_begin"), _to_meter("on_step_end")
    on_pre_optimizer_step = _to_meter("on_pre_optimizer_step")
    on_optimizer_step = _to_meter("on_optimizer_step")

    def on_step_begin(self, args, state, control, **kw):
        self._stepping(True)
        self._meter_step_begin(args, state, control, **kw)

    def on_step_end(self, args, state, control, **kw):
        self._stepping(False)  # a callback's or an evaluation's forwards after it are no training step's
        self._meter_step_end(args, state, control, **kw)

    on_log = _to_meter("on_log")
    on_save = _to_meter("on_save")

    def on_evaluate(self, args, state, control, metrics=None, **kw):
        if self.meter is not None:  # during training: the meter keeps the evaluating step out of the timed ones
            _to_meter("on_evaluate")(self, args, state, control, metrics=metrics, **kw)
        elif self.report is not None and metrics and state.is_world_process_zero:
            best = best_loaded(args, state)
            self.guard.run(REPORT, self._add_evaluation, metrics, state.global_step,
                           best and f"{best}'s weights, loaded as the best at the end of training")

    def _add_evaluation(self, metrics: dict, step: int, weights: str | None = None) -> None:
        """After train(): the report gains the evaluation; `weights`: load_best_model_at_end's checkpoint, evaluated."""
        final = {k.removeprefix("eval_"): v for k, v in metrics.items() if k.startswith("eval_")}
        before = self.report.get("eval") or {}  # another set of the same evaluation (eval_dataset as a dict): merged
        same = before.get("after_train") and (before.get("step"), before.get("weights")) == (step, weights)
        self.report.eval = {"final": {**before["final"], **final} if same else final, "step": step, "after_train": True,
                            "history": before.get("history", []) + [{**metrics, "step": step}],
                            **({"weights": weights} if weights else {})}
        report_files.write(self.out_dir, self.report)

    # -- train end -------------------------------------------------------------------------------------
    def on_train_end(self, args, state, control, model=None, **kw):
        self.ended = True
        if self.report is None:  # it never began: the one line at train begin said why
            return
        if self.meter is not None:
            self.guard.run(MEASURING, self._end, args, state, control, model, kw)
        self._detach()
        self.guard.run(REPORT, self._write, state)

    def _end(self, args, state, control, model, kw) -> None:
        self.meter.on_train_end(args, state, control, **kw)
        rep = self.report
        rep.timing_s["train"] = time.perf_counter() - self.train_begin
        tokens = self.meter.results()["tokens"]
        per_sample = (rep.get("data") or {}).get("sequences_per_sample", 1)
        if rep.get("flops") is None and tokens and tokens["samples"] and tokens["real"]:
            # no rows read ahead (an IterableDataset, preference pairs): attention at the window's mean length
            rep.flops = self._flops(model, tokens["real"] / (tokens["samples"] * per_sample))
        if rep.get("flops") is not None:
            rep.flops.count_forwards(self.forwards, caller_of_model(self.trainer))
            rep.flops.trainable_at_end(rep.params["trainable_fraction"], models.parameter_counts(model)["trainable_fraction"])
        ran = SimpleNamespace(log_history=[e for e in state.log_history if e.get("step", 0) > self.first_step],
                              global_step=state.global_step)
        analysis.analyse(self.cfg, rep, self.meter, SimpleNamespace(model=model, state=ran,
                         own_objective=own_objective(self.trainer),
                         train_dataset=getattr(self.trainer, "train_dataset", None)), self.res.device)
        best = best_loaded(args, state)
        if best and rep.get("eval"):  # the last evaluation is step N's; the model train() returns is not step N's
            metric = f", {args.metric_for_best_model or 'loss'} {state.best_metric:.4g}" if state.best_metric is not None else ""
            rep.eval["then"] = f"train() ends with {best}'s weights{metric}"

    def _write(self, state) -> None:
        rep = self.report
        if self.guard.off:
            rep.turned_off = dict(self.guard.off)
            if MEASURING in self.guard.off:  # no figure from a meter that stopped partway is shown as a result
                rep.status = "error"
                rep.error = f"trainsweep's measuring turned itself off ({self.guard.off[MEASURING]}): no throughput " \
                            "figures; your training ran as without it"
        rep.timing_s["total"] = time.perf_counter() - self.started
        if state.is_world_process_zero:  # under torchrun every rank measures; rank 0 writes
            report_files.write(self.out_dir, rep)  # first: a path printed is a file written
            print(f"\ntrainsweep report: {self.out_dir / 'report.json'}\n{document.format_summary(rep)}", flush=True)


def attach(trainer, out_dir: str | Path | None = None, speedup: bool | dict = False, **settings) -> TrainsweepCallback:
    """Add the measuring callback to an existing Trainer (before trainer.train()); returns it. Settings are
    TrainsweepCallback's: out_dir, checks=False (no preflight), MeasureConfig's fields (warmup_steps=5, ...).
    speedup=True (or speedup(...)'s arguments as a dict) applies trainsweep.speedup first; the report says what it
    did. Neither raises into the script: a part that fails turns itself off with one line."""
    callback = TrainsweepCallback(out_dir, **settings)
    callback.trainer = trainer
    callback.guard.run("watching train()", outcome.watch, trainer, callback)  # raising after the report: it says so
    if speedup:
        from ..levers.apply import speedup as apply_levers

        callback.speedup = callback.guard.run("speedup", apply_levers, trainer,
                                              **(speedup if isinstance(speedup, dict) else {}))
    callback.guard.run(MEASURING, trainer.add_callback, callback)
    return callback
