"""End to end: every cheap option trains a few steps in-process; each task runs from the command line
and learns; a 4-point sweep runs; a local model directory trains with its own weights and tokenizer."""
import math
import time
from pathlib import Path

import pytest
import torch

from src.machine import env
from src.model import build as models
from src.config.errors import ConfigError
from src.run import run
from tests.conftest import QUICK, cli, compose, read_report
from tests.test_config import CPU_REFUSES, GPU_ONLY_PACKAGE, NEEDS, OPTIONS

BIG = {"qwen3", "llama3.2-3b", "kobart", "solar-10.7b", "polyglot-ko-12.8b", "kullm-v2", "auto"}
RUNNABLE = [(g, o) for g, o in OPTIONS
            if not (g == "model" and o in BIG) and (g, o) not in CPU_REFUSES and (g, o) not in GPU_ONLY_PACKAGE]


@pytest.mark.parametrize("group,option", RUNNABLE, ids=[f"{g}={o}" for g, o in RUNNABLE])
def test_option_trains(group, option, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    # 8,192-token packs of the tiny model take ~30 s on 2 CPU cores: the preset composes and trains at 1,024
    small = ["batch.tokens=1024"] if option == "packed_8k" else []
    if group == "batch" and int(option) > 64:  # a step of more rows than QUICK's 64 is refused (test_warts.py)
        small.append(f"data.size={option}")
    cfg = compose(*QUICK, f"{group}={option}", *NEEDS.get((group, option), []), *small)
    rep = run(cfg, tmp_path)
    assert rep["status"] == "ok", rep.get("error")
    assert rep["throughput"]["real_tokens_per_s"] > 0
    assert rep["step_time_s"]["n"] == 3
    assert math.isfinite(rep["loss"]["final"])
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.md").exists()
    if option == "csv":
        assert (tmp_path / "metrics.csv").read_text().startswith("loss,")


def _losses(rep):
    return [loss for _, loss in rep["loss"]["curve"]]


@pytest.mark.parametrize("args", [[], pytest.param(["task=causal_lm"], marks=pytest.mark.slow),
                                  pytest.param(["task=seq2seq", "model=tiny-bart"], marks=pytest.mark.slow)],
                         ids=["classification", "causal_lm", "seq2seq"])  # every task also trains in test_option_trains
def test_each_task_learns_from_the_command_line(args, tmp_path):
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok"
    for key in ("samples_per_s", "tokens_per_s", "real_tokens_per_s", "loss_tokens_per_s"):
        assert rep["throughput"][key] > 0
    assert 0 <= rep["throughput"]["pad_fraction"] < 0.5
    losses = _losses(rep)
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.1, losses  # learnable synthetic data: the loss must fall
    # a uniform guess at step 1: the loss starts near ln(classes) or ln(vocab)
    assert abs(losses[0] - rep["loss"]["expected_initial"]) < 0.5
    assert (tmp_path / "config.yaml").exists() and "trainsweep report" in proc.stdout
    for section in ("status", "config", "env", "throughput", "step_time_s", "breakdown_s", "flops",
                    "memory_gb", "verdict", "loss"):
        assert section in rep


def test_local_model_directory_trains_with_its_weights_and_tokenizer(local_model_dir, tmp_path):
    args = ["model=auto", f"model.name_or_path={local_model_dir}", "data=files",
            "data.train_file=tests/data/accounts.csv", "task.num_labels=5", *QUICK]
    cfg = compose(*args)
    res = env.resolve(cfg)
    conf = models.hf_config(cfg)
    model = models.build_model(cfg, res, conf)
    # the weights come from the directory, not from a random init
    from safetensors.torch import load_file
    weights = load_file(str(Path(local_model_dir) / "model.safetensors"))
    embed = model.get_input_embeddings().weight
    assert torch.equal(embed.detach().cpu(), weights["model.embed_tokens.weight"])
    proc = cli(*args, f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok" and rep["data"]["lengths"]["rows"] == 40
    # what it keeps: the adapter and, beside it, the tokenizer the data was tokenised with
    from transformers import AutoTokenizer
    assert rep["saved"]["kind"] == "adapter" and rep["saved"]["tokenizer"] and "saved        adapter and tokenizer in" in proc.stdout
    kept, given = AutoTokenizer.from_pretrained(rep["saved"]["path"]), AutoTokenizer.from_pretrained(local_model_dir)
    assert kept.get_vocab() == given.get_vocab() and kept.pad_token == given.pad_token


def test_a_short_run_trains_and_says_it_is_too_short_to_measure(tmp_path):
    rep = run(compose(*QUICK, "trainer.max_steps=3", "measure.warmup_steps=5"), tmp_path)
    assert rep["status"] == "ok" and rep["loss"]["final"] is not None
    assert rep["flags"]["reasons"] == ["too few steps to measure: trainer.max_steps=3 leaves no timed step after 5 warm-up"]
    assert "throughput" not in rep and "verdict" not in rep  # nothing measured, nothing guessed


def _hub_cache(home: Path, repo: str, model_dir: Path) -> None:
    """`repo` in a Hugging Face cache under `home`, as `hf download` leaves it: a snapshot and refs/main."""
    import shutil

    cached = home / "hub" / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, cached / "snapshots" / "abc123")
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text("abc123")


def test_a_hub_id_loads_from_the_local_cache_offline_and_a_missing_one_is_one_line(tmp_path, local_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _hub_cache(tmp_path / "hf", "someorg/tiny-qwen3", local_model_dir)
    args = ["model=auto", "model.pretrained=true", *QUICK, "task=causal_lm"]
    ok = cli(*args, "model.name_or_path=someorg/tiny-qwen3", f"hydra.run.dir={tmp_path / 'ok'}")
    assert ok.returncode == 0 and read_report(tmp_path / "ok")["status"] == "ok", ok.stderr[-2000:]
    missing = cli(*args, "model.name_or_path=someorg/not-cached", f"hydra.run.dir={tmp_path / 'missing'}")
    first = missing.stderr.strip().splitlines()[0]
    assert missing.returncode == 2 and first.startswith(
        "config error: model.name_or_path=someorg/not-cached: not a local directory, and not in the Hugging Face cache")
    assert "hf download someorg/not-cached" in first


def test_an_uncached_hub_id_never_reaches_the_network(tmp_path, monkeypatch):
    """Without HF_HUB_OFFLINE a newcomer's uncached id went to the hub (28 s of retries where there was no route):
    nothing downloads at run time. A stand-in hub on localhost counts the requests it gets."""
    import http.server
    import threading

    asked = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        missing = cli("model=auto", "model.pretrained=true", *QUICK, "task=causal_lm",
                      "model.name_or_path=someorg/not-cached", f"hydra.run.dir={tmp_path / 'missing'}")
    finally:
        server.shutdown()
    assert missing.returncode == 2 and "not in the Hugging Face cache" in missing.stderr
    assert asked == [], asked


class _KeepModel:
    """A Trainer callback that hands the trained model to the test (the run returns only its report)."""

    def __init__(self):
        from transformers import TrainerCallback

        self.model = None
        outer = self

        class Keep(TrainerCallback):
            def on_train_end(self, args, state, control, model=None, **kw):
                outer.model = model

        self.callback = Keep()


def _logits(model, conf):
    ids = torch.randint(3, conf.vocab_size, (4, 24), generator=torch.Generator().manual_seed(1))
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def _rebuilt_base(*overrides):
    """The random-init base again, from its config and seed: what a user of a saved adapter starts from."""
    cfg = compose(*QUICK, *overrides, "peft=none")
    return models.build_model(cfg, env.resolve(cfg), models.hf_config(cfg)), models.hf_config(cfg)


def test_a_lora_run_keeps_its_adapter_which_loads_onto_the_base_with_the_same_logits(tmp_path, monkeypatch, capsys):
    from peft import PeftModel
    from transformers import Trainer

    save = Trainer.save_model

    def slow_save(self, *args, **kwargs):  # a save that takes a while: it must not count as training time
        time.sleep(1.0)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "save_model", slow_save)
    keep = _KeepModel()
    rep = run(compose(*QUICK), tmp_path, callbacks=(keep.callback,))
    final = tmp_path / "final"
    size = sum(p.stat().st_size for p in final.rglob("*") if p.is_file()) / 2**20
    assert rep["status"] == "ok" and rep["saved"] == {"path": str(final), "kind": "adapter", "tokenizer": False,
                                                      "size_mb": pytest.approx(size), "base": str(final / "base")}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in final.iterdir()}
    # the adapter beside its base: random weights exist nowhere else (tests/test_load.py loads them back)
    assert not any(final.glob("model*.safetensors")) and (final / "base" / "model.safetensors").exists()
    assert rep["timing_s"]["save"] >= 1.0 and rep["timing_s"]["train"] < rep["timing_s"]["total"] - 1.0
    assert rep["step_time_s"]["mean"] < 1.0  # the timed window closed before the save
    assert f"saved        adapter and its random base in {final}" in capsys.readouterr().out
    base, conf = _rebuilt_base()
    untrained = _logits(base, conf)
    loaded = PeftModel.from_pretrained(base, final)
    assert torch.allclose(_logits(loaded, conf), _logits(keep.model, conf), atol=1e-6)
    assert not torch.allclose(untrained, _logits(keep.model, conf), atol=1e-3)  # the adapter carries what it learnt


