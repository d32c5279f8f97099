"""What a sweep's summary must say before its ranking: whether the ranking can be trusted at all, which plan
chose the jobs that ran, and why jobs that did not finish failed."""
from __future__ import annotations

PLAN_FILE = "plan.json"  # the sweep's plan as the launcher ran it (src/plan/sweep.py's record)
