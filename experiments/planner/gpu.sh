#!/usr/bin/env bash
# sweep.plan=predict against sweep.plan=all on one grid (issue 28): Qwen3-4B width, 4 layers, LoRA; micro-batch
# 4..64 at a fixed effective batch of 64, two paddings; a 10 GB memory cap so the largest micro-batches can't fit.
# Both plans in one device call, one after the other on one machine (carry .whl: scripts/gpu_wheels.sh).
#   bash experiments/planner/gpu.sh all predict   # every cell (the reference ranking and its wall time), then planned
#   bash experiments/planner/gpu.sh predict fit   # planned only (the probe's cost), then sweep=fit on the same model
#   bash experiments/planner/gpu.sh shapes        # a new batch shape's first call at 1, 2 and 4 layers (copies_check.py),
#     with sdpa's default kernels (cuDNN's, where a padding mask is given) and without cuDNN's
#   bash experiments/planner/gpu.sh check         # the speed copies against the real depth at 8 layers (copies_check.py):
#     the cell's own 1-2 line, its own 2-4 line, and the predictor's (pooled host, kernels) beside the measured;
#     CHECK_ARGS="experiment=batch_vs_accum_saturation batch=8,16" for Llama-3.2-3B QLoRA at its 28 layers
#   bash experiments/planner/gpu.sh profiler      # does a profile slow the launches after it (profiler_after.py)? Llama-3.2-3B
#     QLoRA's 8-layer copy at micro-batch 8 (PROFILER_ARGS), timed before and after one profile, then again with
#     TEARDOWN_CUPTI=1
#   bash experiments/planner/gpu.sh gap           # the copies' loop, the run's model, the Trainer's training_step and
#     Trainer.train() in one process (trainer_gap.py): Llama-3.2-3B QLoRA at 28 layers, micro-batch 8 (GAP_ARGS)
#   bash experiments/planner/gpu.sh vcpu          # the host CPU's drift on every vCPU, alone and all at once (vcpu_drift.py)
#   bash experiments/planner/gpu.sh pin           # each vCPU's speed over 30 s at light load (vcpu_drift.py sparse), then
#     host_drift.py's host-bound micro-batch on the vCPU that was fastest, on the slowest, and unpinned (PIN_SECONDS)
#   bash experiments/planner/gpu.sh shapecost     # a new shape's first call, synced (as priced) and inside an unsynced
#     loop (as a run meets it): new_shape_cost.py at micro-batch 32 and 4 (SHAPECOST_BATCHES), 4 layers, dynamic
#   bash experiments/planner/gpu.sh g4_largest    # G4: the largest micro-batch of SOLAR-10.7B and Polyglot-Ko-12.8B
#     (QLoRA, bf16 compute, checkpointing, 16-128 under 24 GB, full depth) by sweep=fit sweep.question=largest, then
#     the brute force: the same grid with sweep.plan=all (G4_PLANS="predict all" by default; G4_MODELS=a,b)
#   bash experiments/planner/gpu.sh g4_fastest    # G4: Llama-3.2-3B bs 8 x ga 2 against bs 16 (QLoRA, fp32 compute,
#     checkpointing, 24 GB) by sweep.question=fastest, then sweep.plan=all (G4_BATCHES: another grid; G4_STEPS: its
#     steps, "trainer.max_steps=30 measure.warmup_steps=5" by default). Both g4s: carry scripts/gpu_wheels.sh --qlora
# Each job's report goes to $OUT/reports.jsonl as it ends; the sweep's summary.md and plots, the predictions
# (.plan/predictions.json) and each cell's prediction.json come back with it.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/planner.log
COMMON="model=qwen3 model.arch.num_hidden_layers=4 logger=none trainer.save_final=false measure.stop_when_stable=true
  trainer.max_steps=26 measure.warmup_steps=3 gpu.memory_cap_gb=10"
