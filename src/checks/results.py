"""A check's result, {check, status: pass|warn|fail|info, value, expected, hint}, and the line that counts them."""
from __future__ import annotations


def result(check: str, status: str, value, expected, hint: str = "") -> dict:
    return {"check": check, "status": status, "value": value, "expected": expected, "hint": hint}


def summary(checks: list[dict]) -> str:
    counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail", "info")}
    return f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail" + \
        (f", {counts['info']} not judged (info)" if counts["info"] else "")
