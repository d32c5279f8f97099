"""Where the config groups are: beside the package in a checkout (src/../conf), inside it when installed
(trainsweep/conf); and the repo root on sys.path for Hydra's plugins."""
from __future__ import annotations

import os
import sys

PACKAGE = __package__.rsplit(".", 1)[0]  # `src` in a checkout, `trainsweep` installed: the config's `_target_`s
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ROOT = os.path.dirname(PACKAGE_DIR)
CONF_DIR = next(d for d in (os.path.join(PACKAGE_DIR, "conf"), os.path.join(ROOT, "conf")) if os.path.isdir(d))
# Hydra finds launchers and sweepers by walking the hydra_plugins namespace, which is rebuilt from
# sys.path; an editable install doesn't put the repo root there, so a run started elsewhere would miss
# the `isolated` launcher (and sweep.plan=predict's planner).
if ROOT not in sys.path:
    sys.path.append(ROOT)
