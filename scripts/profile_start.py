"""Where a run's host seconds go, as cProfile sees them: `python scripts/profile_start.py OUT.prof [src.run overrides]`
runs `python -m src.run ...` under cProfile and writes the profile before the runner's fast exit (children.exit_now
ends the process without the interpreter's teardown, where `python -m cProfile` would write it). A short run
(trainer.max_steps=3) shows the start: imports, the build, the checks, the first step's compile."""
import cProfile
import runpy
import sys

sys.path.insert(0, ".")
from src.base import children  # noqa: E402

out = sys.argv.pop(1)
if sys.argv[1:3] == ["-m", "src.run"]:  # started as `$LAUNCH -m src.run ...` (scripts/gpu_setup.sh's run)
    del sys.argv[1:3]
profile = cProfile.Profile()
exit_now = children.exit_now


def dump_then_exit(code: int = 0):
    profile.disable()
    profile.dump_stats(out)
    exit_now(code)


children.exit_now = dump_then_exit
profile.enable()
runpy.run_module("src.run", run_name="__main__", alter_sys=True)
dump_then_exit(0)
