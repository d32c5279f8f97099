"""trainsweep inside a user's own Trainer script: `attach` (measure it, check it, report it: callback.py), what
it reads from their Trainer (reading.py), the checks that judge their task and loss (judging.py), the guard that
turns any part of it off rather than break their training (guard.py), and the zero-line launcher
(`trainsweep measure -- python train.py`: launch.py and hook.py)."""
