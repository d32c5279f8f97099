"""`trainsweep measure -- python train.py ARGS`: the drop-in on a script nobody edits, as `accelerate launch` runs
one. The command runs as typed, with one difference: every Trainer it builds is attached (hook.py) before it
trains. `trainsweep speedup -- ...` applies speedup alone; `trainsweep measure --speedup -- ...` both. The command's
exit code is the launcher's, and its reports are listed at the end.

In a checkout the same is `python -m src.run measure -- python train.py ARGS`.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from . import hook

PACKAGE = Path(__file__).resolve().parents[1]  # trainsweep's folder (src/ in a checkout)
SITE = Path(__file__).resolve().parent / "site"  # the folder holding the sitecustomize that attaches


def parser(mode: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"trainsweep {mode}", description="Run a training command with trainsweep attached to every Hugging Face "
        "Trainer it builds: " + ("the checks, the measurement and report.json at train end"
                                 if mode == "measure" else "speedup's levers, each said on or off with why"),
        epilog=f"example: trainsweep {mode} -- python train.py --output_dir out  (exit code: the command's)")
    if mode == "measure":
        p.add_argument("--speedup", action="store_true", help="apply trainsweep.speedup too (what it did goes in the report)")
        p.add_argument("--out", help="write the reports here (default: <output_dir>/trainsweep of each Trainer)")
    p.add_argument("--tokens", type=int, help="speedup: the packed micro-batch's token budget (default: the script's rows a step)")
    p.add_argument("--no-verify", action="store_true", help="speedup: apply the levers without timing them first")
    p.add_argument("--fix-loss-scale", action="store_true",
                   help="speedup: where the script's accumulated loss is grad_accum x the mean (transformers#47688), fix it")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    return p


def environment(modes: set[str], out: str | None, speedup_args: dict, reports: str) -> dict:
    """The child's environment: the attaching sitecustomize first on PYTHONPATH, and what it should do."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    env.update({hook.MODES: ",".join(sorted(modes)), hook.SPEEDUP_ARGS: json.dumps(speedup_args),
                hook.REPORTS: reports, "TRAINSWEEP_PACKAGE_DIR": str(PACKAGE)})
    if out:
        env[hook.OUT] = str(Path(out).resolve())
    return env


PASSED_ON = (signal.SIGTERM, signal.SIGHUP)  # a scheduler's or `docker stop`'s stop, a closed terminal


def wait_as_a_shell(child) -> int:
    """The command's exit code as a shell gives it: its own, or 128 + N for a death by signal N (130 for Ctrl-C).
    Ctrl-C reaches the command from the terminal as it reaches the launcher, so the launcher waits while the
    script's own handling (a checkpoint saved in `except KeyboardInterrupt`) runs; SIGTERM and SIGHUP, which a
    scheduler sends to the launcher alone, are passed on to the command to handle."""
    def pass_on(signum, frame):
        child.send_signal(signum)

    kept = {sig: signal.signal(sig, pass_on) for sig in PASSED_ON}
    kept[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = child.wait()
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def main(argv: list[str]) -> int:
    mode, rest = argv[0], argv[1:]
    args = parser(mode).parse_args(rest)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser(mode).print_usage(sys.stderr)
        print(f"trainsweep {mode}: no command given (trainsweep {mode} -- python train.py ...)", file=sys.stderr)
        return 2
    modes = {"measure", "speedup"} if mode == "measure" and args.speedup else {mode}
    speedup_args = {k: v for k, v in (("tokens", args.tokens), ("verify", False if args.no_verify else None),
                                       ("fix_loss_scale", args.fix_loss_scale or None)) if v is not None}
    with tempfile.NamedTemporaryFile("r", prefix="trainsweep-reports-", suffix=".txt") as reports:
        env = environment(modes, getattr(args, "out", None), speedup_args, reports.name)
        try:
            child = subprocess.Popen(command, env=env)
        except FileNotFoundError:
            print(f"trainsweep {mode}: command not found: {command[0]}", file=sys.stderr)
            return 127
        code = wait_as_a_shell(child)
        written = [line.strip() for line in reports if line.strip()]
    if "measure" in modes:
        listed = "\n".join(f"  {p}" for p in written) or "  none (no Trainer finished train())"
        print(f"\ntrainsweep measure: {len(written)} report(s)\n{listed}", file=sys.stderr)
    return code
