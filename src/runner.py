"""One run, start to end: check the config, build the data and the model, train with the HF Trainer and
its meter, analyse, save, report. `python -m src.run` (src/run.py) calls `run` once it holds the run
directory; tests and benchmarks call it directly."""
from __future__ import annotations

import contextlib
import glob
import logging
import shutil
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .base import files, ranks
from .base.laps import Laps, imports_before
from .config.errors import ConfigError
from .config.schema import validate
from .config.training import uses_cuda_graphs

log = logging.getLogger("trainsweep")
# peft reads a property that transformers 5.2x deprecated; the warning is theirs and says nothing about the run
warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*deprecated")
# bitsandbytes' CPU backend, imported by peft in every LoRA run, looks for a hub kernel (kernels-community) on CPUs
# with AVX512-BF16 and warns on every import that it can't load it: nothing a run uses (QLoRA runs on CUDA)
logging.getLogger("bitsandbytes.backends.cpu").setLevel(logging.ERROR)
interrupted = False  # set by Ctrl-C (on_interrupt): whatever a stopped pool or worker raises, the run was interrupted


def on_interrupt(signum, frame) -> None:
    global interrupted
    interrupted = True
    signal.default_int_handler(signum, frame)


def run(cfg: DictConfig, out_dir: Path, callbacks: tuple = (), overrides: list[str] = (), group: str | None = None) -> dict:
    """Train and measure one config; returns what report.json holds."""
    with contextlib.ExitStack() as this_run_only:  # process-wide settings this run changes, given back however it ends
        return _run(cfg, out_dir, callbacks, overrides, group, this_run_only)


