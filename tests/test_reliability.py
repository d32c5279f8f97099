"""Nothing lost, nothing run twice (issue 15): only a result of the same config and code counts as finished;
a killed sweep takes its jobs with it; a second writer is refused; resume skips a corrupt checkpoint; a full
disk keeps the summary and the earlier files; a config error answers before anything heavy is imported.
Real processes for the kill, lock and disk cases (RLIMIT_FSIZE stands in for a full disk: no root needed)."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from src.report import files as report_files, summary
from src.train.checkpoints import last_checkpoint
from src.run import run
from tests.conftest import QUICK, ROOT, cli, compose, read_report

SLOW = [a for a in QUICK if not a.startswith("trainer.max_steps")] + [
    "trainer.max_steps=500", "debug.collate_delay_ms=50", "dataloader=basic"]  # a run that lasts until killed


def _wait_for(condition, seconds=120.0):
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


def _running_in_group(pgid: int) -> list[str]:
    """Live (not zombie) processes of a process group, as 'pid comm'."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if int(rest[2]) == pgid and rest[0] != "Z":
            found.append(f"{stat.parent.name} {comm}")
    return found


def _write_report(run_dir: Path, **fields) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "report.json").write_text(json.dumps({"overrides": [], "config": {}, **fields}))


# -- 1. what counts as finished ----------------------------------------------------------------------------
def test_only_ok_and_oom_reports_of_the_same_config_count_as_finished(tmp_path):
    for status in ("ok", "oom", "error", "config_error", "failed_checks"):
        _write_report(tmp_path, status=status, config_hash="abc")
        done, why = report_files.finished(tmp_path, "abc")
        assert (done is not None) == (status in ("ok", "oom")), status
        assert why == ("" if done else f"its earlier run ended {status}")
    _write_report(tmp_path, status="ok", config_hash="abc")
    assert report_files.finished(tmp_path, "def") == (None, "its config or code changed since its report")
    _write_report(tmp_path, status="ok")  # a report from before config hashes: runs again
    assert report_files.finished(tmp_path, "abc")[0] is None
    (tmp_path / "report.json").write_text('{"status": "ok", "conf')  # cut short
    assert report_files.finished(tmp_path, "abc") == (None, "its report.json is unreadable")
    (tmp_path / "report.json").unlink()  # a process that died before its report
    assert report_files.finished(tmp_path, "abc") == (None, "")


def test_the_config_hash_follows_the_config_and_the_code_not_rerun_or_resume(monkeypatch):
    digest = report_files.config_hash(compose(*QUICK))
    assert digest == report_files.config_hash(compose(*QUICK, "rerun=true", "resume=true"))
    assert digest != report_files.config_hash(compose(*QUICK, "data.max_length=128"))
    monkeypatch.setattr(report_files, "code_version", lambda: "another commit")
    assert digest != report_files.config_hash(compose(*QUICK))


def test_a_config_error_does_not_block_the_corrected_rerun_and_a_changed_config_runs_again(tmp_path):
    where = f"hydra.run.dir={tmp_path}"
    assert cli(*QUICK, "data.max_length=0", where).returncode == 2
    assert not tmp_path.exists()  # a config error leaves no run directory (test_warts.py)
    tmp_path.mkdir()
    (tmp_path / "report.json").write_text(json.dumps({"status": "config_error", "error": "data.max_length=0: ..."}))
    fixed = cli(*QUICK, "data.max_length=64", where)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert f"{tmp_path}: its earlier run ended config_error: running it again" in fixed.stdout
    assert read_report(tmp_path)["status"] == "ok"
    same = cli(*QUICK, "data.max_length=64", where)
    assert same.returncode == 0 and f"{tmp_path}: finished earlier (ok)" in same.stdout
    changed = cli(*QUICK, "data.max_length=32", where)
    assert changed.returncode == 0 and "its config or code changed since its report: running it again" in changed.stdout
    assert read_report(tmp_path)["config"]["data"]["max_length"] == 32


