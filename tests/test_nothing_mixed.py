"""Nothing lost, nothing mixed, round four (issue 49): an exploded loss recorded as ok, run directories over the
project's own files or another run's, job directories two cells share, a sweep ended by one job's unreadable
file, jobs that outlive their launcher, a stale adapter beside a new model, resumes from a checkpoint of
another config or an incomplete one, and a W&B run per rerun: each reproduced, with the warts beside them."""
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from src.report import summary
from tests.conftest import QUICK, ROOT, cli, read_report

BRIEF = [a for a in QUICK if not a.startswith("trainer.max_steps")]  # each test sets its own steps


def _strict_json(path):
    """json.loads as a strict parser reads it: a bare NaN or Infinity is no JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


# -- 6. a loss that turns NaN or explodes -------------------------------------------------------------------
@pytest.mark.parametrize("lr, said", [("3e38", "the loss was nan at step 2"),
                                      pytest.param("1e6", "the loss reached 1.48e+07 at step 2", marks=pytest.mark.slow)],
                         ids=["nan", "spike"])
def test_a_run_whose_loss_turns_nan_or_explodes_ends_diverged_never_ok(lr, said, tmp_path):
    args = [*BRIEF, "peft=none", f"trainer.lr={lr}", "trainer.max_grad_norm=0", "trainer.max_steps=12",
            f"hydra.run.dir={tmp_path}"]
    proc = cli(*args)
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("diverged:")]
    assert len(lines) == 1 and said in lines[0] and "trainer.lr" in lines[0], proc.stderr[-2000:]
    rep = _strict_json(tmp_path / "report.json")  # no bare NaN
    assert rep["status"] == "diverged" and said in rep["error"]
    assert rep["loss"]["curve"][-1][0] == 2  # stopped where it diverged, not 10 steps later
    assert not (tmp_path / "final").exists()  # a model of nan weights is not kept as the result
    again = cli(*args)
    assert again.returncode == 1 and "finished earlier" not in again.stdout


def test_divergence_is_a_non_finite_loss_or_one_orders_of_magnitude_above_the_start():
    from src.train import divergence

    history = [{"loss": 5.6, "step": 1}, {"loss": 4.0, "step": 10}]
    assert divergence.why(history, expected_initial=5.6) is None
    assert divergence.why(history + [{"loss": float("inf"), "step": 20}], 5.6) == "the loss was inf at step 20"
    assert divergence.why(history + [{"train_loss": float("nan"), "step": 20}], 5.6) == "the mean loss over the run was nan"
    assert divergence.why(history + [{"loss": 5e31, "step": 20}], 5.6).startswith("the loss reached 5e+31 at step 20")
    assert divergence.why(history + [{"loss": 50.0, "step": 20}], 5.6) is None  # worse, not exploded
    assert "before any update" in divergence.why([{"loss": math.nan, "step": 1}], 5.6)


def test_a_diverged_job_is_not_ranked_beside_the_finished_ones():
    def report(job, status, rate):
        return {"job": job, "status": status, "overrides": [job], "config": {"batch": {"size": 8, "grad_accum": 1}},
                "throughput": {"real_tokens_per_s": rate}, "step_time_s": {"mean": 0.1}}
    df = summary.table([report("lr=1e-4", "ok", 100.0), report("lr=1e6", "diverged", 900.0)])
    assert list(df["job"]) == ["lr=1e-4", "lr=1e6"] and df["rank"].iloc[0] == 1 and df["rank"].isna().iloc[1]
    assert any(line == "did not finish: lr=1e6 (diverged)" for line in summary.recommend(df))


# -- 1. a run directory over the project's source or config, or inside another run -----------------------------
def _project_copy(tmp_path) -> Path:
    """The project's source, config and plugins copied: a run that overwrites them here overwrites a copy."""
    copy = tmp_path / "project"
    for part in ("src", "conf", "hydra_plugins"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("where", ["conf", "src", "conf/model", "src/config/.."])
def test_a_run_directory_inside_the_projects_source_or_config_is_refused_before_anything_is_written(where, tmp_path):
    project = _project_copy(tmp_path)
    before = _tree(project)
    proc = subprocess.run([sys.executable, "-m", "src.run", *QUICK, f"hydra.run.dir={where}"], cwd=project,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"config error: hydra.run.dir={where}: ") and "trainsweep's own" in lines[0]
    assert _tree(project) == before  # not a file written, not even Hydra's .hydra/


@pytest.mark.parametrize("markers", [("report.json", "config.yaml"), ("run.lock",)], ids=["finished", "started"])
def test_a_run_directory_inside_another_runs_outputs_is_refused(markers, tmp_path):
    earlier = tmp_path / "earlier"
    (earlier / "final").mkdir(parents=True)
    for marker in markers:
        (earlier / marker).write_text("{}")
    (earlier / "final" / "adapter_config.json").write_text("{}")
    before = _tree(earlier)
    proc = cli(*QUICK, f"hydra.run.dir={earlier / 'final'}")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert f"inside the run directory {earlier}" in lines[0]
    assert _tree(earlier) == before
    sweep = cli("-m", *QUICK, "batch=4", f"hydra.sweep.dir={earlier / 'sweep'}")
    assert sweep.returncode == 2 and "hydra.sweep.dir=" in sweep.stderr and _tree(earlier) == before


# -- 7. two cells of a sweep, one job directory ---------------------------------------------------------------
def test_job_directories_differ_for_values_that_differ_only_in_a_slash_or_quotes():
    from src.config.compose import job_dirname

    pairs = [("model.name=x/y", "model.name=x-y"), ("data.train_file=a/b.csv", "data.train_file=a-b.csv"),
             ("trainer.args.run_name='1'", "trainer.args.run_name=1"), ("model.name='it''s'", "model.name=its")]
    for a, b in pairs:
        assert job_dirname(a) != job_dirname(b), (a, b)
        assert job_dirname(a) == job_dirname(a) and "/" not in job_dirname(a)  # a rerun finds it again
    assert job_dirname("batch='16',model=tiny") == "batch=16,model=tiny"  # the command line's own quotes: as before
    assert job_dirname("model.name=x-y") == "model.name=x-y"
    assert job_dirname("batch.grad_accum='${grad_accum_for:64,${batch.size}}',batch='4'") == "batch.effective=64,batch=4"


@pytest.mark.slow  # a two-job sweep (~25 s); the names' rule is tested fast just above
def test_a_sweep_over_values_equal_after_a_slash_becomes_a_dash_runs_and_names_both_jobs(tmp_path):
    proc = cli("-m", *BRIEF, "trainer.max_steps=2", "model.name=x/y,x-y", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    jobs = sorted(p.parent.name for p in tmp_path.glob("*/report.json"))
    assert len(jobs) == 2, jobs
    assert {read_report(tmp_path / job)["config"]["model"]["name"] for job in jobs} == {"x/y", "x-y"}
    assert "2 jobs" in (tmp_path / "summary.md").read_text()


# -- 2. a changed config rerun into the same directory: final/ holds the new result only ------------------------
def _files(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()}


def test_final_holds_only_the_new_result_when_a_changed_config_reruns_into_its_directory(tmp_path):
    from src.run import run
    from tests.conftest import compose

    assert run(compose(*QUICK, "peft=lora"), tmp_path)["status"] == "ok"
    assert "adapter_model.safetensors" in _files(tmp_path / "final")
    rep = run(compose(*QUICK, "peft=none"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    final = _files(tmp_path / "final")
    assert "model.safetensors" in final and not {f for f in final if f.startswith("adapter_")}, final
    size = sum(p.stat().st_size for p in (tmp_path / "final").rglob("*") if p.is_file()) / 2**20
    assert rep["saved"]["size_mb"] == pytest.approx(size)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".final")]  # no partial save left beside it
    # a rerun that diverges keeps no model: the earlier config's final/ must not pass for this config's result
    diverged = run(compose(*BRIEF, "peft=none", "trainer.lr=3e38", "trainer.max_grad_norm=0", "trainer.max_steps=12"),
                   tmp_path)
    assert diverged["status"] == "diverged" and not (tmp_path / "final").exists()


# -- 3. a sweep job whose data can't be fingerprinted: that job's error, and the sweep goes on ----------------------
def _without_root_override():
    """For a child process: file permissions bind it even when run as root. Root reads a mode-000 file anyway
    (CAP_DAC_OVERRIDE); dropping that capability and CAP_DAC_READ_SEARCH from the bounding set before exec leaves
    the new program without them, as a user's run is."""
    import ctypes
    import os

    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


def _as_user(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "src.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, preexec_fn=_without_root_override, env={**os.environ, **(env or {})})


FILES = ["data=files", "data.num_proc=1", "task.num_labels=2"]


def _two_class_csv(path: Path) -> Path:
    path.write_text("text,label\n" + "".join(f"{w} {i},{w}\n" for i in range(8) for w in ("식대", "교통비")))
    return path


@pytest.mark.parametrize("fault", ["unreadable file", "read-only cache"])
def test_a_sweep_job_whose_data_cant_be_fingerprinted_is_that_jobs_error_and_the_sweep_goes_on(fault, tmp_path):
    ok, bad = _two_class_csv(tmp_path / "ok.csv"), _two_class_csv(tmp_path / "unreadable.csv")
    cache = tmp_path / "cache"
    cache.mkdir()
    if fault == "unreadable file":
        bad.chmod(0)
    else:
        cache.chmod(0o555)
    sweep = tmp_path / "sweep"
    proc = _as_user("-m", *BRIEF, "trainer.max_steps=2", *FILES, f"data.train_file={ok},{bad}",
                    f"hydra.sweep.dir={sweep}", env={"TRAINSWEEP_CACHE": str(cache)})
    # the sweep goes on; one where no job finished exits 1 (issue 51: the read-only cache fails every job)
    assert proc.returncode == (0 if fault == "unreadable file" else 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    reports = {read_report(p.parent)["config"]["data"]["train_file"]: read_report(p.parent)
               for p in sweep.glob("*/report.json")}
    assert set(reports) == {str(ok), str(bad)} and (sweep / "summary.md").is_file()
    if fault == "unreadable file":
        assert reports[str(ok)]["status"] == "ok"
        assert reports[str(bad)]["status"] == "config_error"
        assert f"data.train_file={bad}: can't be read (Permission denied" in reports[str(bad)]["error"]
    else:  # every job needs the cache: each says so in one line
        assert {r["status"] for r in reports.values()} == {"config_error"}
        assert all(r["error"].startswith(f"TRAINSWEEP_CACHE={cache}: can't be written") for r in reports.values())



# -- 4. resume from an incomplete checkpoint, or one of another depth -------------------------------------------
@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> Path:
    """An interrupted 4-step run: checkpoints at steps 2 and 4, no report."""
    from src.run import run
    from tests.conftest import compose

    out = tmp_path_factory.mktemp("two_checkpoints")
    assert run(compose(*QUICK, "trainer.save_steps=2"), out)["status"] == "ok"
    (out / "report.json").unlink()
    return out


def _copy_without(two_checkpoints: Path, tmp_path: Path, *names: str) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(two_checkpoints, run_dir)
    for name in names:
        step, file = name.split("/")
        (run_dir / "checkpoints" / f"checkpoint-{step}" / file).unlink()
    return run_dir


@pytest.mark.parametrize("missing", ["optimizer.pt", "scheduler.pt", "adapter_model.safetensors", "adapter_config.json"])
def test_resume_falls_back_past_a_checkpoint_missing_a_file_it_restores(missing, two_checkpoints, tmp_path, caplog):
    from src.run import run
    from tests.conftest import compose

    run_dir = _copy_without(two_checkpoints, tmp_path, f"4/{missing}")
    rep = run(compose(*QUICK, "trainer.save_steps=2", "resume=true"), run_dir)
    assert rep["status"] == "ok", rep["error"]
    assert rep["resumed_from"] == str(run_dir / "checkpoints" / "checkpoint-2")  # not the one without it
    assert rep["loss"]["curve"][-1][0] == 4
    assert f"resume: skipping {run_dir / 'checkpoints' / 'checkpoint-4'}: no {missing}" in caplog.text


def test_resume_with_no_complete_checkpoint_is_refused_in_one_line(two_checkpoints, tmp_path):
    run_dir = _copy_without(two_checkpoints, tmp_path, "2/optimizer.pt", "4/scheduler.pt")
    proc = cli(*QUICK, "trainer.save_steps=2", "resume=true", f"hydra.run.dir={run_dir}")
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[")]  # log lines aside
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith(f"config error: resume=True: no complete checkpoint in {run_dir / 'checkpoints'}")
    assert "resumed" not in proc.stdout


def test_resume_into_a_directory_without_its_config_yaml_under_another_depth_is_refused(two_checkpoints, tmp_path):
    from src.run import run
    from tests.conftest import compose

    run_dir = _copy_without(two_checkpoints, tmp_path)
    (run_dir / "config.yaml").unlink()
    rep = run(compose(*QUICK, "trainer.save_steps=2", "resume=true", "model.arch.num_hidden_layers=1"), run_dir)
    assert rep["status"] == "config_error" and "resumed_from" not in rep
    assert "the config changed since the run it would continue (model.arch.num_hidden_layers: 2 -> 1)" in rep["error"]


# -- 5. a run of another config, killed before its first checkpoint, then resumed ----------------------------------
def test_resume_never_continues_a_checkpoint_another_configs_run_left(two_checkpoints, tmp_path):
    from transformers import TrainerCallback

    from src.run import run
    from tests.conftest import compose

    class Killed(TrainerCallback):  # run B dies at its first step, before any checkpoint of its own
        def on_step_end(self, *args, **kwargs):
            raise RuntimeError("killed")

    run_dir = _copy_without(two_checkpoints, tmp_path)  # run A's checkpoints, at the tiny model's lr (3e-3)
    b = [*QUICK, "trainer.save_steps=2", "trainer.lr=0.01"]
    assert run(compose(*b), run_dir, callbacks=(Killed(),))["status"] == "error"
    assert "lr: 0.01" in (run_dir / "config.yaml").read_text()  # B's config, beside A's checkpoints
    rep = run(compose(*b, "resume=true"), run_dir)
    assert rep["status"] == "config_error" and "resumed_from" not in rep
    assert "the config changed since the run it would continue (trainer.lr: 0.003 -> 0.01)" in rep["error"]



# -- 8. the per-job launcher process killed while its job trains ------------------------------------------------
def _processes(pgid: int, word: str) -> list[int]:
    """Live processes of a process group whose command line holds `word`."""
    import os

    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if int(stat[2]) == pgid and stat[0] != "Z" and word in cmdline and int(proc.name) != os.getpid():
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pidfd watches the launcher: Linux's")
def test_a_sweep_job_dies_with_its_own_launcher_process(tmp_path):
    import os
    import signal
    import time

    slow = [*BRIEF, "trainer.max_steps=500", "debug.collate_delay_ms=50", "dataloader=basic"]  # lasts until killed
    sweep = subprocess.Popen([sys.executable, "-m", "src.run", "-m", "batch=4,8", *slow, f"hydra.sweep.dir={tmp_path}"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not any(tmp_path.glob("*/config.yaml")):  # job 0 is training
            assert time.time() < deadline and sweep.poll() is None, "job 0 never started"
            time.sleep(0.2)
        [job] = _processes(sweep.pid, "submitit.core._submit")
        [launcher] = _processes(sweep.pid, "submitit.local._local")
        os.kill(launcher, signal.SIGKILL)  # the job's own parent, not the sweep
        deadline = time.time() + 10
        while job in _processes(sweep.pid, "submitit.core._submit") and time.time() < deadline:
            time.sleep(0.1)
        assert job not in _processes(sweep.pid, "submitit.core._submit"), "job 0 outlived its launcher"
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
    [first] = [p.parent for p in tmp_path.glob("*/config.yaml") if "batch=4" in p.parent.name]
    assert not (first / "report.json").exists() or read_report(first)["status"] != "ok"



# -- 9. a run rerun into its directory: one W&B run, however many times it ran ----------------------------------
def test_a_rerun_into_the_same_directory_keeps_one_wandb_run(tmp_path):
    pytest.importorskip("wandb")
    from src.run import run
    from tests.conftest import compose
    from tests.wandb_log import offline_runs

    args = [*QUICK, "logger=wandb"]
    assert run(compose(*args), tmp_path)["status"] == "ok"
    [first] = offline_runs(tmp_path)
    assert run(compose(*args, "rerun=true"), tmp_path)["status"] == "ok"  # as a rerun after a kill or an error
    [again] = offline_runs(tmp_path)  # `wandb sync <run>/wandb/offline-run-*` uploads one run, not two
    assert again.name.rsplit("-", 1)[1] == first.name.rsplit("-", 1)[1]  # the same run id


# -- warts ------------------------------------------------------------------------------------------------------
def test_an_empty_trainsweep_cache_is_the_default_not_the_working_directory():
    import os

    code = "from src.base import files; print(files.CACHE)"
    for value, expected in (("", "outputs/cache"), ("/somewhere/else", "/somewhere/else")):
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TRAINSWEEP_CACHE": value})
        assert proc.stdout.strip() == expected, proc.stderr


@pytest.mark.parametrize("fault", ["unreadable file", "read-only cache"])
def test_an_unreadable_data_file_or_a_read_only_cache_is_one_line_exit_2(fault, tmp_path):
    data, cache = _two_class_csv(tmp_path / "train.csv"), tmp_path / "cache"
    cache.mkdir()
    (data if fault == "unreadable file" else cache).chmod(0o000 if fault == "unreadable file" else 0o555)
    proc = _as_user(*BRIEF, "trainer.max_steps=2", *FILES, f"data.train_file={data}", f"hydra.run.dir={tmp_path / 'run'}",
                    env={"TRAINSWEEP_CACHE": str(cache)})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith(f"config error: data.train_file={data}: can't be read (Permission denied)"
                               if fault == "unreadable file" else f"config error: TRAINSWEEP_CACHE={cache}: can't be written")


@pytest.mark.parametrize("devices", ["0, 1", "0;touch pwned", "$(touch pwned)"], ids=["space", "semicolon", "substitution"])
def test_the_launcher_hands_cuda_visible_devices_to_each_jobs_shell_verbatim(devices, tmp_path, monkeypatch):
    from hydra_plugins.trainsweep.launcher import job_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", devices)
    [line] = job_gpus({})["setup"]  # runs in a shell before each job's process: `0, 1` failed every job
    shell = subprocess.run(["sh", "-c", f'{line} && printf %s "$CUDA_VISIBLE_DEVICES"'], cwd=tmp_path,
                           capture_output=True, text=True, timeout=30)
    assert shell.returncode == 0 and shell.stdout == devices, shell.stderr
    assert not (tmp_path / "pwned").exists()  # a value is never run as a command


@pytest.mark.parametrize("env, said", [({"RANK": "abc"}, "RANK=abc: must be a whole number"),
                                       ({"RANK": "1"}, "RANK=1: must be below WORLD_SIZE (1)")], ids=["abc", "stale"])
def test_a_bad_or_stale_rank_variable_is_one_line_exit_2(env, said, tmp_path):
    import os

    proc = subprocess.run([sys.executable, "-m", "src.run", *QUICK, f"hydra.run.dir={tmp_path}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]  # a stale RANK=1 trained, wrote nothing, exit 0
    assert lines[0].startswith(f"config error: {said}")
