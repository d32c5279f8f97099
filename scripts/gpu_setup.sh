#!/usr/bin/env bash
# On the GPU machine, sourced from the repo root by every experiments/*/gpu.sh and scripts/gpu_tests.sh:
# install the carried .whl/ wheels into /tmp/site and put them and the repo on PYTHONPATH, show what the run
# will use, then define the run-and-collect functions the scripts share:
#   run LABEL OVERRIDES...  one `python -m src.run` in $RUNS/LABEL, cut at $RUN_TIMEOUT s; its output appended
#                           to $RUN_LOG, its report.json appended, labelled, to $REPORTS; prints one summary line
#   sweep LABEL ARGS...     one multirun into $RUNS/LABEL (RESUME=1: keep its finished jobs), cut at $SWEEP_TIMEOUT s; each job's report appended
#                           to $REPORTS (labelled by the job's dir) as soon as it is written, with its summary
#                           line; at the end the sweep's summary.* and plots copied to $OUT
#   collect LABEL REPORT.json [--line]   append one report (scripts/collect.py), if the run left one
# A script sets after sourcing: RUN_LOG, REPORTS, COMMON (overrides every run and sweep of it shares) and
# LAUNCH (what starts a run: python3, or e.g. "torchrun --nproc_per_node=2"; `LAUNCH=... run ...` for one run).
# From the environment: OUT (what comes back; the device tool sets it), RUNS, RUN_TIMEOUT, SWEEP_TIMEOUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# datasets 5.x needs pyarrow >= 24; an older pyarrow there takes datasets 4.0 (pyarrow >= 15) from .whl/alt/
if ! python3 -c "import datasets" 2>/dev/null && ls .whl/alt/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/alt/*.whl
fi
python3 - <<'PY'
import importlib
for name in ("torch", "transformers", "peft", "accelerate", "datasets", "pyarrow", "hydra", "omegaconf",
             "pandas", "matplotlib", "pynvml", "bitsandbytes", "wandb", "submitit"):
    try:
        mod = importlib.import_module(name)
        print(f"{name} {getattr(mod, '__version__', '?')}", end="; ")
    except Exception as exc:
        print(f"{name} MISSING ({type(exc).__name__})", end="; ")
import torch
print("\n" + (torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"))
PY

OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# One id per device call, written into every collected row (scripts/collect.py): a ratio compares rows of one call.
export CALL_ID=${CALL_ID:-$(date -u +%Y%m%dT%H%M%S)-$(hostname)}
echo "$CALL_ID" > "$OUT/call_id"
RUNS=${RUNS:-/tmp/runs}
# A device call ends at 10 minutes: a run cut before that still leaves time to collect what finished.
RUN_TIMEOUT=${RUN_TIMEOUT:-540} SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-540}
RUN_LOG=$OUT/run.log REPORTS=$OUT/reports.jsonl COMMON="" LAUNCH=python3

collect() {  # LABEL REPORT.json [--line]
  if [ -f "$2" ]; then python3 scripts/collect.py "$1" "$2" "$REPORTS" "${@:3}"; else echo "  $1: no report.json"; fi
}

run() {  # LABEL OVERRIDES...
  local label=$1; shift
  local dir=$RUNS/$label t0=$SECONDS rc
  rm -rf "$dir"  # src.run skips a run its dir says finished: a rerun on a warm machine would collect the old report
  timeout "$RUN_TIMEOUT" $LAUNCH -m src.run $COMMON "$@" hydra.run.dir="$dir" >> "$RUN_LOG" 2>&1
  rc=$?
  echo "$label: exit $rc, $((SECONDS - t0)) s" | tee -a "$RUN_LOG"
  collect "$label" "$dir/report.json" --line
}

sweep() {  # LABEL ARGS...
  local label=$1; shift
  local dir=$RUNS/$label t0=$SECONDS rc d pid
  # as in run: finished jobs in an old sweep dir would be skipped, not rerun; RESUME=1 wants exactly that (a sweep
  # longer than one device call, continued in the next on the same warm machine with RUNS under outputs/)
  [ -n "${RESUME:-}" ] || rm -rf "$dir"
  timeout "$SWEEP_TIMEOUT" python3 -m src.run -m $COMMON "$@" hydra.sweep.dir="$dir" >> "$RUN_LOG" 2>&1 &
  pid=$!
  # each job's report goes to $OUT as soon as it is written: a device call cut mid-sweep keeps the finished jobs
  while kill -0 "$pid" 2>/dev/null; do sleep 5; _collect_new "$dir"; done
  wait "$pid"; rc=$?
  _collect_new "$dir"
  echo "$label: exit $rc, sweep wall time $((SECONDS - t0)) s" | tee -a "$RUN_LOG"
  cp "$dir"/summary.* "$dir"/*.png "$OUT/" 2>/dev/null
}

_collect_new() {  # SWEEP_DIR: collect each job report not collected yet, one line each
  local d
  for d in "$1"/*/; do
    if [ -f "$d/report.json" ] && [ ! -e "$d/.collected" ]; then
      collect "$(basename "$d")" "$d/report.json" --line && touch "$d/.collected"
    fi
  done
}