def test_a_full_fine_tune_keeps_the_whole_model_and_save_final_false_keeps_nothing(tmp_path):
    from transformers import AutoModelForSequenceClassification

    keep = _KeepModel()
    rep = run(compose(*QUICK, "peft=none"), tmp_path / "full", callbacks=(keep.callback,))
    final = tmp_path / "full" / "final"
    assert rep["status"] == "ok" and rep["saved"]["kind"] == "model" and (final / "config.json").exists()
    loaded = AutoModelForSequenceClassification.from_pretrained(final)
    conf = models.hf_config(compose(*QUICK))
    assert torch.allclose(_logits(loaded, conf), _logits(keep.model, conf), atol=1e-6)

    rep = run(compose(*QUICK, "trainer.save_final=false"), tmp_path / "off")
    assert rep["status"] == "ok" and "saved" not in rep and "save" not in rep["timing_s"]
    assert not (tmp_path / "off" / "final").exists()


def test_a_save_that_fails_keeps_the_measured_report_and_marks_the_run_an_error(tmp_path, monkeypatch):
    from transformers import Trainer

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Trainer, "save_model", full_disk)
    rep = run(compose(*QUICK), tmp_path)
    assert rep["status"] == "error" and rep["error"].startswith(f"final model not saved to {tmp_path / 'final'}: OSError")
    assert read_report(tmp_path)["throughput"]["real_tokens_per_s"] > 0 and "saved" not in rep


