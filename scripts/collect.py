"""Append a run's report.json, labelled, to a JSONL file: many runs come back from the GPU as one file.
    python scripts/collect.py LABEL REPORT.json OUT.jsonl [--line]
--line also prints the run's headline numbers on one line (what a GPU call shows as each run ends)."""
import json
import os
import socket
import sys

label, report_path, out_path = sys.argv[1:4]
with open(report_path) as f:
    report = json.load(f)
report["label"] = report.pop("label", label)
if os.environ.get("CALL_ID"):  # the device call this row came from (experiments/figures.py: a ratio takes rows of one call)
    report["call"] = os.environ["CALL_ID"]
    report["host"] = socket.gethostname()
with open(out_path, "a") as f:
    f.write(json.dumps(report, default=str) + "\n")

if "--line" in sys.argv[4:]:
    th, fl, mem, pred, step = (report.get(key) or {} for key in
                               ("throughput", "flops", "memory_gb", "memory_predicted_gb", "step_time_s"))
    ci = f" ({th['real_tokens_per_s_low']:,.0f}-{th['real_tokens_per_s_high']:,.0f})" if th.get("real_tokens_per_s_low") else ""
    print(f"  {report['status']} real tok/s {th.get('real_tokens_per_s') or 0:,.0f}{ci}  MFU {fl.get('mfu') or 0:.1%}"
          f"  step {step.get('mean')}  busy {report.get('gpu_busy_fraction')}  peak {mem.get('peak_allocated')}"
          f"  pred {pred.get('peak_allocated')}  compile {report.get('compile')}  timing {report.get('timing_s')}"
          f"  flags {(report.get('flags') or {}).get('reasons')}  {report.get('error') or ''}")
