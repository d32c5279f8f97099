"""Preflight checks, the loss-69 class of bugs caught before the first step: tokenizer and rows (data), one
forward and backward of a real batch (model), schedule, precision and gradient accumulation (training),
all of them in order (preflight), and the result records (results). Imports every stage below it."""