def test_a_model_over_a_billion_parameters_on_the_cpu_is_refused_before_it_is_built(tmp_path):
    proc = cli("model=qwen3", "logger=none", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "config error: model=qwen3-4b: 4.0B parameters on the CPU would take ~15 GB of RAM (float32 weights, before "
        "activations) and minutes a step: shrink it (model.arch.num_hidden_layers=2 batch=2 debug=fast: a measured "
        "report in minutes), use a GPU, or model.allow_large_on_cpu=true to run it anyway")
    assert not tmp_path.exists()  # a config error leaves no run directory (test_warts.py)


def test_the_cpu_size_guard_passes_a_shrunk_model_the_override_and_a_gpu():
    def check(*overrides, device="cpu"):
        cfg = compose("model=qwen3", *overrides)
        res = env.resolve(cfg)
        res.device = device
        models.check_cpu_size(cfg, res, models.hf_config(cfg))

    with pytest.raises(ConfigError, match="~60 GB of RAM .float32 weights, gradients and AdamW state"):
        check("peft=none")
    shrunk = compose("model=qwen3", "model.arch.num_hidden_layers=2")
    assert 0.5e9 < models.parameter_count(shrunk, models.hf_config(shrunk)) < models.CPU_MAX_PARAMS  # Qwen3-4B's width
    check("model.arch.num_hidden_layers=2")
    check("model.allow_large_on_cpu=true")
    check(device="cuda")


