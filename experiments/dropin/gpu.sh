#!/usr/bin/env bash
# The drop-in on the corpus's scripts at real width, one card, one call: the plain-Trainer anchor, then each script
# as written (P) and through the zero-line launcher `python -m src.run speedup -- python script.py` (S), each its
# own process, the script's own clock (experiments/dropin/record.py), 60 steps, every loss logged.
#   bash experiments/dropin/gpu.sh            # full depth: Qwen3-4B LoRA classifier bs 8, Llama-3.2-3B TRL SFT LoRA bs 8
#   LAYERS=4 bash experiments/dropin/gpu.sh   # 4 layers of the real widths (iterating)
#   REPEATS=2 ...                             # P S P S per script, while the call has time (BUDGET_S, default 420 s)
#   SEEDS="1 2" SCRIPTS=lora_classifier ...   # one P S pair per seed (other LoRA and head init, other row order)
#   MODES="sped plain" ANCHOR_LAST=1 ...      # a short call: S first, the anchor last
#   TRAINSWEEP_VERIFY_WARM_PASSES=1 ...       # next: speedup()'s A/B times its rounds twice and keeps both passes'
#                                             # rates (does the plain arm's first sight of each shape explain call 4's gap?)
# Device: one GPU. Carry .whl (make wheels, with --trl: scripts/gpu_wheels.sh --trl) and .gpu (the anchor script,
# copied from the shared anchors).
# Results in $OUT: runs.jsonl (a line per run, written as it ends), anchors.jsonl, dropin.log (every run's output).
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
FX=/tmp/dropin_fx
python3 experiments/dropin/gpu_fixtures.py $FX "${LAYERS:-}" || exit 1
LOG=$OUT/dropin.log
anchor() { python3 .gpu/hf_trainer_baseline.py full bf16_sdpa_b8 2>>"$LOG" | python3 scripts/stamp_call.py | tee "$OUT/anchors.jsonl"; }
[ -z "${ANCHOR_LAST:-}" ] && anchor
COMMON="--max_steps 60 --per_device_train_batch_size 8 --learning_rate 1e-4 --bf16 true --logging_steps 1 --report_to none --save_strategy no"
args() {  # SCRIPT OUT_DIR
  case $1 in
    lora_classifier) echo "--config_name $FX/qwen3_4b --tokenizer_name $FX/tok --train_file $FX/cls.csv --output_dir $2 $COMMON" ;;
    trl_sft_lora) echo "--config_name $FX/llama_3b --tokenizer_name $FX/tok --dataset_name $FX/sft --use_peft --lora_r 16 --lora_alpha 32 --lora_target_modules all-linear --max_length 1024 --output_dir $2 $COMMON" ;;
  esac
}
for i in $(seq ${REPEATS:-1}); do
 for seed in ${SEEDS:-0}; do
  for script in ${SCRIPTS:-lora_classifier trl_sft_lora}; do
    for mode in ${MODES:-plain sped}; do
      if [ $SECONDS -gt ${BUDGET_S:-420} ]; then echo "skipped $script $mode: ${SECONDS}s into the call"; continue; fi
      launch=""; [ $mode = sped ] && launch="python3 -m src.run speedup --"
      t0=$SECONDS
      RECORD=$OUT/runs.jsonl timeout ${RUN_S:-180} $launch python3 experiments/dropin/record.py tests/corpus/scripts/$script.py \
        $(args $script /tmp/dropin_runs/$script-$mode-$i-$seed) --seed $seed >>"$LOG" 2>&1
      echo "$script $mode $i seed $seed: exit $? in $((SECONDS - t0)) s"
    done
  done
 done
done
[ -n "${ANCHOR_LAST:-}" ] && anchor  # a short call: the runs first, the anchor while time is left
for script in ${SCRIPTS:-lora_classifier trl_sft_lora}; do
  for seed in ${SEEDS:-0}; do python3 experiments/dropin/agree.py "$OUT/runs.jsonl" $script $seed; done
done
