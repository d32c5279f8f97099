"""A check's result, {check, status: pass|warn|fail|info|not_run, value, expected, hint}, and the line that counts
them. not_run: the check could not run on this setup (its error is the value); the others still judge."""
from __future__ import annotations


def result(check: str, status: str, value, expected, hint: str = "") -> dict:
    return {"check": check, "status": status, "value": value, "expected": expected, "hint": hint}


def summary(checks: list[dict]) -> str:
    counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail", "info", "not_run")}
    return f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail" + \
        (f", {counts['info']} not judged (info)" if counts["info"] else "") + \
        (f", {counts['not_run']} could not run" if counts["not_run"] else "")
