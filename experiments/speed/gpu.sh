#!/usr/bin/env bash
# The speed table on one GPU in one call (the device tool carries .whl and .gpu):
#   bash experiments/speed/gpu.sh iterate   # 4 layers of Qwen3-4B width: every lever, quick (per-layer speed carries over)
#   bash experiments/speed/gpu.sh table     # full depth, with the plain-Trainer anchors in the same call
#   bash experiments/speed/gpu.sh memtrace [full]  # what is alive at the peak (4 layers, or full depth), beside the memory model
# Each run appends its report.json, labelled, to $OUT/reports.jsonl as soon as it ends: a cut call keeps its rows.
# Wheels: scripts/gpu_wheels.sh --liger, plus the anchor: mkdir -p .gpu && cp <anchors>/hf_trainer_baseline.py .gpu/
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
what=${1:-iterate}
run() {  # LABEL OVERRIDES...
  local label=$1; shift
  local t0=$SECONDS
  timeout "${RUN_TIMEOUT:-240}" python3 -m src.run $Q "$@" hydra.run.dir=/tmp/speed/$label >> "$OUT/speed.log" 2>&1
  local rc=$?
  echo "$label: exit $rc, $((SECONDS - t0)) s" | tee -a "$OUT/speed.log"
  [ -f /tmp/speed/$label/report.json ] && python3 scripts/collect.py "$label" /tmp/speed/$label/report.json "$OUT/reports.jsonl"
  python3 - "$OUT/reports.jsonl" "$label" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
r = [x for x in rows if x["label"] == sys.argv[2]]
if r:
    r = r[-1]; th = r.get("throughput") or {}; fl = r.get("flops") or {}; m = r.get("memory_gb") or {}; p = r.get("memory_predicted_gb") or {}
    print(f"  {r['status']} real tok/s {th.get('real_tokens_per_s') or 0:,.0f}  MFU {fl.get('mfu') or 0:.1%}  step {(r.get('step_time_s') or {}).get('mean')}"
          f"  busy {r.get('gpu_busy_fraction')}  peak {m.get('peak_allocated')}  pred {p.get('peak_allocated')}  compile {r.get('compile')}  timing {r.get('timing_s')}  {r.get('error') or ''}")
PY
}
B="peft.adapter_dtype=auto trainer.max_steps=40 measure.warmup_steps=10"
C="trainer.torch_compile=true"
P8="padding=packed batch.tokens=8192"
if [ "$what" = iterate ]; then
  Q="model=qwen3 model.arch.num_hidden_layers=4 logger=none"
  run fixed_bs32 $B batch=32 padding=max_length
  run buckets_bs32 $B batch=32 padding=buckets
  run packed8k $B $P8
  run packed8k_sdpa_ref $B $P8 attention=sdpa
  run packed8k_compile $B $P8 $C
  run fixed_bs32_compile $B batch=32 padding=max_length $C
  run packed8k_compile_again $B $P8 $C
  run packed8k_compile_fp32_adapters $B $P8 $C peft.adapter_dtype=float32
  run packed16k_compile $B padding=packed batch.tokens=16384 $C
  run packed2k_compile $B padding=packed batch.tokens=2048 $C
  run packed2k_graphs $B padding=packed batch.tokens=2048 $C trainer.compile_mode=reduce-overhead
  run packed8k_liger $B $P8 trainer.use_liger_kernel=true
  run lm_fixed_bs32 $B task=causal_lm batch=32 padding=max_length
  run lm_packed8k_compile $B task=causal_lm $P8 $C
  run lm_packed8k_liger $B task=causal_lm $P8 trainer.use_liger_kernel=true
fi
if [ "$what" = table ]; then  # full depth; anchors first, in the same call on the same card
  python3 .gpu/hf_trainer_baseline.py full seed_before,bf16_sdpa_b8,bf16_sdpa_b32_group 2>>"$OUT/speed.log" | tee "$OUT/anchors.jsonl"
  Q="model=qwen3 logger=none"
  B="trainer.max_steps=36 measure.warmup_steps=8"
  run fixed_bs32 $B batch=32 padding=max_length
  run buckets_bs32 $B batch=32 padding=buckets
  run packed8k $B $P8
  run fixed_bs32_compile $B batch=32 padding=max_length $C
  run packed8k_compile $B $P8 $C
  run packed12k_compile $B padding=packed batch.tokens=12288 $C
  run packed8k_compile_again $B $P8 $C