def test_every_rank_waits_at_the_final_save_until_rank_0_has_the_weights(tmp_path, monkeypatch):
    """Under FSDP rank 0 gathers the full weights while the other ranks only queue their side of each gather: on
    two H200s rank 0 waited in that gather while rank 1 had exited. After trainer.save_model every rank must wait
    at a barrier before it returns."""
    from accelerate import Accelerator
    from transformers import Trainer

    calls = []
    save = Trainer.save_model
    monkeypatch.setattr(Trainer, "save_model", lambda self, path: (calls.append("save_model"), save(self, path)))
    monkeypatch.setattr(Accelerator, "wait_for_everyone", lambda self: calls.append("wait_for_everyone"))
    rep = run(compose(*QUICK), tmp_path)
    assert rep["status"] == "ok" and rep["saved"]["kind"] == "adapter"
    assert calls[calls.index("save_model"):] == ["save_model", "wait_for_everyone"]


def test_an_eval_set_is_evaluated_at_the_end_without_eval_steps_and_epochs_set_the_steps(tmp_path):
    """What users of HF's scripts expect: --validation_file means an evaluation; epochs are honoured, never
    overridden silently by max_steps."""
    rep = run(compose(*QUICK, "data.eval_size=16", "trainer.save_final=false"), tmp_path / "eval")
    assert rep["status"] == "ok" and rep["eval"]["step"] == 4 and "accuracy" in rep["eval"]["final"]
    rep = run(compose(*QUICK, "trainer.epochs=0.5", "batch=16", "trainer.save_final=false"), tmp_path / "epochs")
    assert rep["status"] == "ok" and rep["resolved"]["max_steps"] == 2  # 64 rows / 16 a step, half a pass
    assert rep["step_time_s"]["n"] + rep["step_time_s"]["warmup_steps"] <= 2
    with pytest.raises(ConfigError, match="trainer.args.num_train_epochs=3: trainsweep sets it: use trainer.epochs"):
        from src.train.trainer import check_args

        check_args(compose("trainer.args.num_train_epochs=3"))


@pytest.mark.parametrize("rows, size, accum, world, epochs, steps", [
    (20, 8, 1, 1, 3, 9),    # a newcomer's chat run: 3 micro-batches a pass (8, 8, 4); 8 steps left 4 rows unseen
    (40, 8, 1, 1, 3, 15),   # the README's 40 rows divide evenly: as before
    (20, 4, 2, 1, 1, 3),    # 5 micro-batches, the pass's last step holds one
    (20, 8, 1, 2, 2, 4),    # two ranks: 10 rows each, 2 micro-batches each a pass
    (20, 8, 1, 1, 0.5, 2),  # half a pass: the Trainer's ceil(epochs x steps a pass)
])
def test_epochs_count_steps_as_the_trainer_counts_a_pass(rows, size, accum, world, epochs, steps):
    from types import SimpleNamespace

    from src.train.trainer import from_the_data

    cfg = compose(f"batch.size={size}", f"batch.grad_accum={accum}", f"trainer.epochs={epochs}")
    prep = SimpleNamespace(for_trainer=list(range(rows)), info={"num_labels": 2})
    assert from_the_data(cfg, prep, world, say=False)["max_steps"] == steps


@pytest.mark.parametrize("on", [True, False])
def test_adapters_are_created_where_the_base_sits_only_when_asked(on, monkeypatch):
    """peft.adapters_on_device: peft builds each adapter on the CPU and copies it to its base layer; asked, they are
    created on the base's device (here "meta", standing in for a GPU) and the report's speed paths say so, since
    LoRA's A then comes from that device's random stream. Off, or with the base on the CPU, peft's own way."""
    cfg = compose(*QUICK, f"peft.adapters_on_device={str(on).lower()}")
    base, _ = _rebuilt_base()
    created_on = []
    real_init = torch.nn.Linear.reset_parameters
    monkeypatch.setattr(torch.nn.Linear, "reset_parameters",
                        lambda self: created_on.append(self.weight.device.type) or real_init(self))
    model = models.add_adapters(cfg, env.resolve(cfg), base.to("meta"))
    lora_a = [m.lora_A["default"].weight for m in model.modules() if hasattr(m, "lora_A")]
    assert lora_a and all(w.device.type == "meta" for w in lora_a)
    assert set(created_on) == ({"meta"} if on else {"cpu"})
    assert getattr(model, "trainsweep_adapters_on", None) == ("meta" if on else None)
    cpu = models.add_adapters(cfg, env.resolve(cfg), _rebuilt_base()[0])  # a base on the CPU: nothing to save
    assert getattr(cpu, "trainsweep_adapters_on", None) is None
