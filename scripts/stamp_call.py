"""Stamp each JSON line of stdin with this device call's id and host, to stdout: the plain-Trainer anchor script
(one JSON line per config) writes no call of its own, and a ratio takes rows of one call (experiments/figures.py).
    python3 .gpu/hf_trainer_baseline.py full NAME | python3 scripts/stamp_call.py | tee anchors.jsonl
Lines that are not JSON objects pass unchanged."""
import json
import os
import socket
import sys

for line in sys.stdin:
    try:
        row = json.loads(line)
    except ValueError:
        row = None
    if isinstance(row, dict) and os.environ.get("CALL_ID"):
        row.setdefault("call", os.environ["CALL_ID"])
        row.setdefault("host", socket.gethostname())
        line = json.dumps(row) + "\n"
    sys.stdout.write(line)
    sys.stdout.flush()
