"""Sweeps: one process per job, OOM and crashed jobs recorded while the sweep goes on, resume without
recomputing, a ranked summary with plots and a recommendation, the batch search, saved sweep presets."""
import json

import pandas as pd
import pytest
import torch

from hydra_plugins.trainsweep.launcher import job_gpus
from src.report import plots, summary
from tests.conftest import CONF, QUICK, cli, compose, read_report


@pytest.fixture(scope="module")
def oom_sweep(tmp_path_factory):
    """4 jobs; those of batch 4 'run out of memory' (debug=oom). The recommendation's lines are unit-tested below."""
    sweep_dir = tmp_path_factory.mktemp("sweep")
    args = ["-m", "batch=2,4", "batch.grad_accum=1,2", "debug=oom", "debug.oom_from_batch=4", *QUICK,
            f"hydra.sweep.dir={sweep_dir}"]
    first = cli(*args)
    return sweep_dir, args, first


def test_sweep_finishes_and_records_oom(oom_sweep):
    sweep_dir, _, proc = oom_sweep
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = {p.parent.name: read_report(p.parent) for p in sweep_dir.glob("*/report.json")}
    assert len(reports) == 4
    oom = [r for r in reports.values() if r["status"] == "oom"]
    assert {r["config"]["batch"]["size"] for r in oom} == {4} and len(oom) == 2
    assert all("out of memory" in r["error"] for r in oom)
    ok = [r for r in reports.values() if r["status"] == "ok"]
    assert {(r["config"]["batch"]["size"], r["config"]["batch"]["grad_accum"]) for r in ok} == {(2, 1), (2, 2)}
    for r in ok:  # samples per optimizer step = size * grad_accum, over the 3 steps after warm-up
        b = r["config"]["batch"]
        assert r["tokens"]["samples"] == 3 * b["size"] * b["grad_accum"]


def test_each_job_runs_in_its_own_process(oom_sweep):
    sweep_dir, _, _ = oom_sweep
    pids = [read_report(p.parent)["env"]["pid"] for p in sweep_dir.glob("*/report.json")
            if read_report(p.parent)["status"] == "ok"]
    assert len(set(pids)) == len(pids) == 2


def test_summary_ranks_finished_jobs_and_draws_plots(oom_sweep):
    sweep_dir, _, proc = oom_sweep
    df = pd.read_csv(sweep_dir / "summary.csv")
    ok = df[df["status"] == "ok"]
    assert list(ok["rank"]) == sorted(ok["rank"]) and ok["rank"].iloc[0] == 1  # ties share a rank
    assert list(ok["real_tok_s"]) == sorted(ok["real_tok_s"], reverse=True)
    assert set(df[df["status"] != "ok"]["status"]) == {"oom"}
    md = (sweep_dir / "summary.md").read_text()
    assert "fastest" in md and "(oom)" in md
    for name in ("throughput_heatmap.png", "memory_vs_batch.png", "step_breakdown.png"):
        assert (sweep_dir / name).stat().st_size > 5000
    assert "# Sweep summary" in proc.stdout


def test_rerun_skips_finished_jobs_and_runs_a_changed_one_again(oom_sweep):
    """The last test of the shared sweep: it reruns one job. (A job that ended in a config error runs again too:
    test_reliability.py, the same check of the job's report.)"""
    sweep_dir, args, _ = oom_sweep
    before = {p: p.stat().st_mtime for p in sweep_dir.glob("*/report.json")}
    changed = next(p for p in before if read_report(p.parent)["status"] == "ok")
    good = read_report(changed.parent)
    changed.write_text(json.dumps(dict(good, config_hash="from an older config or commit")))
    again = cli(*args)
    assert again.returncode == 0, again.stderr[-2000:]
    log = again.stdout + again.stderr
    assert log.count("finished earlier") == 3
    assert log.count("its config or code changed since its report, running it again") == 1
    assert {p: p.stat().st_mtime for p in sweep_dir.glob("*/report.json") if p != changed} == \
        {p: t for p, t in before.items() if p != changed}
    assert read_report(changed.parent)["config_hash"] == good["config_hash"]  # measured anew, under this config