def _run(cfg: DictConfig, out_dir: Path, callbacks: tuple, overrides: list[str], group: str | None,
         this_run_only: contextlib.ExitStack) -> dict:
    from .report import document
    from .report import files as report_files

    t_start = time.perf_counter()
    writer = ranks.is_main()  # under torchrun every rank trains; rank 0 alone writes and logs
    out_dir.mkdir(parents=True, exist_ok=True)
    from .train import checkpoints

    made_under = resume_from = refused_resume = None
    try:  # stamped into each checkpoint: a resume continues only this config's, of the same data
        made_under = checkpoints.config_of(cfg, report_files.data_fingerprint(cfg))
        if cfg.resume and cfg.mode == "train":
            resume_from = checkpoints.last_checkpoint(out_dir, cfg, made_under.get(checkpoints.DATA))
    except ConfigError as exc:  # said after the config's own checks
        refused_resume = exc
    if writer and refused_resume is None:  # a refused resume keeps the config its checkpoints were made with
        files.atomic_write(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    rep = document.Report(overrides=list(overrides), config=OmegaConf.to_container(cfg, resolve=True),
                          config_hash=report_files.config_hash(cfg))
    logs = None
    try:
        if (fingerprint := report_files.data_fingerprint(cfg)) is not None:  # data=files: what the rows were
            rep.data_fingerprint = fingerprint
        # Before torch and before building anything: a bad value or a missing checkpoint answers in a second.
        check(cfg)
        if refused_resume is not None:
            raise refused_resume
        if not cfg.resume and any((out_dir / "checkpoints").glob("checkpoint-*")):
            print(f"{out_dir / 'checkpoints'} holds an earlier run's checkpoints: this run starts from step 0 "
                  "(resume=true continues from the newest)", file=sys.stderr)
        import torch  # noqa: F401  (heavy imports after the checks)

        from .checks import preflight
        from .data import prepare
        from .machine import ceiling, env
        from .measure import meter as measure
        from .measure import compiled
        from .model import build as models
        from .model import flops, memory_model, speed
        from .report import analysis, loggers
        from .report.sections import Flops
        from .train import budget, debug, divergence, metrics
        from .train import trainer as train

        t_start = time.perf_counter()  # the build is timed from here, as it always was: imports are not the run's
        this_run_only.enter_context(speed.inductor_options(cfg.trainer))  # every compile of the run, probes included
        laps, compile_before = Laps(t_start), compiled.compile_work()
        env.set_allocator(cfg.env.alloc_conf)  # before anything touches CUDA
        debug.crash_if_asked(cfg)
        res = env.setup(cfg)
        rep.resolved, rep.env = env.describe(res), env.info(res.device)
        conf = models.hf_config(cfg)
        models.check_cpu_size(cfg, res, conf)  # before the data and the model: a 4B model on a CPU answers in seconds
        auto_budget = budget.is_auto(cfg) and res.device == "cuda"  # a probe on the built model picks the budget
        if budget.is_auto(cfg):  # until then packs of the probe's budget; without a GPU, batch.size rows for good
            rep.resolved["budget"] = budget.provisional(cfg, res.device)
        laps.lap("setup")
        prep = prepare.prepare(cfg, conf, out_dir)
        laps.lap("data")
        conf.update(prep.for_model)  # the model pads and pools by the data's pad id, and names its labels
        rep.data = prep.info
        rep.resolved.update(train.from_the_data(cfg, prep, res.world_size, say=not auto_budget))  # num_labels, epochs
        model = models.build_model(cfg, res, conf)
        laps.lap("model")
        rep.params, rep.speed_paths = models.parameter_counts(model), model.trainsweep_paths
        if "fp8" in rep.speed_paths:
            log.warning("precision=fp8: %s", speed.FP8_NUMERICS)
        lengths = rep.data["lengths"]
        if auto_budget:  # the probe times the model as it will train: compiled where it will be
            if cfg.trainer.torch_compile and cfg.trainer.compile_scope == "regional":
                rep.compiled_layers = speed.compile_regions(model, cfg.trainer)
            prep, rep.resolved["budget"] = budget.choose_for_run(cfg, res, model, prep)
            rep.resolved.update(train.from_the_data(cfg, prep, res.world_size))  # epochs count the new packs
            laps.lap("budget_probe")
        rep.memory_predicted_gb = memory_model.before_training(cfg, res, conf, model, prep.collator, lengths)
        laps.lap("memory_model")
        rep.flops = Flops(**flops.flops_per_token(model, conf, lengths["token_weighted_mean"],
                                                         cfg.trainer.gradient_checkpointing, cfg.trainer.checkpoint_every),
                          bf16_equivalent=cfg.precision.fp8 != "none")
        if res.device == "cuda" and cfg.measure.ceiling:  # seconds, once per card and shape set: before the timed steps
            top = ceiling.cached(flops.matmul_shapes(model), flops.micro_batch_tokens(cfg, lengths))
            rep.flops.ceiling_tflops, rep.flops.ceiling_tokens_per_s = top["tflops"], top["tokens_per_s"]
            laps.lap("ceiling")
        expected_loss = analysis.expected_initial_loss(cfg.task.name, cfg.task.num_labels or model.config.num_labels,
                                                      getattr(model.config, "vocab_size", 2))
        watch = [divergence.StopWhenDiverged(expected_loss)]  # a nan or exploded loss ends training where it shows
        counter = measure.TokenCounter(cfg.task.name)
        meter = measure.Measure.from_config(counter, res.device, cfg, started=t_start, compile_before=compile_before)
        me = cfg.measure
        logs = loggers.Loggers(cfg, out_dir, list(overrides), group, meter if me.enabled else None, enabled=writer)
        if cfg.trainer.torch_compile and cfg.trainer.compile_scope == "regional" and not auto_budget:
            rep.compiled_layers = speed.compile_regions(model, cfg.trainer)
        if cfg.trainer.compile_layers_once:  # the run's model only: its copies compile by layer
            rep.speed_paths["layers_compiled_once"] = {"converted": speed.compile_layers_once(model)}
        trainer = train.trainer_class(cfg.task.name, packed=cfg.padding.strategy == "packed",
                                      cuda_graphs=uses_cuda_graphs(cfg.trainer))(
            model=model, args=train.training_args(cfg, res, out_dir), train_dataset=prep.for_trainer,
            eval_dataset=prep.eval,
            data_collator=debug.wrap_collator(prep.collator, cfg.debug),
            compute_metrics=metrics.for_task(cfg, prep.tokenizer, conf.pad_token_id),
            callbacks=([meter] if me.enabled else []) + logs.callbacks + debug.callbacks(cfg) + train.callbacks(cfg) + watch
            + [train.StampCheckpoints(made_under)]
            + list(callbacks))
        trainer.token_counter = counter if cfg.measure.enabled else None
        t_built = time.perf_counter()
        laps.lap("trainer")
        # from the command line, what its imports took before the build (not in total: the run's own time)
        rep.timing_s = imports_before(t_start) | {"build": t_built - t_start, "build_parts": laps.parts}
        if cfg.diagnostics.enabled or cfg.mode == "diagnose":
            rep.diagnostics = preflight.preflight(cfg, res, model, trainer, prep.collator, prep.train, prep.tokenizer, conf,
                                                 expensive=cfg.mode == "diagnose" or cfg.diagnostics.expensive)
            rep.timing_s["diagnostics"] = time.perf_counter() - t_built
        failed = [c["check"] for c in rep.get("diagnostics") or [] if c["status"] == "fail"]
        if failed and (cfg.mode == "diagnose" or cfg.diagnostics.stop_on_fail):
            rep.status, rep.error = "failed_checks", "failed: " + ", ".join(failed)
        elif cfg.mode == "train":
            rep.resumed_from = resume_from
            t_built = time.perf_counter()
            trainer.train(resume_from_checkpoint=rep.resumed_from)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        rep.status, rep.error = "config_error", str(exc)
    except Exception as exc:  # recorded, so a sweep keeps going; the traceback goes to the job's log
        if _is_oom(exc):
            log.error("out of memory: %s", str(exc).splitlines()[0])
            rep.status, rep.error = "oom", str(exc).splitlines()[0]
        elif interrupted:  # Ctrl-C: a pool or worker it stopped raised something else first
            raise KeyboardInterrupt from exc
        else:
            log.error("run failed:\n%s", traceback.format_exc())
            rep.status, rep.error = "error", f"{type(exc).__name__}: {exc}"
            if "weights_only" in str(exc):  # torch's advice names a load option trainsweep does not offer
                rep.error = (f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]} (a checkpoint file holds pickled "
                             "objects torch won't load safely: remove that checkpoint, or train anew)")
    if rep.status == "ok" and cfg.mode == "train":
        rep.timing_s["train"] = time.perf_counter() - t_built
        analysis.analyse(cfg, rep, meter, trainer, res.device)
        if diverged(cfg, rep, trainer.state.log_history, expected_loss):
            # nan weights are no result, and an earlier run's final/ (another config's: this one would have been
            # skipped as finished) beside this run's config and report would pass for this config's model
            shutil.rmtree(out_dir / "final", ignore_errors=True)
        elif cfg.trainer.save_final:
            keep_result(cfg, rep, trainer, prep.tokenizer, out_dir)
    rep.timing_s = rep.get("timing_s") or {}
    rep.timing_s["total"] = time.perf_counter() - t_start
    if logs is not None:
        logs.finish(rep, trainer.state.log_history if rep.status == "ok" else [])
    if writer:
        # The summary first: if the disk is full, the numbers are still on screen (and in the job's log). A config
        # error has said its one line and has no numbers.
        try:
            if rep.status != "config_error":
                print(f"\ntrainsweep report: {out_dir / 'report.json'}\n{document.format_summary(rep)}", flush=True)
        except OSError:  # stdout gone (a closed pipe or terminal): the report below still lands
            pass
        try:
            report_files.write(out_dir, rep)
        except OSError as exc:  # atomic: any earlier report.json is left whole, and no partial file
            print(f"report not saved: {out_dir / 'report.json'}: {exc}", file=sys.stderr)
            rep.status, rep.error = "error", f"report.json not written: {exc}"
    return rep.to_dict()


