"""Every random generator as it was, around work that must not change what training draws next."""
from __future__ import annotations

import contextlib
import random

import numpy as np


@contextlib.contextmanager
def rng_kept():
    """Python's, numpy's, torch's and CUDA's generators restored on exit: a check's forward (dropout), reading a
    dataset that draws per row, or a timed trial step leaves the script's training as it would have been."""
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    saved = random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda and torch.cuda.get_rng_state_all()
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])
        if cuda:
            torch.cuda.set_rng_state_all(saved[3])
