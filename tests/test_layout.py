"""src/ is a stack of packages named for the stages a run goes through; an import only ever goes down the
stack or sideways within a package, and no modules import each other in a circle. Every import counts,
those inside functions too, and the plugins' `app("report.files")` look-ups as well.

The order is written here once, lowest first: a module may import from its own package and from any package
listed before it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("base", "config", "machine", "data", "model", "measure", "train", "checks", "report", "plan",
          "levers", "dropin", "runner", "run", "hydra_plugins")
MAX_LINES = 350  # a module past this says in its docstring which one concern needs the room


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, tops=("src", "hydra_plugins")) -> dict[str, Path]:
    return {module_name(p, root): p for top in tops for p in sorted((root / top).rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of `from <level dots><target> import ...` written in `module`."""
    if level == 0:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports(root: Path, tops=("src", "hydra_plugins")) -> dict[str, set[str]]:
    """module -> the modules of ours it imports anywhere in its file."""
    known = modules(root, tops)
    top_package = tops[0]
    graph = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                for alias in node.names:  # `from . import data`: the module src.data, not the package it sits in
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "app"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                found.add(f"{top_package}.{node.args[0].value}")  # hydra_plugins' app("report.files")
        graph[name] = {m for m in found if m in known and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer(module: str, layers=LAYERS) -> int:
    """A module's place in the stack: its stage package (src.data.pack -> data), or a top module's own name;
    the package root (src, whose attach loads the drop-in) sits with the drop-in."""
    parts = module.split(".")
    key = parts[0] if parts[0] == "hydra_plugins" else (parts[1] if len(parts) > 1 else "dropin")
    if key not in layers:
        raise AssertionError(f"{module}: its package {key!r} is not in the layer order {layers}")
    return layers.index(key)


def back_ups(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if layer(a, layers) < layer(b, layers))


def test_no_import_circles():
    assert cycles(imports(ROOT)) == []


def test_imports_only_go_down_the_stages():
    assert back_ups(imports(ROOT)) == []


def test_every_package_is_in_the_order_and_says_what_it_holds():
    for path in sorted((ROOT / "src").iterdir()):
        if path.is_dir() and (path / "__init__.py").exists():
            assert path.name in LAYERS, f"src/{path.name} is not in the layer order"
            init = (path / "__init__.py").read_text()
            tree = ast.parse(init)
            assert ast.get_docstring(tree), f"src/{path.name}/__init__.py says nothing about what it holds"
            # importing a stage must not import its modules: `python -m src.run --help` loads config alone
            assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree)), path


def test_modules_stay_small_or_say_why():
    for name, path in modules(ROOT).items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "one concern" in doc, f"{name} has {text.count(chr(10))} lines and no word on why"


def _plant(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_find_a_planted_circle_and_an_import_up_the_stages(tmp_path):
    _plant(tmp_path, {
        "src/__init__.py": "",
        "src/base/__init__.py": '"""bottom"""',
        "src/base/files.py": "def f():\n    from ..config import schema  # up a layer, inside a function\n",
        "src/config/__init__.py": '"""above"""',
        "src/config/schema.py": "from ..base.files import f\nfrom . import cli\n",
        "src/config/cli.py": "from .schema import x\n",
        "src/run.py": "from .config import schema\nimport src.base.files\n",
        "hydra_plugins/trainsweep/launcher.py": "app('report.files')\napp('base.files')\n",
    })
    graph = imports(tmp_path)
    assert graph["src.run"] == {"src.config.schema", "src.base.files"}
    assert graph["hydra_plugins.trainsweep.launcher"] == {"src.base.files"}  # report.files does not exist there
    assert cycles(graph) == [["src.base.files", "src.config.cli", "src.config.schema"]]
    assert back_ups(graph) == ["src.base.files -> src.config.schema"]


def test_a_package_outside_the_order_is_named():
    with pytest.raises(AssertionError, match="'misc' is not in the layer order"):
        layer("src.misc.thing")
