#!/usr/bin/env bash
# Does KoBART (seq2seq) at bs 16 give 1.66x the samples/s of bs 8 (experiments/kobart_batch/README.md):
# the experiment's own sweep, bs 8/16 x grad_accum 1/2, KoBART shape.
# Device: one GPU (nvidia-h100-x1). Carry .whl (scripts/gpu_wheels.sh).
#   bash experiments/kobart_batch/gpu.sh
# Results: $OUT/kobart_reports.jsonl, summary.{md,csv}, plots, kobart.log.
set -uo pipefail
source scripts/gpu_setup.sh || exit 1
RUN_LOG=$OUT/kobart.log REPORTS=$OUT/kobart_reports.jsonl
sweep kobart experiment=kobart_batch logger=none
