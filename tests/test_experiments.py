"""Every saved experiment composes into valid jobs, and the ones that can run on a CPU run there in a tiny
variant (the smoke test behind each experiments/<name>/README.md command)."""
import subprocess

import pytest
from hydra import compose as hydra_compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from src.config.errors import ConfigError
from src.config.schema import validate
from tests.conftest import CONF, QUICK, ROOT, cli, compose, read_report

SWEPT = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")
               if "sweeper" in p.read_text())


def jobs(experiment: str, group: str = "experiment") -> list[list[str]]:
    """The override list of every job `python -m src.run -m experiment=NAME` (or sweep=NAME) launches, split by
    Hydra's own sweeper as a multirun splits it (the command line's quoting of numeric group choices does not
    reach a YAML's sweeper params), and each composed here as Hydra composes a job."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = hydra_compose("config", overrides=[f"{group}={experiment}"], return_hydra_config=True)
        params = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in cfg.hydra.sweeper.params.items()])
        combos = [[f"{group}={experiment}", *job] for batch in BasicSweeper.split_arguments(params, None)
                  for job in batch]
        for overrides in combos:
            hydra_compose("config", overrides=overrides)  # raises where a real multirun's job would not start
    return combos


def test_the_field_report_experiments_exist():
    assert {"twelve_x_slowdown", "batch_vs_accum_saturation", "kobart_batch", "loop_overheads"} <= set(SWEPT)


@pytest.mark.parametrize("experiment", SWEPT)
def test_each_experiment_has_its_folder_of_the_same_name_with_its_gpu_run(experiment):
    folder = ROOT / "experiments" / experiment
    assert (folder / "README.md").exists() and (folder / "gpu.sh").exists(), folder


def test_every_experiment_folder_is_in_the_index():
    index = (ROOT / "experiments" / "README.md").read_text()
    folders = sorted(p.parent.name for p in (ROOT / "experiments").glob("*/README.md"))
    assert [f for f in folders if f"[{f}]({f}/)" not in index] == []


def test_every_gpu_script_parses_and_runs_on_the_shared_helper():
    scripts = sorted((ROOT / "experiments").glob("*/gpu.sh")) + [ROOT / "scripts" / "gpu_tests.sh"]
    for script in scripts:
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, script
        assert "source scripts/gpu_setup.sh" in script.read_text(), script


@pytest.mark.parametrize("experiment", SWEPT)
def test_every_job_of_an_experiment_composes_and_validates_for_a_gpu(experiment):
    combos = jobs(experiment)
    assert len(combos) >= 2
    for overrides in combos:
        cfg = compose(*overrides)
        try:
            validate(cfg, cuda_available=True)
        except ConfigError as exc:  # this machine lacks the GPU-only package, nothing else may be wrong
            assert "bitsandbytes" in str(exc), (overrides, exc)


def _leaves(cfg, prefix=""):
    from omegaconf import OmegaConf
    flat = {}
    for key, value in OmegaConf.to_container(cfg, resolve=True).items():
        if isinstance(value, dict):
            flat.update(_leaves(OmegaConf.create(value), f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


# What each rung adds to the one before: one of the report's fixes, then one trainsweep lever at a time
LADDER = [
    ("twelve_x_0_before", None),
    ("twelve_x_1_padding", {"padding.strategy"}),
    ("twelve_x_2_dataloader", {"dataloader.num_workers", "dataloader.pin_memory", "dataloader.prefetch_factor",
                               "dataloader.persistent_workers", "dataloader.non_blocking"}),
    ("twelve_x_3_env", {"env.tf32", "env.cudnn_benchmark", "env.sdp_backends", "env.alloc_conf",
                        "attention.implementation"}),
    ("twelve_x_4_bf16", {"precision.weights_dtype", "precision.amp", "precision.tf32"}),
    ("twelve_x_5_no_checkpointing", {"trainer.gradient_checkpointing"}),
    ("twelve_x_6_bs16", {"batch.size", "batch.grad_accum"}),
    ("twelve_x_7_compile", {"trainer.torch_compile"}),
    ("twelve_x_8_padding_free", {"padding.strategy", "batch.tokens"}),
]


def test_the_ladder_changes_one_factor_per_rung():
    combos = jobs("twelve_x_slowdown")
    assert [job[-1] for job in combos] == [f"+rung={name}" for name, _ in LADDER]
    rungs = [_leaves(compose(*job)) for job in combos]
    for (name, added), before, after in zip(LADDER[1:], rungs, rungs[1:]):
        changed = {k for k in after if after[k] != before.get(k) and not k.endswith(".name")}
        assert changed == added, (name, changed ^ added)
    first = rungs[0]
    assert (first["precision.weights_dtype"], first["attention.implementation"], first["trainer.gradient_checkpointing"],
            first["padding.strategy"], first["batch.size"], first["batch.grad_accum"]) == (
        "float32", "eager", True, "longest", 8, 2)
    assert all(r["task.num_labels"] == 280 and r["data.max_length"] == 320 for r in rungs)


# What each lever of sweep=levers changes in the reference job (+lever=packed_8k), and nothing else
LEVERS = {
    "fixed_320": {"padding.strategy", "batch.size", "batch.tokens"},
    "fixed_320_cudnn": {"padding.strategy", "batch.size", "batch.tokens", "attention.implementation", "attention.kernel"},
    "eager": {"trainer.torch_compile"},
    "blocking_copies": {"dataloader.non_blocking"},
    "fused": {"peft.fused"},
    "fp8": {"precision.name", "precision.fp8", "precision.weights_dtype", "precision.amp", "precision.tf32"},
    "fp8_fused": {"precision.name", "precision.fp8", "precision.weights_dtype", "precision.amp", "precision.tf32", "peft.fused"},
    "auto_budget": {"batch.tokens"},
}


def test_each_lever_of_the_levers_sweep_changes_only_its_own_keys_in_the_reference():
    combos = jobs("levers", group="sweep")
    assert [job[-1] for job in combos] == ["+lever=packed_8k", *(f"+lever={name}" for name in LEVERS)]
    leaves = {job[-1].split("=")[1]: _leaves(compose(*job)) for job in combos}
    reference = leaves.pop("packed_8k")
    assert reference["padding.strategy"] == "packed" and reference["batch.tokens"] == 8192
    assert reference["trainer.torch_compile"] is True and reference["dataloader.non_blocking"] is True
    for name, changed in LEVERS.items():
        differs = {k for k in reference if leaves[name].get(k) != reference[k]}
        assert differs <= changed and differs & changed, (name, differs)
    assert compose("sweep=levers").baseline == "+lever=packed_8k"


@pytest.mark.parametrize("experiment, narrow", [
    # the slowest rung: basic dataloader, no env tuning (~29 s on CI's two cores: make test-all)
    pytest.param("twelve_x_slowdown", "+rung=twelve_x_0_before", marks=pytest.mark.slow),
    ("loop_overheads", "debug=all_bad"),
])
def test_experiment_runs_on_the_cpu_in_a_tiny_variant(tmp_path, experiment, narrow):
    # one job of each sweep, kept small for CI; every job composes and validates in the tests above
    proc = cli("-m", f"experiment={experiment}", *QUICK, narrow, "sweep.repeats=1", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [rep] = [read_report(p.parent) for p in tmp_path.glob("*/report.json")]
    assert rep["status"] == "ok" and (tmp_path / "summary.md").exists()


def test_throughput_studies_keep_no_model_and_a_plain_run_does():
    """A sweep job writes its own final/: the saved sweeps and the sweeping experiments measure speed, and
    a full fine-tune's final/ would be GBs a job."""
    presets = [f"sweep={p.stem}" for p in sorted((CONF / "sweep").glob("*.yaml"))] + [f"experiment={e}" for e in SWEPT]
    assert [p for p in presets if compose(p).trainer.save_final] == []
    assert compose().trainer.save_final is True


