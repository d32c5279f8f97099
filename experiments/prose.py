"""The figures in the project's prose (README.md, docs/*.md, experiments/*/README.md), outside the generated tables,
and where each comes from. tests/test_prose.py fails on a figure nothing backs, so a number edited in prose
(2.73x -> 3.73x, 33,644 -> 43,644) fails unless the files say it.

A figure is a number with a unit (x, %, k, GB, s, ms, min, tok/s, steps), or a decimal, or a number with a
thousands comma, in prose (a range's upper end and a +- figure too: a '-' after a digit or a '+' is no sign): not
inside a generated block, a code fence, an indented code block or `inline code`.
Each is backed, first match wins, by
  - claim: a registered claim (experiments/claims/) whose exact text holds it, recomputed from its files or
    quoted word for word from a committed summary or log;
  - table: the same value, as rounded in the prose, in a generated table of the same page (tables are recomputed
    from their files by tests/test_experiments.py, so the prose follows the files through them), and its text
    pinned for the page in prose_tables.json (`--pin` rewrites it after a deliberate change): on the two largest
    pages a 3-digit figure edited to another value still matched some cell 44-48% of the time; its pinned text never.
    A one-digit figure is never backed this way, nor by restated or data: it would match by chance;
  - restated (README.md, docs/, the experiments index): the same figure, unit and all, backed by a claim or a table
    on an experiment page it links to;
  - data: a value of the page's own result files (experiments/<name>/results; for README.md and docs/, any
    experiment's), at the prose's rounding, where the figure has 4 (5 for any experiment's) significant digits:
    fewer match some value by chance (a 3-digit figure matched 54-85% of random ones in one experiment's files);
  - allowed: a setting or a name, not a measurement (ALLOWED: a token budget, a memory cap, a version, a
    goal's threshold, the project's own rules);
  - pending: frozen in prose_pending.json (a count per page and figure): not yet backed by a file, so only its text
    is held; the debt `python -m experiments.prose --pending` lists.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PENDING = Path(__file__).with_name("prose_pending.json")
PINNED = Path(__file__).with_name("prose_tables.json")  # the table-backed figures' texts, per page (`--pin` writes it)
UNITS = r"x\b|%|k\b|GB\b|GiB\b|MB\b|ms\b|s\b|min\b|minutes\b|seconds\b|hours?\b|h\b|tok/s|steps\b"
FIGURE = re.compile(rf"(?:(?<![\w.,/=+-])|(?<=\d-)|(?<=\+-))(\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+\.\d+|\d+)(\s?(?:{UNITS}))?(?![\w.]*\d)")
# settings and names, not measurements: the text around a figure that makes it one
ALLOWED = [re.compile(p) for p in (
    r"packed[ _]\d+k|\d+k-token|\d+k packs|batch\.tokens|tokens=\d",  # packing budgets
    r"\d+ GB cap|cap of \d+ GB|memory_cap_gb|\d+ ?GB card|\d+GB HBM",  # memory caps, cards' sizes
    r"\d{4}-\d\d-\d\d",  # dates
    r"timeout \d+|limit of \d+|\d+-minute limit|\d+ min(?:utes)? (?:limit|a call|per call)",  # the calls' limits
    # the project's own rules and defaults, stated where they are explained
    r"95% interval|\(95%\)|clears 3%|3% rule|within 3% \(`measure|within 3% of yours|holds your rows within 3%",
    r"within 2%, or every lever|[<>] \d+% of|under 80%|over 10%\)|~15% of the capacity|> 15%|< 80%|> 92%",
    r"Python 3\.10|transformers 5\.24|default, 8,000|first 2,000|at least 2,000|\d,\d{3} tokens|under 100 MB|last 3 steps",
    r"waits 30 s|60 steps, 5 of warm-up|a 24 GB one|\d+ GB cap|loss scale as yours: 2x",
    r"a \d+ GiB device-to-device copy",  # the bandwidth benchmark's copy size (benchmarks/layer_bandwidth.py)
    r"(?:torch|pandas|transformers|peft|datasets|tokenizers|Python|TRL) \d+\.\d+",  # versions (TRL: the SFT scripts' library)
    r"\d+ steps(?: each| \(\d+ warm-up\)|, \d+ of (?:them )?warm-up)",  # a run's length, as configured
    r"(?:[Tt]he |a |of the )12x\b|12x (?:slower|slowdown|report|ladder)",  # the field report's name
    r'"10-20%"',  # the field report's own figure for cudnn.deterministic, quoted (loop_overheads)
    r"memory \+-5%",  # the planner's goal G2 for memory, a threshold
    r"300k -> 3M samples",  # the field report's own row counts, before and after (twelve_x_slowdown), not measured
    r"(?<![\d.])(?:2|4|5|8|12|16|24|32)k\b(?! real| tok)",  # a token budget (8k packs), not a rate (25.1k real tok/s)
    r"[<>]=? ?\d[\d.,]*(?: ?(?:x|%|k|min|s|GB)\b)?|\+-1[05]%",  # a goal's threshold (>= 1.15x, < 1 min, +-15%)
    r"\b\d+ x (?:ga\b|grad_accum|\d)|\bbs \d+ x\b",  # a batch split (bs 8 x ga 2, 32 x 320), not a ratio
    r"(?:report|reports)'s? (?:claim of |guess of |guessed |expects? )?\d[\d.]*(?:-\d[\d.]*)?x|expects \d[\d.]*-\d[\d.]*x",  # the field report's own figures
)]


@dataclass(frozen=True)
class Figure:
    page: str  # relative to the repository root
    line: int
    start: int  # offset in the page's text
    end: int
    text: str  # as written: number and unit
    number: str
    unit: str


def pages() -> list[Path]:
    return sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("experiments/*/README.md"),
                   ROOT / "experiments/README.md"])


def _masked(text: str) -> str:
    """The page with everything that is not prose blanked (same offsets): generated blocks, code, link targets."""
    out, inblock, fence = [], False, False
    for line in text.splitlines(keepends=True):
        blank = re.sub(r"[^\n]", " ", line)
        if line.startswith("<!-- table:"):
            inblock = True
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append(blank)
            continue
        if inblock or fence or line.startswith("    ") or line.startswith("<!--"):
            out.append(blank)
        else:
            line = re.sub(r"`[^`]*`", lambda m: " " * len(m[0]), line)
            line = re.sub(r"\]\([^)]*\)", lambda m: " " * len(m[0]), line)
            out.append(line)
        if line.startswith("<!-- /table"):
            inblock = False
    return "".join(out)


def figures(page: str, text: str) -> list[Figure]:
    prose = _masked(text)
    out = []
    for m in FIGURE.finditer(prose):
        number, unit = m[1], (m[2] or "").strip()
        if not unit and "," not in number and "." not in number:
            continue  # a bare integer: a count, a size, a step number
        out.append(Figure(page, text.count("\n", 0, m.start()) + 1, m.start(), m.end(), m[0], number, unit))
    return out


SCALES = {"k": (1e-3,), "%": (100.0, 1.0), "ms": (1e3, 1.0)}  # a unit's ways from a stored value to the prose's


def _forms(v: float, unit: str = "") -> set[str]:
    """How a value may be written in prose with this unit: 0-4 decimals, with or without thousands commas, scaled
    as the unit says (k: thousands; %: a fraction or a percentage; ms: seconds or ms)."""
    out = set()
    for scale in SCALES.get(unit, (1.0,)):
        scaled = v * scale
        if abs(scaled) >= 1e12:
            continue
        for d in range(5):
            out.add(f"{scaled:.{d}f}")
            out.add(f"{scaled:,.{d}f}")
    return out


def _values(obj, out: list) -> None:
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        out.append(float(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _values(v, out)
    elif isinstance(obj, list) and len(obj) <= 64:  # not a series (step times, losses): prose quotes their stats
        for v in obj:
            _values(v, out)


@cache
def data_forms(folder: str, unit: str = "") -> frozenset[str]:
    """Every value of the result files under experiments/<folder> (or all of them for ''), in its written forms."""
    base = ROOT / "experiments" / folder
    values: list[float] = []
    for path in sorted(base.rglob("*.json*")):
        if path.suffix not in (".json", ".jsonl"):
            continue
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            try:
                _values(json.loads(line), values)
            except json.JSONDecodeError:
                continue
    return frozenset().union(*(_forms(v, unit) for v in set(values))) if values else frozenset()


def table_forms(text: str, unit: str = "") -> frozenset[str]:
    """The numbers of a page's generated blocks, in their written forms."""
    return _block_forms(tuple(re.findall(r"<!-- table: [^>]*-->\n(.*?)<!-- /table -->", text, re.S)), unit)