def test_a_job_whose_process_dies_is_recorded_and_the_sweep_goes_on(tmp_path):
    proc = cli("-m", "batch=4,8", "debug.crash_from_batch=8", *QUICK, f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    statuses = {read_report(p.parent)["config"]["batch"]["size"]: read_report(p.parent)["status"]
                for p in tmp_path.glob("*/report.json")}
    assert statuses == {4: "ok", 8: "error"}
    crashed = [read_report(p.parent) for p in tmp_path.glob("*/report.json") if read_report(p.parent)["status"] == "error"]
    assert "process failed" in crashed[0]["error"]


def _report(job, size, accum, rate, status="ok", saturated=False, device="NVIDIA H100 80GB HBM3", ci=0.02):
    """A constructed report: `rate` real tokens/s with a 95% interval of +-ci (16 batch means)."""
    th = {"real_tokens_per_s": rate, "real_tokens_per_s_low": rate * (1 - ci), "real_tokens_per_s_high": rate * (1 + ci)} \
        if rate else {}
    return {"job": job, "status": status, "overrides": [f"batch.size={size}", f"batch.grad_accum={accum}"],
            "config": {"batch": {"size": size, "grad_accum": accum}},
            "throughput": th, "env": {"device_name": device},
            "verdict": {"saturated": saturated, "bottleneck": "compute"}, "step_time_s": {"mean": 1.0, "ci_batches": 16},
            "memory_gb": {"peak_reserved": size, "capacity": 80.0}, "breakdown_s": {"compute": 0.9, "data": 0.1}}


def test_recommendation_names_the_fastest_fitting_config_and_the_best_split():
    df = summary.table([_report("a", 8, 4, 1000), _report("b", 16, 2, 1300), _report("c", 32, 1, 1500, saturated=True),
                        _report("d", 64, 1, None, status="oom")])
    lines = summary.recommend(df)
    assert lines[0] == "fastest non-saturated config: batch.size=16, batch.grad_accum=2 (bs 16 x ga 2), " \
                       "1,300 (1,274-1,326) real tokens/s"
    assert lines[1].startswith("batch.size=32, batch.grad_accum=1: it beats the fastest fitting one by 1.15x (x1.")
    assert "but saturated memory" in lines[1]
    assert any(line.startswith("for effective batch 32: bs 32 x ga 1 beats bs 16 x ga 2 by 1.15x (x1.")
               and "; bs 32 x ga 1 beats bs 8 x ga 4 by 1.50x (x1." in line for line in lines)
    assert lines[-1].startswith("did not finish:") and "(oom)" in lines[-1]
    assert list(df["status"]) == ["ok", "ok", "ok", "oom"] and list(df["rank"]) == [1, 2, 3, 4]


def test_an_effective_batch_group_of_two_models_names_each_job_not_only_its_split():
    """Two models at one effective batch: 'bs 64 x ga 2 beats bs 32 x ga 4' would hide that they are two models."""
    reports = [_report("solar", 64, 2, 4700), _report("polyglot", 32, 4, 3600)]
    for r, model in zip(reports, ("solar-10.7b", "polyglot-ko-12.8b")):
        r["overrides"].append(f"model={model}")
    line = next(x for x in summary.recommend(summary.table(reports)) if x.startswith("for effective batch 128:"))
    assert "model=solar-10.7b" in line and "model=polyglot-ko-12.8b" in line
    same = summary.table([_report("a", 64, 2, 4700), _report("b", 32, 4, 3600)])
    assert "bs 64 x ga 2 beats bs 32 x ga 4" in next(x for x in summary.recommend(same) if x.startswith("for effective"))


def test_token_budget_jobs_have_no_effective_batch_of_rows_and_are_not_grouped_by_one():
    """A packed job's batch.size is unused (its packs hold as many rows as fit the budget): no 'for effective
    batch 8' line may pair it with a padded job of bs 8 x ga 1."""
    packed = _report("p", 8, 1, 2000)
    packed["config"]["batch"]["tokens"] = 8192
    df = summary.table([packed, _report("a", 8, 1, 1000), _report("b", 4, 2, 900)])
    assert pd.isna(df.set_index("dir").loc["p", "effective_batch"])
    line = next(x for x in summary.recommend(df) if x.startswith("for effective batch 8:"))
    assert "8,192-token" not in line and "bs 8 x ga 1" in line and "bs 4 x ga 2" in line


def test_jobs_that_cannot_be_told_apart_share_a_rank_and_the_recommendation_says_tie():
    df = summary.table([_report("a", 8, 2, 1000), _report("b", 16, 1, 1020), _report("c", 4, 4, 1400),
                        _report("d", 2, 8, 700, ci=0.5), _report("e", 8, 1, 1390)])
    assert list(df["batch"]) == [4, 8, 16, 8, 2] and list(df["rank"]) == [1, 1, 3, 3, 3]  # d: too noisy to rank below
    lines = summary.recommend(df)
    assert lines[1] == "tied with it (within noise or under the 3% runs drift apart): " \
                       "batch.size=8, batch.grad_accum=1 (1,390 (1,362-1,418))"
    line = next(x for x in lines if x.startswith("for effective batch 16:"))
    assert "bs 4 x ga 4 beats bs 16 x ga 1 by 1.37x (x1.3" in line
    assert "bs 4 x ga 4 beats bs 2 x ga 8 by at least x1.21 (measured 2.00x" in line  # d: +-50%, too noisy to size


def test_a_tier_is_judged_against_its_leader_not_the_row_above():
    """Issue 54: ties chained against the previous row instead of the tier's leader survived, as 1076/1050/1025/1000
    at +-1% rank alike either way. Here b ties a (1.9% apart) and c ties b (2.9%), but c is 4.8% under a, past the
    3% drift with intervals of +-0.2%: c starts a tier of its own, where a chain would pull it into a's."""
    df = summary.table([_report("a", 8, 1, 1100, ci=0.002), _report("b", 4, 2, 1080, ci=0.002),
                        _report("c", 2, 4, 1050, ci=0.002)])
    assert list(df["batch"]) == [8, 4, 2] and list(df["rank"]) == [1, 1, 3]
    assert summary.comparison(df.iloc[1], df.iloc[2]).tie  # the chain's link: b and c can't be told apart


def test_a_job_without_an_interval_never_wins_a_comparison():
    no_ci = _report("a", 8, 1, 2000)
    no_ci["throughput"] = {"real_tokens_per_s": 2000}
    df = summary.table([no_ci, _report("b", 4, 2, 1000)])
    assert list(df["rank"]) == [1, 1]
    lines = summary.recommend(df)
    assert any("not told apart (2.00x measured, no interval" in x for x in lines)
    assert lines[0].startswith("cannot tell these 2 jobs apart yet: more timed steps") and "sweep.repeats=3" in lines[0]
    assert lines[1].startswith("measured fastest, within noise of the rest: ")
    assert lines[2].startswith("not told apart from it (no interval") and not any(x.startswith("tied") for x in lines)


def test_a_baseline_states_each_job_against_it_and_repeats_never_reach_below_zero(tmp_path):
    """An ablation (experiment=loop_overheads: baseline: debug=none) is read against its clean job, not against
    whichever habit ran fastest. Repeats from an H200 run (two or three per habit)."""
    def rep(habit, rate, repeat):
        r = _report(f"{habit}-{repeat}", 8, 1, rate)
        r["overrides"] = [f"debug={habit}", f"repeat={repeat}"]
        r["config"]["baseline"] = "debug=none"
        return r

    runs = {"none": [6197, 6275, 7070], "empty_cache": [4163, 4550], "cudnn_deterministic": [7119, 6002]}
    reports = [rep(h, x, i) for h, xs in runs.items() for i, x in enumerate(xs)]
    (tmp_path / "reports.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reports))
    summary.write(tmp_path / "reports.jsonl")
    md = (tmp_path / "summary.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- against debug=none: "))
    assert "debug=none beats debug=empty_cache by 1.50x (x1.1" in line
    assert "debug=cudnn_deterministic and debug=none tie" in line
    assert (pd.read_csv(tmp_path / "summary.csv")["real_tok_s_low"] > 0).all()
    assert summary._against(summary.table(reports), "debug=all_bad") == "against debug=all_bad: no finished job has that override"


def test_a_baseline_that_names_several_jobs_says_so_and_a_full_one_picks_one():
    reports = []
    for size, accum, rate in ((8, 1, 1000), (8, 2, 1100), (16, 1, 1500)):
        r = _report(f"batch={size},batch.grad_accum={accum}", size, accum, rate)
        reports.append(r)
    df = summary.table(reports)
    line = summary._against(df, "batch.size=8")
    assert line.startswith("against batch.size=8: it names 2 jobs (") and "e.g. baseline='batch.size=8, batch.grad_accum=" in line
    one = summary._against(df, "batch.size=8,batch.grad_accum=2")
    assert one.startswith("against batch.size=8,batch.grad_accum=2: ") and "names" not in one


@pytest.mark.parametrize("preset", sorted(p.stem for p in (CONF / "sweep").glob("*.yaml")))
def test_sweep_presets_compose(preset):
    cfg = compose(f"sweep={preset}")
    assert cfg.measure.stop_when_stable is True


def test_the_batch_presets_plan_and_the_others_run_every_cell():
    """sweep.plan=predict is the default of the saved sweeps whose cells share a model build (the batch axes), where
    the planner can leave cells out; a preset whose every cell is a family of its own (padding, precision, ...)
    would run them all anyway, with the predictor's process on top."""
    from hydra import compose as hydra_compose, initialize_config_dir

    plans = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for p in sorted((CONF / "sweep").glob("*.yaml")):
            plans[p.stem] = hydra_compose("config", overrides=[f"sweep={p.stem}"], return_hydra_config=True).hydra.launcher.plan
    assert {name for name, plan in plans.items() if plan == "predict"} == {"batch_vs_accum", "fit"}
    assert set(plans.values()) == {"predict", "all"}


def test_slurm_launcher_composes():
    from hydra import compose as hydra_compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = hydra_compose("config", overrides=["hydra/launcher=slurm", "hydra.launcher.partition=gpu"],
                            return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.gpus_per_node, launcher.partition, launcher.array_parallelism) == (1, "gpu", 8)


def test_jobs_get_the_gpus_their_sweep_sees(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert job_gpus({}) == {"gpus_per_node": 2, "setup": ["export CUDA_VISIBLE_DEVICES=3,5"]}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert job_gpus({})["gpus_per_node"] == torch.cuda.device_count()


def test_summary_shows_the_memory_models_prediction_beside_the_measured_peak(tmp_path):
    reports = [_report(f"j{s}", s, 1, 1000.0 * s) for s in (4, 8, 16)]
    for r, gb in zip(reports, (10.0, 20.0, 35.0)):
        r["memory_gb"]["peak_allocated"] = gb * 0.95
        r["memory_predicted_gb"] = {"peak_allocated": gb}
    df = summary.table(reports)
    assert dict(zip(df["batch"], df["predicted_alloc_gb"])) == {4: 10.0, 8: 20.0, 16: 35.0}
    paths = plots.plots(df, tmp_path)
    assert (tmp_path / "memory_vs_batch.png") in paths and (tmp_path / "memory_vs_batch.png").stat().st_size > 5000


def test_repeats_run_in_rounds_and_repeat_zero_is_the_plain_job():
    from hydra_plugins.trainsweep.launcher import rounds

    assert rounds([["batch=2"], ["batch=4"]], 2) == [["batch=2"], ["batch=4"], ["batch=2", "repeat=1"],
                                                      ["batch=4", "repeat=1"]]
    assert rounds([["a=1"]], 1) == [["a=1"]]


def test_repeats_must_be_a_positive_integer(tmp_path):
    proc = cli("-m", "batch=2,4", "sweep.repeats=0", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 2 and proc.stderr.strip() == "config error: sweep.repeats=0: must be a positive integer"


@pytest.mark.slow  # 4 job processes; rounds() and the ranking on repeats are tested without processes above
def test_a_repeated_sweep_interleaves_its_jobs_and_ranks_each_on_its_repeats(tmp_path):
    proc = cli("-m", "batch=2,4", "sweep.repeats=2", *QUICK, "logger=none", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = (proc.stdout + proc.stderr).splitlines()
    started = [line.split(" : ")[1] for line in lines if "\t#" in line and "real tok/s" not in line and ": ok" not in line]
    assert [("repeat=1" in s, "batch='2'" in s) for s in started] == [(False, True), (False, False), (True, True),
                                                                       (True, False)]  # A B A B
    finished = [line for line in lines if ": ok, " in line and "real tok/s" in line]
    assert len(finished) == 4  # one line per finished job while the sweep runs
    assert len(list(tmp_path.glob("*/report.json"))) == 4
    assert all((d / "job.log").resolve().is_file() for d in tmp_path.iterdir() if (d / "report.json").exists())
    df = pd.read_csv(tmp_path / "summary.csv")
    assert sorted(df["batch"]) == [2, 4] and set(df["repeat"]) == {"2 of 2"} and set(df["ci_batches"]) == {2}
    assert (df["real_tok_s_low"] < df["real_tok_s"]).all() and (df["real_tok_s"] < df["real_tok_s_high"]).all()


def test_the_summary_reads_a_jsonl_of_collected_reports_and_gives_old_reports_their_intervals(tmp_path):
    old = _report("x", 8, 1, 1000.0)
    old.pop("job")
    old["label"] = "bs8"
    old["step_time_s"] = {"mean": 0.1, "n": 12, "values": [0.1, 0.11, 0.09] * 4}
    old["throughput"] = {"real_tokens_per_s": 1000.0}
    (tmp_path / "reports.jsonl").write_text(json.dumps(old) + "\n")
    md = summary.write(tmp_path / "reports.jsonl")
    assert (tmp_path / "summary.csv").exists() and "1,000 (" in md
    assert summary.load_reports(tmp_path / "reports.jsonl")[0]["job"] == "bs8"


def test_a_job_with_many_overrides_gets_a_short_unique_stable_dir_name():
    # a 12-override sweep job on the GPU named its dir with all of them: 292 bytes, "File name too long"
    from src.config.compose import MAX_DIRNAME, job_dirname

    common = ",".join(f"data.length_{k}={v}" for k, v in (("max", 2048), ("mean", 1800), ("std", 200))) + \
        ",gpu.memory_cap_gb=24,logger=none,measure.warmup_steps=2,model=solar-10.7b,peft.compute_dtype=bfloat16," \
        "peft=qlora,precision=bf16,trainer.gradient_checkpointing=true,trainer.max_steps=6"
    names = [job_dirname(f"batch.grad_accum=1,batch.size={size},{common}") for size in (4, 8)]
    assert all(len(n.encode()) <= MAX_DIRNAME for n in names) and names[0] != names[1]
    assert names[0].startswith("batch.grad_accum=1,batch.size=4,data.length_max=2048")
    assert job_dirname(f"batch.grad_accum=1,batch.size=4,{common}") == names[0]  # a rerun finds the finished job
    assert job_dirname("batch.size=4,model=tiny") == "batch.size=4,model=tiny" and job_dirname("") == "defaults"


def test_repeats_name_each_kind_of_flag_once_with_how_many_repeats_raised_it():
    """Three repeats each flagged host-bound in their own words ('GPU busy 42%', '54%'): one flag with the count,
    and a repeat's own 'wide interval' is dropped once the repeats' spread gives the interval."""
    reports = []
    for i, (rate, busy) in enumerate(((6000, 42), (6400, 54), (6200, 47))):
        r = _report(f"none-{i}", 8, 1, rate)
        r["overrides"] = ["debug=none", f"repeat={i}"]
        r["flags"] = {"reasons": [f"host-bound (GPU busy {busy}%): such a step moved up to 20%"]
                      + (["wide interval: +-13% of the mean (over 10%)"] if i == 0 else [])
                      + (["1 new batch shapes inside the timed window"] if i == 2 else [])}
        reports.append(r)
    row = summary.table(reports).iloc[0]
    assert row["repeat"] == "3 of 3"
    assert row["flags"] == ("host-bound (GPU busy 42%): such a step moved up to 20% (3 of 3 repeats); "
                            "1 new batch shapes inside the timed window (1 of 3 repeats)")


def test_a_newcomers_fast_sweep_ends_in_an_answer_or_says_what_would_give_one(tmp_path):
    """issue 32's newcomer path: two jobs of debug=fast on a CPU, each measured (an interval), and a summary that
    leads with the fastest config or with 'cannot tell these jobs apart yet: <what would>', under the line that
    says a CPU's one-process intervals can't rank them (issue 51: the host's drift between processes)."""
    proc = cli("-m", "batch=2,8", "debug=fast", "logger=none", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(p.read_text()) for p in tmp_path.glob("*/report.json")]
    assert len(reports) == 2 and all(r["status"] == "ok" and r["step_time_s"]["ci_low"] for r in reports)
    md = (tmp_path / "summary.md").read_text()
    lead = md.splitlines()[2]  # the host may be busy too (this one often is): said first, in the same line
    assert lead.startswith("**cannot rank these jobs: ") and "each job's interval comes from its one process" in lead
    first = next(line for line in md.splitlines() if line.startswith("- "))
    assert first.startswith(("- fastest non-saturated config: ", "- fastest config: ", "- cannot tell these 2 jobs apart yet: "))
