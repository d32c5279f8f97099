"""What the planner's experiment scripts share: the run's config from its overrides, the device set up as the
run sets it, the model's config with the data's needs, and a typical micro-batch (the predictor's own) on the
device. The scripts import it from their own folder (a script's directory is on sys.path)."""
import tempfile
from pathlib import Path

from src.config.compose import compose
from src.data import prepare
from src.data.collate import to_device
from src.machine import env
from src.model import build as models
from src.plan.predict import typical_batch


def setup(overrides: list[str]):
    """cfg, res (env.setup's), conf (the model's config), prep (the prepared data), rows (a typical micro-batch's
    rows) and batch (those rows collated, on the device)."""
    cfg = compose(overrides)
    res = env.setup(cfg)
    conf = models.hf_config(cfg)
    with tempfile.TemporaryDirectory() as tmp:  # labels.json lands here
        prep = prepare.prepare(cfg, conf, Path(tmp))
    conf.update(prep.for_model)
    rows, _ = typical_batch(cfg, prep)
    return cfg, res, conf, prep, rows, to_device(prep.collator(rows), res.device)