@cache
def _block_forms(blocks: tuple[str, ...], unit: str) -> frozenset[str]:  # cached on the blocks: prose edits reuse it
    forms = set()
    for block in blocks:
        for n in re.findall(r"\d[\d,]*(?:\.\d+)?", block):
            try:
                forms |= _forms(float(n.replace(",", "")), unit)
            except ValueError:
                pass
    return frozenset(forms)


@cache
def restated(text: str) -> frozenset[str]:
    """For a page outside experiments/<name>/ (README.md, docs/, the experiments index): the figures, as written
    with their units, that a claim or a generated table backs on the experiment pages it links to."""
    out: set[str] = set()
    for name in sorted(set(re.findall(r"experiments/([a-z0-9_]+)|\]\(([a-z0-9_]+)/\)", text)) - {("", "")}):
        path = ROOT / "experiments" / "".join(name) / "README.md"
        if path.exists():
            out |= _backed_on(page_of(path), path.read_text())
    return frozenset(out)


@cache
def _backed_on(page: str, text: str) -> frozenset[str]:
    from experiments import claims

    spans = claims.spans_in(text)
    return frozenset(f.text for f in figures(page, text) if backing(f, text, spans) in ("claim", "table"))


def _significant(number: str) -> int:
    return len(number.replace(",", "").replace(".", "").lstrip("0"))


