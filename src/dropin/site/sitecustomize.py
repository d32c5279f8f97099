"""Python runs this file at start-up in every process whose PYTHONPATH holds this folder: `trainsweep measure`
puts it there for the command it launches (and so for that command's own children: torchrun's ranks, accelerate's
workers). It loads nothing heavy: it asks to be told when transformers.trainer is imported (src/dropin/hook.py).

The sitecustomize this one hides on the path (a distribution's, a virtual environment's) still runs, first.
trainsweep is loaded from the folder the launcher names, under the name `trainsweep`, so a checkout's `src` and a
user's own module called `src` never meet.
"""
import importlib
import importlib.util
import os
import sys


def _chain() -> None:
    """Run the next sitecustomize on the path, as Python would have without this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        sys.modules["sitecustomize"] = ours


def _trainsweep():
    folder = os.environ.get("TRAINSWEEP_PACKAGE_DIR")
    if "trainsweep" in sys.modules or not folder:
        return importlib.import_module("trainsweep")
    spec = importlib.util.spec_from_file_location("trainsweep", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules["trainsweep"] = module
    spec.loader.exec_module(module)
    return module


try:
    _chain()
except Exception as exc:  # theirs: reported as Python would, without stopping ours
    print(f"sitecustomize: {type(exc).__name__}: {exc}", file=sys.stderr)
try:
    _trainsweep()
    importlib.import_module("trainsweep.dropin.hook").when_imported()
except Exception as exc:  # never the script's problem: it runs as without trainsweep
    print(f"trainsweep: not attached ({type(exc).__name__}: {exc}); your script runs as without it", file=sys.stderr)