# GRID=... for another grid, e.g. G1's 16-24 cells: GRID="batch=2,4,8,16,32,64 batch.effective=64 padding=max_length,dynamic,grouped"
GRID=${GRID:-"batch=4,8,16,32,64 batch.effective=64 padding=max_length,dynamic"}
keep() {  # SWEEP_LABEL: its predictions, the predictor's log, each cell's decision, the planner's lines, its summary
  local dir=$RUNS/$1 d
  cp "$dir/.plan/predictions.json" "$OUT/predictions_$1.json" 2>/dev/null
  cp "$dir/.plan/predict.log" "$OUT/predict_$1.log" 2>/dev/null  # where the prediction's own time went
  for d in "$dir"/*/; do [ -f "$d/prediction.json" ] && python3 -c "
import json,sys; p=json.load(open(sys.argv[1])); print(json.dumps({'job': sys.argv[2], **p, 'config': None}))" "$d/prediction.json" "$(basename "$d")"; done > "$OUT/decisions_$1.jsonl"
  grep -E "sweep.plan|cells ran|#[0-9]+ :|sweep wall time" "$RUN_LOG" | tail -60 > "$OUT/planner_lines_$1.txt"
  mv "$OUT/summary.md" "$OUT/summary_$1.md" 2>/dev/null; mv "$OUT/summary.csv" "$OUT/summary_$1.csv" 2>/dev/null
  for d in "$dir"/*.png; do [ -f "$OUT/${d##*/}" ] && mv "$OUT/${d##*/}" "$OUT/$(basename "$d" .png)_$1.png"; done
}
for what in "$@"; do
if [ "$what" = g4_largest ] || [ "$what" = g4_fastest ]; then  # full-depth QLoRA models: nothing of COMMON's
  if [ "$what" = g4_largest ]; then models=${G4_MODELS:-solar-10.7b,polyglot-ko-12.8b}
    args="sweep=fit sweep.question=largest model=$models peft=qlora precision=bf16 peft.compute_dtype=bfloat16
      trainer.gradient_checkpointing=true gpu.memory_cap_gb=24 batch.size=16,32,64,128 batch.effective=128
      trainer.max_steps=6 measure.warmup_steps=2 logger=none"
    name="g4_largest_${models//,/_}"
  else
    # G4_BATCHES="batch.size=1,2,4,8,16 batch.effective=16": every split of the 16 rows (more cells to skip)
    batches=${G4_BATCHES:-batch.size=8,16 batch.effective=16}
    args="sweep=fit sweep.question=fastest experiment=batch_vs_accum_saturation $batches
      logger=none ${G4_STEPS:-trainer.max_steps=30 measure.warmup_steps=5}"
    name=g4_fastest_llama3.2-3b
    [ -n "${G4_BATCHES:-}" ] && name=${name}_$(echo "$batches" | cut -d' ' -f1 | tr -cd '0-9,' | tr , _)
  fi
  for plan in ${G4_PLANS:-predict all}; do
    REPORTS=$OUT/reports_${name}_$plan.jsonl COMMON="" SWEEP_TIMEOUT=${PLAN_TIMEOUT:-290} \
      sweep "${name}_$plan" $args sweep.plan=$plan
    keep "${name}_$plan"
  done
  continue
elif [ "$what" = check ]; then
  timeout ${CHECK_TIMEOUT:-200} python3 experiments/planner/copies_check.py "$OUT/copies_check.jsonl" logger=none \
    ${CHECK_ARGS:-model=qwen3 model.arch.num_hidden_layers=8 padding=max_length batch=2,8,16,32 batch.effective=64} 2>&1 \
    | grep -v -i warn | tee -a "$RUN_LOG" | tail -24
  continue
elif [ "$what" = profiler ]; then
  for teardown in "" TEARDOWN_CUPTI=1; do  # unset, then set
    env $teardown timeout 150 python3 experiments/planner/profiler_after.py "$OUT/profiler_after.jsonl" \
      ${PROFILER_ARGS:-8 experiment=batch_vs_accum_saturation batch=8} logger=none 2>&1 | grep -v -i warn | tee -a "$RUN_LOG" | tail -6
  done
  continue
elif [ "$what" = vcpu ]; then
  timeout 120 python3 experiments/planner/vcpu_drift.py "$OUT/vcpu_drift.jsonl" ${VCPU_ARGS:-2 20} 2>&1 | tee -a "$RUN_LOG" | tail -20
  continue