def check(cfg: DictConfig) -> None:
    """The config's own checks and a writable cache: what src/run.py asks before it takes the run directory (a
    config error then leaves no run directory), and run() again for its direct callers."""
    validate(cfg, _cuda_available())
    if (problem := files.cache_problem()) is not None:  # every run caches its rows or its tokenizer there
        raise ConfigError("TRAINSWEEP_CACHE", files.CACHE, f"can't be written ({problem}): point it at a "
                                                           "writable directory")


HYDRA_OWN = {".hydra", "run.log", "run.lock"}  # what Hydra (and the lock) put into a run directory before the run


def discard(out_dir: Path) -> None:
    """Remove a run directory that only a refused run wrote into: no run directory for a config error."""
    shutil.rmtree(out_dir, ignore_errors=True)


def refused(exc: Exception, cfg: DictConfig, out_dir: Path, overrides: list[str], in_sweep: bool) -> None:
    """A config that can't even be resolved (an interpolation that fails) or a run dir that must not be used:
    one line and exit 2; in a sweep the job's report records it and the sweep goes on."""
    if isinstance(exc, OmegaConfBaseException):  # its message spans lines: the key, the value, the reason
        node = getattr(exc, "full_key", None) or "config"
        exc = ConfigError(node, unresolved(cfg, node), "cannot be resolved: " + str(exc).strip().splitlines()[0])
    print(f"config error: {exc}", file=sys.stderr)
    if not in_sweep:
        if out_dir.is_dir() and {p.name for p in out_dir.iterdir()} <= HYDRA_OWN:
            discard(out_dir)  # Hydra's own files only: no run dir left behind for nothing
        sys.exit(2)
    from .report import document
    from .report import files as report_files

    report_files.write(out_dir, document.Report(status="config_error", error=str(exc), overrides=overrides,
                                                config=OmegaConf.to_container(cfg, resolve=False)))
    return None