def backing(f: Figure, text: str, claimed: list[tuple[int, int]]) -> str | None:
    """What backs a figure (module docstring), or None."""
    if any(a <= f.start and f.end <= b for a, b in claimed):
        return "claim"
    unit = f.unit if f.unit in SCALES else ""
    if _significant(f.number) >= 2 and f.number in table_forms(text, unit):  # one digit matches some cell by chance
        return "table"
    folder = f.page.split("/")[1] if f.page.startswith("experiments/") and f.page.count("/") == 2 else ""
    if not folder and _significant(f.number) >= 2 and f.text in restated(text):
        return "restated"
    if _significant(f.number) >= (4 if folder else 5) and f.number in data_forms(folder, unit):
        return "data"
    start = text.rfind("\n", 0, f.start) + 1
    line, col = text[start:text.find("\n", f.start)], f.start - start
    if any(_covers(p, line, col, len(f.number)) for p in ALLOWED):
        return "allowed"
    return None


def _covers(pattern: re.Pattern, line: str, col: int, width: int) -> bool:
    """An allowing match spans the figure's own number (a setting on the line doesn't allow a measurement beside it)."""
    return any(m.start() <= col and col + width <= m.end() for m in pattern.finditer(line))


def table_backed_in(page: str, text: str) -> Counter:
    """The figures of one page's text that only a table cell backs: what prose_tables.json pins."""
    from experiments import claims

    spans = claims.spans_in(text)
    return Counter(f.text for f in figures(page, text) if backing(f, text, spans) == "table")


def pinned() -> dict[str, Counter]:
    if not PINNED.exists():
        return {}
    return {page: Counter(c) for page, c in json.loads(PINNED.read_text()).items()}


def unbacked_in(page: str, text: str) -> Counter:
    """The figures of one page's text that nothing backs (its claims found in that text). A figure a table cell
    backs counts only as often as prose_tables.json pins its text for the page: on a large page a 3-digit figure
    edited to another value still matches some cell about half the time, and its pinned text does not."""
    from experiments import claims

    spans = claims.spans_in(text)
    backs = [(f, backing(f, text, spans)) for f in figures(page, text)]
    out = Counter(f.text for f, kind in backs if kind is None)
    return out + (Counter(f.text for f, kind in backs if kind == "table") - pinned().get(page, Counter()))


def unbacked() -> dict[str, Counter]:
    """Per page, the figures nothing backs: {page: Counter(figure text)}."""
    out = {}
    for path in pages():
        got = unbacked_in(str(path.relative_to(ROOT)), path.read_text())
        if got:
            out[page_of(path)] = got
    return out


def page_of(path: Path) -> str:
    return str(path.relative_to(ROOT))


def pending() -> dict[str, Counter]:
    if not PENDING.exists():
        return {}
    return {page: Counter(c) for page, c in json.loads(PENDING.read_text()).items()}


def beyond_pending() -> dict[str, dict[str, int]]:
    """Unbacked figures the frozen list doesn't hold (new, or edited): what tests/test_prose.py fails on."""
    frozen, out = pending(), {}
    for page, got in unbacked().items():
        extra = got - frozen.get(page, Counter())
        if extra:
            out[page] = dict(extra)
    return out


if __name__ == "__main__":
    if "--freeze" in sys.argv[1:]:  # take today's unbacked figures as the pending debt: of the pages named, else all
        named = [a for a in sys.argv[1:] if not a.startswith("--")]
        now = {p: c for p, c in unbacked().items() if not named or p in named}
        debt = {p: c for p, c in pending().items() if named and p not in named} | now  # read last: others may write
        PENDING.write_text(json.dumps({p: dict(sorted(c.items())) for p, c in sorted(debt.items())}, indent=1) + "\n")
    elif "--pin" in sys.argv[1:]:  # after a table or its prose changed on purpose: pin what the tables back now
        PINNED.write_text(json.dumps({page_of(p): dict(sorted(c.items())) for p in pages()
                                      if (c := table_backed_in(page_of(p), p.read_text()))}, indent=1, sort_keys=True) + "\n")
    elif "--pending" in sys.argv[1:]:
        for page, c in unbacked().items():
            print(f"{page}: {sum(c.values())} figures: " + ", ".join(sorted(c)))
    else:
        from experiments import claims

        kinds = Counter()
        for path in pages():
            text = path.read_text()
            spans = claims.spans_in(text)
            for f in figures(page_of(path), text):
                kinds[(page_of(path), backing(f, text, spans))] += 1
        for (page, kind), n in sorted(kinds.items(), key=str):
            print(f"{page:50} {kind or 'UNBACKED':8} {n}")