# -- the READMEs' tables come from the committed result files (experiments/tables.py) ----------------------
def test_every_generated_table_matches_its_committed_result_files():
    from experiments import tables

    assert tables.stale() == [], "run: python experiments/tables.py --write"


def test_an_edited_number_in_a_readme_table_is_caught(tmp_path):
    from experiments import tables

    readme, build = tables.TABLES["speed/call4"]
    copy = tmp_path / "README.md"
    copy.write_text(readme.read_text().replace("**32,091**", "**33,091**", 1))
    assert tables.stale({"speed/call4": (copy, build)}) == ["speed/call4"]
    tables.write({"speed/call4": (copy, build)})
    assert tables.stale({"speed/call4": (copy, build)}) == [] and copy.read_text() == readme.read_text()


def test_a_ratio_across_two_calls_is_refused_unless_the_row_says_so():
    from experiments.figures import CrossCall, Fig, ratio
    from experiments.speed.tables import S

    call1, call2 = Fig(S + "h100_table_call1.jsonl", "packed8k_compile"), Fig(S + "h100_table_call2.jsonl", "packed8k_compile_fp32_adapters")
    with pytest.raises(CrossCall, match="crosses calls"):
        ratio(call1, call2)
    assert ratio(call1, call2, across_calls=True).endswith("(across calls)")
    anchor = Fig(S + "h100_table_call1_anchors.jsonl", "bf16_sdpa_b32_group")  # the anchors file is the same call
    assert ratio(call1, anchor) == "2.73"  # an anchor has no interval, so the ratio states none