def unresolved(cfg: DictConfig, key: str) -> str:
    """A node's value as written (`${oc.env:NOPE}`), without resolving it."""
    try:
        node = cfg
        for part in key.split("."):
            node = node._get_node(part)
        return str(node._value())
    except Exception:  # OmegaConf's node API is private: a missing figure beats a second error
        return "?"


def _cuda_available() -> bool:
    """torch.cuda.is_available(), without importing torch (seconds) where no GPU device exists: the config's
    checks then answer before any heavy import."""
    if sys.platform == "linux" and not any(glob.glob(p) for p in ("/dev/nvidia[0-9]*", "/dev/dxg", "/dev/kfd")):
        return False
    import torch

    return torch.cuda.is_available()


def _is_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")  # imported by then, unless the run failed before its imports
    return torch is not None and isinstance(exc, torch.OutOfMemoryError)


def diverged(cfg: DictConfig, rep, log_history: list[dict], expected_loss: float) -> bool:
    """A loss that turned non-finite or exploded: the run is `diverged` (never ok, never ranked, run again by a
    rerun), said in one line with what to change."""
    from .train import divergence

    why = divergence.why(log_history, expected_loss)
    if why is None:
        return False
    tr = cfg.trainer
    rep.status = "diverged"
    rep.error = (f"{why}: training stopped there; lower trainer.lr (now {tr.lr:g})"
                 + (" or clip gradients (trainer.max_grad_norm=1.0; 0 clips nothing)" if not tr.max_grad_norm else ""))
    print(f"diverged: {rep.error}", file=sys.stderr, flush=True)
    return True


def keep_result(cfg: DictConfig, rep, trainer, tokenizer, out_dir: Path) -> None:
    """Save the trained adapter or model and the tokenizer to out_dir/final, after trainer.train has returned:
    outside the timed window and the train time, timed on its own. A save that fails (a full disk) keeps the
    measured report and marks the run an error, so a sweep runs it again."""
    from .report import sections
    from .train import trainer as train

    t_save = time.perf_counter()
    try:
        saved = train.save_final(trainer, tokenizer, out_dir / "final", "model" if cfg.peft.method == "none" else "adapter",
                                 cfg)
        if saved:
            rep.saved = sections.Saved(**saved)
    except Exception as exc:
        log.error("the trained model was not saved:\n%s", traceback.format_exc())
        rep.status, rep.error = "error", f"final model not saved to {out_dir / 'final'}: {type(exc).__name__}: {exc}"
    rep.timing_s["save"] = time.perf_counter() - t_save


