"""Training with the Hugging Face Trainer: its arguments from our groups and the Trainer subclass that counts
tokens (trainer), resuming from the last good checkpoint (checkpoints), evaluation metrics (metrics) and the
deliberate bad habits whose cost the loop-overhead experiments measure (debug). Imports every stage below
report."""
