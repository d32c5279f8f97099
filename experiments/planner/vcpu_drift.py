"""Is the host's drift the machine's, or ours? host_drift.py found a fixed piece of pure-Python work taking 9 ms in
some seconds and 16 ms in others on one vCPU of an H200 machine, with no GPU in it. This times the same work on
every vCPU, pinned, in three phases, and writes one JSON line a timing:

- alone: one vCPU at a time, the others idle (what a run's main thread meets when nothing else of ours runs);
- together: every vCPU at once (as a run with busy dataloader workers, or another job, would load them);
- sparse: every vCPU at once, each timing once every SPARSE_EVERY_S and idle between: each vCPU's speed over
  the same seconds, with our own load light (is some vCPU fast all along, so that pinning a run to it pays?).

If the slow phases come at the same moments on every vCPU, the machine's clock sets them; if each vCPU has its own,
something outside this machine does (another tenant on the same physical core). Either way it is outside what a
run can choose; where `together` is slower than `alone`, our own load adds to it.

    python experiments/planner/vcpu_drift.py OUT.jsonl [SECONDS_ALONE_PER_VCPU] [SECONDS_TOGETHER] [SECONDS_SPARSE]
"""
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path


def python_work_s(n: int = 200_000) -> float:
    t = time.perf_counter()
    sum(i * i for i in range(n))
    return time.perf_counter() - t


def ran_on() -> int:
    """The vCPU this process last ran on (/proc/self/stat's 39th field)."""
    return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def siblings(cpu: int) -> str:
    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    return path.read_text().strip() if path.exists() else "?"


SPARSE_EVERY_S = 0.2


def _worker(cpu: int, start: float, seconds: float, phase: str, queue) -> None:
    os.sched_setaffinity(0, {cpu})
    rows = []
    while time.time() - start < seconds:
        t = time.time()
        rows.append({"phase": phase, "cpu": cpu, "t": round(t - start, 3), "ms": python_work_s() * 1e3,
                     "ran_on": ran_on()})
        if phase == "sparse":
            time.sleep(max(0.0, SPARSE_EVERY_S - (time.time() - t)))
    queue.put(rows)


def _run(cpus: list[int], seconds: float, phase: str) -> list[dict]:
    queue = mp.get_context("fork").Queue()
    start = time.time()
    procs = [mp.get_context("fork").Process(target=_worker, args=(c, start, seconds, phase, queue)) for c in cpus]
    for p in procs:
        p.start()
    rows = [r for _ in procs for r in queue.get()]
    for p in procs:
        p.join()
    return rows


def main(out: str, alone_s: float = 2.0, together_s: float = 20.0, sparse_s: float = 0.0) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    with open(out, "a") as f:
        f.write(json.dumps({"cpus": cpus, "siblings": {c: siblings(c) for c in cpus}}) + "\n")
        for phase, groups, seconds in (("alone", [[c] for c in cpus], alone_s), ("together", [cpus], together_s),
                                       ("sparse", [cpus], sparse_s)):
            for group in groups if seconds > 0 else []:
                rows = _run(group, seconds, phase)
                f.write("".join(json.dumps(r) + "\n" for r in rows))
                f.flush()
                ms = sorted(r["ms"] for r in rows)
                if phase == "sparse":  # each vCPU's share of slow timings (over 1.3x the fastest median)
                    fast = min(_median([r["ms"] for r in rows if r["cpu"] == c]) for c in group)
                    share = {c: round(sum(r["ms"] > 1.3 * fast for r in rows if r["cpu"] == c)
                                      / max(1, sum(r["cpu"] == c for r in rows)), 2) for c in group}
                    f.write(json.dumps({"phase": phase, "slow_share": share}) + "\n")
                    print(f"sparse: each vCPU's share of slow timings {share}", flush=True)
                print(f"{phase} on {len(group)} vCPU(s) from {group[0]}: {len(ms)} timings, median {ms[len(ms) // 2]:.1f} ms,"
                      f" 10th-90th {ms[len(ms) // 10]:.1f}-{ms[9 * len(ms) // 10]:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *map(float, sys.argv[2:]))