# -- 2. a killed sweep takes its jobs with it ----------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_sweep_takes_its_running_job_with_it(sig, tmp_path):
    sweep = subprocess.Popen([sys.executable, "-m", "src.run", "-m", "batch=4,8", *SLOW, f"hydra.sweep.dir={tmp_path}"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for(lambda: any(tmp_path.glob("*/config.yaml")))  # the first job's process is running
        os.kill(sweep.pid, sig)  # the sweep alone, as `kill PID`, `kill -9 PID` or the OOM killer would
        sweep.wait()
        deadline = time.time() + 20
        while _running_in_group(sweep.pid) and time.time() < deadline:
            time.sleep(0.2)
        assert _running_in_group(sweep.pid) == []
    finally:
        try:
            os.killpg(sweep.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    [job] = [p.parent for p in tmp_path.glob("*/config.yaml")]
    assert report_files.finished(job, "any") == (None, "")  # no report: the rerun sweep runs it


# -- 3. one writer per run directory ---------------------------------------------------------------------------
def test_a_second_run_into_a_held_directory_is_refused_in_one_line(tmp_path):
    first = subprocess.Popen([sys.executable, "-m", "src.run", *SLOW, f"hydra.run.dir={tmp_path}"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for(lambda: (tmp_path / "config.yaml").exists())  # written under the lock
        config = (tmp_path / "config.yaml").read_text()
        second = cli(*QUICK, "data.max_length=64", f"hydra.run.dir={tmp_path}")
        assert second.returncode == report_files.BUSY_EXIT == 75
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert lines == [f"not started: {tmp_path} is in use by another run (pid {first.pid}); it was left alone"]
        assert (tmp_path / "config.yaml").read_text() == config and not (tmp_path / "report.json").exists()
        assert "data.max_length=64" not in (tmp_path / ".hydra" / "overrides.yaml").read_text()  # its Hydra files too
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    third = cli(*QUICK, f"hydra.run.dir={tmp_path}")  # the kernel dropped the dead run's lock
    assert third.returncode == 0 and read_report(tmp_path)["status"] == "ok"


# -- 4. resume past a corrupt checkpoint ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> Path:
    """A finished 4-step run with checkpoints at steps 2 and 4."""
    out = tmp_path_factory.mktemp("checkpointed")
    assert run(compose(*QUICK, "trainer.save_steps=2"), out)["status"] == "ok"
    assert {p.name for p in (out / "checkpoints").iterdir()} == {"checkpoint-2", "checkpoint-4"}
    return out


def _truncate_newest(checkpointed: Path, tmp_path: Path, name: str) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(checkpointed, run_dir)
    bad = run_dir / "checkpoints" / "checkpoint-4" / name
    with open(bad, "r+b") as f:
        f.truncate(bad.stat().st_size // 2)
    return run_dir


@pytest.mark.parametrize("name", ["optimizer.pt", "adapter_model.safetensors", "trainer_state.json"])
def test_resume_skips_a_truncated_newest_checkpoint_and_names_it(name, checkpointed, tmp_path, caplog):
    run_dir = _truncate_newest(checkpointed, tmp_path, name)
    assert last_checkpoint(run_dir) == str(run_dir / "checkpoints" / "checkpoint-2")
    assert f"resume: skipping {run_dir / 'checkpoints' / 'checkpoint-4'}: {name}: " in caplog.text


def test_resume_after_a_corrupt_checkpoint_trains_to_the_end(checkpointed, tmp_path):
    run_dir = _truncate_newest(checkpointed, tmp_path, "optimizer.pt")
    rep = run(compose(*QUICK, "trainer.save_steps=2", "resume=true"), run_dir)
    assert rep["status"] == "ok", rep["error"]
    assert rep["resumed_from"].endswith("checkpoint-2") and rep["loss"]["curve"][-1][0] == 4


# -- 5. a full disk -------------------------------------------------------------------------------------------
def _file_size_limit(limit: int):
    def preexec():  # in the child: writing past `limit` bytes fails with EFBIG, as a full disk fails with ENOSPC
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def test_a_full_disk_prints_the_summary_and_keeps_the_earlier_report(tmp_path):
    earlier = json.dumps({"status": "ok", "config": {}, "config_hash": "an earlier config"})
    (tmp_path / "report.json").write_text(earlier)
    # dataloader=basic: workers pass batches through shared-memory files, which the limit would stop too
    proc = subprocess.run([sys.executable, "-m", "src.run", *QUICK, "dataloader=basic", f"hydra.run.dir={tmp_path}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=_file_size_limit(8000))
    assert proc.returncode == 1
    assert "trainsweep report:" in proc.stdout and "throughput" in proc.stdout  # the numbers reached the screen
    assert f"report not saved: {tmp_path / 'report.json'}: [Errno 27] File too large" in proc.stderr
    assert (tmp_path / "report.json").read_text() == earlier  # never half a file
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_full_disk_leaves_the_earlier_sweep_summary_whole(tmp_path):
    from tests.test_sweep import _report

    def add_jobs(sizes):
        for size in sizes:
            _write_report(tmp_path / f"batch={size}", **_report(f"batch={size}", size, 1, 100.0 * size))

    add_jobs([2, 4])
    summary.write(tmp_path)
    before = (tmp_path / "summary.csv").read_text()
    add_jobs([8, 16, 32, 64, 128])  # a longer table than the disk has room for
    proc = subprocess.run([sys.executable, "-c", "import sys; from src.report import summary; summary.write(sys.argv[1])",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          preexec_fn=_file_size_limit(len(before) + 20))
    assert proc.returncode == 1 and "File too large" in proc.stderr
    assert (tmp_path / "summary.csv").read_text() == before
    assert not list(tmp_path.glob(".*.tmp"))


# -- 10. config errors before heavy imports ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["trainer.lr=-1", "resume=true"])
def test_a_config_error_answers_before_anything_heavy_is_imported(bad, tmp_path):
    code = ("import sys; from pathlib import Path; from src.config.compose import compose; from src.run import run\n"
            "rep = run(compose(sys.argv[1:2]), Path(sys.argv[2]))\n"
            "print(rep['status'], sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, bad, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    status, imported = proc.stdout.strip().splitlines()[-1].split(" ", 1)
    gpu_devices = any(Path("/dev").glob("nvidia[0-9]*"))  # there torch answers whether CUDA works
    assert status == "config_error" and imported == ("['torch']" if gpu_devices else "[]"), proc.stdout
