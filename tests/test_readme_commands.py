"""README.md as a doctest: every fenced command runs as written, on a CPU, in the order the page gives them (the
first hour's later steps read what its earlier ones wrote), and every relative link of README.md and docs/*.md
leads to a file that exists (and to a heading that exists, where it names one).

The convention is the README's own, stated under its quick start: a command whose comment says `[gpu]` needs a
GPU and is not run here; `[long]` ones run only without `-m "not slow"` (make test-all). `make test` itself is
checked with `make -n` (running it here would run this test again). Commands run in a scratch directory holding
a link to tests/ (the README's data files), with `python` the interpreter running the tests."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)
TAG = re.compile(r"#\s*\[(gpu|long)\]")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def commands(text: str) -> list[tuple[str, str, str | None]]:
    """(language, command, tag) for each command: a bash block's lines (a trailing backslash joins the next), a
    python block whole. The tag is `gpu`, `long` or None."""
    out = []
    for lang, body in FENCE.findall(text):
        if lang == "python":
            tag = TAG.search(body)
            out.append((lang, body, tag and tag.group(1)))
            continue
        for line in body.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                tag = TAG.search(line)
                out.append((lang, line.strip(), tag and tag.group(1)))
    return out


def test_the_readme_marks_its_commands_and_keeps_to_a_guides_length():
    found = commands(README.read_text())
    assert len(README.read_text().splitlines()) <= 300
    runnable = [c for _, c, tag in found if tag is None]
    assert ("bash", "make run     # [long] sets up .venv, trains the main job on the CPU, prints and writes its report",
            "long") in found
    assert any("trainsweep.load(" in c for c in runnable) and any(" -m " in c for c in runnable)
    assert any(tag == "gpu" for _, _, tag in found)


def _run(lang: str, command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}
    if lang == "python":
        return subprocess.run([sys.executable, "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
    args = shlex.split(command, comments=True)
    if args[0] == "python":
        args[0] = sys.executable
    elif args[0] == "make":  # the checkout's Makefile, with the venv it made (the README's make commands)
        args = ["make", "-C", str(ROOT), *args[1:]]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def _check(found, tmp_path):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    for lang, command, _ in found:
        proc = _run(lang, command, tmp_path)
        assert proc.returncode == 0, f"README command failed (exit {proc.returncode}): {command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_every_cpu_command_of_the_readme_runs_and_exits_0(tmp_path):
    _check([c for c in commands(README.read_text()) if c[2] is None], tmp_path)


@pytest.mark.slow
def test_the_long_commands_of_the_readme_run(tmp_path):
    if subprocess.run(["make", "-C", str(ROOT), "-q", ".venv/.installed"]).returncode != 0:
        pytest.skip(".venv is not set up for the current pyproject.toml: make run would install packages")
    long = [(lang, c.replace("make test", "make -n test") if c.startswith("make test") else c, tag)
            for lang, c, tag in commands(README.read_text()) if tag == "long"]
    _check(long, tmp_path)


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_that_exists(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and (dest / "README.md" if dest.is_dir() else dest).suffix == ".md":
            if anchor not in _anchors(dest / "README.md" if dest.is_dir() else dest):
                broken.append(target)
    assert broken == [], f"{page.name}: links to nothing: {broken}"
