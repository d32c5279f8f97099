"""The launcher (`trainsweep measure -- CMD`, src/dropin/launch.py) exits and passes signals on as the command alone
would: a death by signal N is 128 + N (it read 256 - N: 241 for SIGTERM), Ctrl-C leaves the script's own
`except KeyboardInterrupt` time to save (the launcher's subprocess.call killed it 0.25 s later), and SIGTERM sent
to the launcher alone (a scheduler's stop) reaches the script (it ran on, orphaned)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a child that says it is ready, then waits for a signal; its handlers write what they did and exit with a code
CHILD = """
import signal, sys, time
from pathlib import Path
mark = Path(sys.argv[1])
def on_term(signum, frame):
    mark.write_text("term")
    sys.exit(7)
signal.signal(signal.SIGTERM, on_term)
(mark.parent / "ready").write_text("")
try:
    time.sleep(60)
except KeyboardInterrupt:
    time.sleep(0.5)  # saving a checkpoint
    mark.write_text("saved")
    sys.exit(3)
"""


def _launch(tmp_path, code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "src.run", "measure", "--", sys.executable, "-c", code, *args],
                            cwd=ROOT, start_new_session=True, stderr=subprocess.PIPE, text=True)


def _ready(tmp_path, launcher) -> None:
    for _ in range(600):
        if (tmp_path / "ready").exists():
            return
        assert launcher.poll() is None, launcher.stderr.read()
        time.sleep(0.05)
    raise AssertionError("the command never started")


def test_a_death_by_signal_exits_as_a_shell_says_it():
    done = subprocess.run([sys.executable, "-m", "src.run", "measure", "--", sys.executable, "-c",
                           "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], cwd=ROOT, capture_output=True,
                          timeout=120)
    assert done.returncode == 128 + signal.SIGTERM


def test_ctrl_c_leaves_the_script_time_to_save(tmp_path):
    launcher = _launch(tmp_path, CHILD, str(tmp_path / "mark"))
    _ready(tmp_path, launcher)
    os.killpg(launcher.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches every process of the group
    assert launcher.wait(timeout=60) == 3 and (tmp_path / "mark").read_text() == "saved"


def test_sigterm_to_the_launcher_reaches_the_script(tmp_path):
    launcher = _launch(tmp_path, CHILD, str(tmp_path / "mark"))
    _ready(tmp_path, launcher)
    launcher.send_signal(signal.SIGTERM)  # to the launcher alone, as a scheduler stops a job
    assert launcher.wait(timeout=60) == 7 and (tmp_path / "mark").read_text() == "term"