fi
if [ "$what" = table2 ]; then  # full depth: the seeds' bs 8 regime (with its anchor), causal LM, Liger, adapters
  python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b8 2>>"$OUT/speed.log" | tee "$OUT/anchors.jsonl"
  Q="model=qwen3 logger=none"
  B="trainer.max_steps=36 measure.warmup_steps=8"
  run packed2k_compile $B padding=packed batch.tokens=2048 $C
  run lm_fixed_bs16_compile $B task=causal_lm batch=16 padding=max_length $C
  run lm_packed5k_compile $B task=causal_lm padding=packed batch.tokens=5120 $C
  run lm_packed8k_liger $B task=causal_lm $P8 trainer.use_liger_kernel=true
  run packed8k_liger $B $P8 trainer.use_liger_kernel=true
  run packed8k_compile_liger $B $P8 $C trainer.use_liger_kernel=true
  run packed8k_compile_fp32_adapters $B $P8 $C peft.adapter_dtype=float32
  run bs8_default $B batch=8
  run packed2k_graphs $B padding=packed batch.tokens=2048 $C trainer.compile_scope=model trainer.compile_mode=reduce-overhead
fi
if [ "$what" = memory ]; then  # full depth: the memory model's prediction beside the measured peak (goal 5), QLoRA's build
  Q="model=qwen3 logger=none"
  B="trainer.max_steps=14 measure.warmup_steps=4 measure.profile_steps=2"
  run mem_fixed_bs32 $B batch=32 padding=max_length
  run mem_packed8k_compile $B $P8 $C
  run mem_lm_fixed_bs16_compile $B task=causal_lm batch=16 padding=max_length $C
  run mem_lm_packed8k_liger $B task=causal_lm $P8 trainer.use_liger_kernel=true
  run mem_gc_all_bs32 $B batch=32 padding=max_length trainer.gradient_checkpointing=true
  run mem_qlora_packed8k $B $P8 peft=qlora
fi
if [ "$what" = memtrace ]; then  # 4 layers of real width: what is alive at the peak, probe copies at 1-4 layers
  M="model=qwen3 model.arch.num_hidden_layers=4 trainer.max_steps=8 measure.warmup_steps=2 measure.profile_steps=0"
  specs=("fixed_bs32 batch=32 padding=max_length" "packed8k_compile padding=packed_8k trainer.torch_compile=true"
         "lm_fixed_bs16_compile task=causal_lm batch=16 padding=max_length trainer.torch_compile=true"
         "gc_all_bs32 batch=32 padding=max_length trainer.gradient_checkpointing=true")
  if [ "${2:-}" = full ]; then  # full depth, and the profiled tail on and off
    M="model=qwen3 trainer.max_steps=8 measure.warmup_steps=2"
    specs=("full_fixed_bs32 batch=32 padding=max_length measure.profile_steps=0"
           "full_fixed_bs32_profiled batch=32 padding=max_length measure.profile_steps=2"
           "full_gc_all_bs32 batch=32 padding=max_length trainer.gradient_checkpointing=true measure.profile_steps=0"
           "full_packed8k_compile padding=packed_8k trainer.torch_compile=true measure.profile_steps=0")
  fi
  for spec in "${specs[@]}"; do
    set -- $spec; label=$1; shift
    timeout 150 python3 experiments/speed/memory_trace.py "$OUT/memtrace.jsonl" "$label" $M "$@" 2>>"$OUT/memtrace.log" | tee -a "$OUT/memtrace.txt"
  done
fi
if [ "$what" = memory2 ]; then  # the memory model after its fixes, on the runs it missed
  Q="model=qwen3 logger=none"
  B="trainer.max_steps=14 measure.warmup_steps=4 measure.profile_steps=2"
  run mem_qlora_packed8k $B $P8 peft=qlora
  run mem_packed8k $B $P8
  run mem_buckets_bs32 $B batch=32 padding=buckets
fi
if [ "$what" = sweep ]; then  # sweep=levers as a real multirun, beside the best plain-Trainer config, full depth
  python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b32_group 2>>"$OUT/speed.log" | tee "$OUT/anchors.jsonl"
  timeout 480 python3 -m src.run -m sweep=levers model=qwen3 logger=none hydra.sweep.dir=/tmp/levers >> "$OUT/speed.log" 2>&1
  echo "sweep exit $?"
  cp /tmp/levers/summary.* "$OUT/" 2>/dev/null; for d in /tmp/levers/*/; do
    [ -f "$d/report.json" ] && python3 scripts/collect.py "$(basename "$d")" "$d/report.json" "$OUT/reports.jsonl"; done
  cat /tmp/levers/summary.md 2>/dev/null
fi
if [ "$what" = tests ]; then  # every lever x task on a 4-layer model of real width (tests/test_gpu.py)
  timeout "${TEST_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py --durations=5 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