def test_a_rows_own_call_id_decides_its_call_over_its_file_name(tmp_path, monkeypatch):
    """Two rows in one file from two device calls (their CALL_ID, written by scripts/collect.py): refused."""
    import json

    from experiments import figures as tables

    rows = [{"label": "a", "call": "callA", "throughput": {"real_tokens_per_s": 100.0}},
            {"label": "b", "call": "callB", "throughput": {"real_tokens_per_s": 90.0}},
            {"label": "c", "call": "callA", "throughput": {"real_tokens_per_s": 80.0}}]
    (tmp_path / "mixed.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    monkeypatch.setattr(tables, "HERE", tmp_path)
    tables._records.cache_clear()
    try:
        a, b, c = (tables.Fig("mixed.jsonl", x) for x in "abc")
        with pytest.raises(tables.CrossCall, match=r"a \(callA\) / b \(callB\)"):
            tables.ratio(a, b)
        assert tables.ratio(a, c) == "1.25"
    finally:
        tables._records.cache_clear()


def test_collect_writes_the_call_id_into_each_row(tmp_path):
    import json
    import os
    import subprocess
    import sys

    report = tmp_path / "report.json"
    report.write_text(json.dumps({"status": "ok"}))
    out = tmp_path / "rows.jsonl"
    subprocess.run([sys.executable, str(ROOT / "scripts/collect.py"), "run1", str(report), str(out)], check=True,
                   env={**os.environ, "CALL_ID": "h200_test_call"})
    row = json.loads(out.read_text())
    assert (row["label"], row["call"]) == ("run1", "h200_test_call") and row["host"]


def test_an_old_reports_interval_is_computed_as_the_report_code_computes_it():
    """Reports older than the interval code store only their steps: the table computes the interval the way
    src/report/analysis.with_interval does today (its stored one came from the method of its day)."""
    from experiments.figures import Fig
    from experiments.speed.tables import S
    from src.report import analysis
    from src.report.sections import StepTime, Throughput

    new = Fig(S + "h100_fp8_fused_call.jsonl", "packed8k_compile_fp8_fused")
    th, step = new.record["throughput"], new.record["step_time_s"]
    new.record["throughput"] = {"real_tokens_per_s": th["real_tokens_per_s"]}  # as an old report: no interval
    try:
        recomputed = new.interval
    finally:
        new.record["throughput"] = th
    now_step, now_th = StepTime(mean=step["mean"], values=list(step["values"])), Throughput(real_tokens_per_s=th["real_tokens_per_s"])
    analysis.with_interval(now_step, now_th)
    assert recomputed.low == pytest.approx(now_th.real_tokens_per_s_low, rel=1e-9)
    assert recomputed.high == pytest.approx(now_th.real_tokens_per_s_high, rel=1e-9)


def test_a_sweep_report_is_found_by_its_overrides_when_its_label_is_a_hashed_job_name():
    from experiments.batch_vs_accum_saturation.tables import SAT
    from experiments.figures import Fig

    path, long = SAT + "largest/reports.jsonl", "data.length_mean=1800"
    short = Fig.by_overrides(path, "model=solar-10.7b", "batch.size=16", without=(long,))
    assert long not in short.get("overrides") and short.get("status") == "ok"
    assert Fig.by_overrides(path, "model=solar-10.7b", "batch.size=16", long).get("status") == "oom"
    with pytest.raises(KeyError, match="2 reports"):  # short and long rows both ran bs 16: ambiguous
        Fig.by_overrides(path, "model=solar-10.7b", "batch.size=16")
