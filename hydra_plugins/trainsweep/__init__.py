"""trainsweep's Hydra plugins: the `isolated` launcher, a thin adapter that hands its jobs to the package's
sweep.plan=predict planner (src/plan/) and runs them."""
import importlib
import sys


def app(module: str):
    """A module of the trainsweep package this process runs: `src` in a checkout (`python -m src.run`),
    `trainsweep` when installed (the `trainsweep` command). Importing the other copy too would load every
    module twice, with two of each class (a `src` Report is no `trainsweep` Report)."""
    for package in ("src", "trainsweep"):
        if f"{package}.config" in sys.modules:  # the run imports its config before Hydra starts any plugin
            return importlib.import_module(f"{package}.{module}")
    return importlib.import_module(f"trainsweep.{module}")
