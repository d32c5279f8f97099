"""Host cost of the pandas_concat bad habit as the run grows: the framework's own BadHabits callback,
called once per step as the Trainer would, timed over windows of 100 steps.

    python experiments/loop_overheads/concat_cost.py 50000
"""
import json
import platform
import statistics
import sys
import time
from types import SimpleNamespace

sys.path.insert(0, ".")
from src.train.debug import BadHabits  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
habit = BadHabits(SimpleNamespace(empty_cache=False, item_sync=False, pandas_concat=True))
state = SimpleNamespace(global_step=0, epoch=0.0)
windows = {w for w in (100, 1000, 10000, 50000, 100000) if w <= steps}
times, rows = [], []
for step in range(1, steps + 1):
    state.global_step = step
    t = time.perf_counter()
    habit.on_step_end(None, state, None)
    times.append(time.perf_counter() - t)
    if step in windows:
        window = times[-100:]
        rows.append({"step": step, "rows_in_frame": len(habit.frame), "concat_ms_mean": round(statistics.fmean(window) * 1e3, 3),
                     "concat_ms_p90": round(sorted(window)[89] * 1e3, 3), "total_s_so_far": round(sum(times), 2)})
        print(json.dumps(rows[-1]), flush=True)
print(json.dumps({"machine": f"{platform.processor() or platform.machine()}, python {platform.python_version()}",
                  "pandas": __import__("pandas").__version__}))
