"""Append a run's report.json, labelled, to a JSONL file: many runs come back from the GPU as one file."""
import json
import sys

label, report_path, out_path = sys.argv[1:4]
with open(report_path) as f:
    report = json.load(f)
report["label"] = report.pop("label", label)
with open(out_path, "a") as f:
    f.write(json.dumps(report, default=str) + "\n")