elif [ "$what" = pin ]; then
  timeout 90 python3 experiments/planner/vcpu_drift.py "$OUT/vcpu_sparse.jsonl" 0 0 30 2>&1 | tee -a "$RUN_LOG" | tail -3
  read -r fast slow < <(python3 -c "
import json, sys
share = [json.loads(l) for l in open(sys.argv[1]) if 'slow_share' in l][-1]['slow_share']
order = sorted(share, key=lambda c: (share[c], int(c)))
print(order[0], order[-1])" "$OUT/vcpu_sparse.jsonl")
  for pin in "fast:$fast" "slow:$slow" "none:"; do
    cpu=${pin#*:}; how=""; [ -n "$cpu" ] && how="taskset -c $cpu"
    timeout 120 $how python3 experiments/planner/host_drift.py "$OUT/pinned_${pin%%:*}.jsonl" ${PIN_SECONDS:-30} \
      model=qwen3 model.arch.num_hidden_layers=4 padding=max_length batch=2 logger=none 2>&1 | grep -v -i warn | tail -2
    echo "pinned ${pin%%:*} (vCPU ${cpu:-any}): $(python3 -c "
import json, sys
ms = sorted(json.loads(l)['micro_batch_ms'] for l in open(sys.argv[1]))
py = sorted(json.loads(l)['python_work_ms'] for l in open(sys.argv[1]))
q = lambda xs, f: xs[int(f * (len(xs) - 1))]
print(f'{len(ms)} blocks: micro-batch median {q(ms, .5):.1f} ms, 10th-90th {q(ms, .1):.1f}-{q(ms, .9):.1f}; '
      f'python work {q(py, .5):.1f} ({q(py, .1):.1f}-{q(py, .9):.1f})')" "$OUT/pinned_${pin%%:*}.jsonl")" | tee -a "$RUN_LOG"
  done
  continue
elif [ "$what" = shapecost ]; then
  for b in ${SHAPECOST_BATCHES:-32 4}; do
    timeout 150 python3 experiments/planner/new_shape_cost.py "$OUT/new_shape_cost.jsonl" 4 model=qwen3 \
      model.arch.num_hidden_layers=4 batch=$b logger=none 2>&1 | grep -v -i warn | tee -a "$RUN_LOG" | tail -7
  done
  continue
elif [ "$what" = gap ]; then
  timeout ${GAP_TIMEOUT:-240} python3 experiments/planner/trainer_gap.py "$OUT/trainer_gap.jsonl" logger=none \
    ${GAP_ARGS:-experiment=batch_vs_accum_saturation batch=8} 2>&1 | grep -v -i warn | grep -v "it/s" | tee -a "$RUN_LOG" | tail -8
  continue
elif [ "$what" = shapes ]; then
  for kernels in default no_cudnn; do
    extra=""; [ $kernels = no_cudnn ] && extra="env.sdp_backends=[flash,mem_efficient,math]"
    timeout 240 python3 experiments/planner/copies_check.py "$OUT/copies_$kernels.jsonl" model=qwen3 \
      model.arch.num_hidden_layers=4 padding=grouped batch=2,8,32 batch.effective=64 logger=none $extra 2>&1 \
      | grep -v -i warn | tee -a "$RUN_LOG" | tail -12
  done
  continue
elif [ "$what" = fit ]; then  # the two questions (largest micro-batch under the cap, fastest split of 64 rows a step)
  SWEEP_TIMEOUT=${PLAN_TIMEOUT:-290} sweep plan_fit sweep=fit padding=dynamic
else
  SWEEP_TIMEOUT=${PLAN_TIMEOUT:-290} sweep "plan_$what" $GRID sweep.plan=$what
fi
keep "plan_$what"
done
# one file back with everything (a device call returns only a few files)
tgz="planner_$(IFS=_; echo "$*")_$(date +%H%M%S).tgz"  # one per invocation: a device call may hold several
tar czf "/tmp/$tgz" -C "$OUT" --exclude "*.tgz" --exclude planner.log . 2>/dev/null  # outside $OUT: a tar of the
mv "/tmp/$tgz" "$OUT/" && find "$OUT" -type f ! -name "*.tgz" ! -name planner.log -delete  # folder it writes fails
