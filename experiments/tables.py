"""The result tables of experiments/*/README.md, built from the committed result files, so that no figure in a
README can drift from its data. Each experiment's builders live beside it (experiments/<name>/tables.py, with a
TABLES dict: table name -> (its README, its builder)); what they share is experiments/figures.py.

A README marks each table built here: `<!-- table: NAME -->` on the line before it, `<!-- /table -->` after.
    python experiments/tables.py           # exit 1 naming each table whose README copy differs from its files
    python experiments/tables.py --write   # rewrite those tables in place
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.figures import HERE  # noqa: E402

BEGIN, END = "<!-- table: {} -->", "<!-- /table -->"
# every experiments/<name>/tables*.py, in a fixed order (a README's tables are written in their module's order)
MODULES = tuple(sorted(f"experiments.{p.parent.name}.{p.stem}" for p in HERE.glob("*/tables*.py")))


def _collect() -> dict:
    out = {}
    for name in MODULES:
        for table, entry in importlib.import_module(name).TABLES.items():
            assert table not in out, f"table {table} registered twice"
            out[table] = entry
    return out


TABLES = _collect()


def blocks(text: str, name: str) -> tuple[int, int]:
    """Where table NAME's body sits in a README's text: (start, end) offsets between its two markers."""
    begin = BEGIN.format(name)
    start = text.index(begin) + len(begin) + 1
    return start, text.index(END, start)


def stale(tables: dict = TABLES) -> list[str]:
    """The names of the tables whose README copy differs from what their files give now."""
    out = []
    for name, (readme, build) in tables.items():
        text = readme.read_text()
        start, end = blocks(text, name)
        if text[start:end].rstrip("\n") != build():
            out.append(name)
    return out


def write(tables: dict = TABLES) -> None:
    for name, (readme, build) in tables.items():
        text = readme.read_text()
        start, end = blocks(text, name)
        readme.write_text(text[:start] + build() + "\n" + text[end:])


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    elif bad := stale():
        print("tables that differ from their result files (python experiments/tables.py --write): " + ", ".join(bad))
        sys.exit(1)
