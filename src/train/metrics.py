"""Evaluation metrics for the Trainer's compute_metrics: accuracy and macro-F1 for classification,
ROUGE-1/2/L for seq2seq (on generated text)."""
from __future__ import annotations

import numpy as np


def classification(eval_pred) -> dict:
    logits = eval_pred.predictions[0] if isinstance(eval_pred.predictions, tuple) else eval_pred.predictions
    pred, labels = np.asarray(logits).argmax(-1), np.asarray(eval_pred.label_ids)
    scored = labels != -100  # packed batches: unused sequence slots carry no label
    pred, labels = pred[scored], labels[scored]
    f1 = []
    for c in np.union1d(pred, labels):  # macro: every class that occurs in the labels or the predictions
        tp, fp, fn = ((pred == c) & (labels == c)).sum(), ((pred == c) & (labels != c)).sum(), ((pred != c) & (labels == c)).sum()
        f1.append(2 * tp / (2 * tp + fp + fn))
    return {"accuracy": float((pred == labels).mean()), "macro_f1": float(np.mean(f1))}


class _Whitespace:
    """rouge_score's default tokenizer keeps only [a-z0-9]: Korean text would score 0. Split on spaces."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


class Rouge:
    """ROUGE F-measures of generated summaries against the references. Without a tokenizer (synthetic
    data) token ids stand in for words."""

    def __init__(self, tokenizer, pad_id: int):
        from rouge_score import rouge_scorer

        self.tokenizer, self.pad_id = tokenizer, pad_id
        self.scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=_Whitespace())

    def _text(self, ids) -> str:
        ids = [int(i) for i in ids if i >= 0 and i != self.pad_id]
        if self.tokenizer is not None:
            return self.tokenizer.decode(ids, skip_special_tokens=True)
        return " ".join(map(str, ids))

    def __call__(self, eval_pred) -> dict:
        preds = eval_pred.predictions[0] if isinstance(eval_pred.predictions, tuple) else eval_pred.predictions
        scores = [self.scorer.score(self._text(ref), self._text(hyp)) for hyp, ref in zip(preds, eval_pred.label_ids)]
        return {name: float(np.mean([s[name].fmeasure for s in scores])) for name in ("rouge1", "rouge2", "rougeL")}


def evaluate_every(cfg) -> int:
    """trainer.eval_steps, or with an eval set and none given, once at the end (as a user of HF's scripts
    expects of --validation_file); 0: no evaluation. A step with an evaluation in it is never timed."""
    has_eval = bool(cfg.data.eval_size if cfg.data.source == "synthetic" else cfg.data.eval_file)
    return cfg.trainer.eval_steps or (cfg.trainer.max_steps if has_eval else 0)


def for_task(cfg, tokenizer, pad_id: int):
    if not evaluate_every(cfg):
        return None
    if cfg.task.name == "classification":
        return classification
    if cfg.task.name == "seq2seq":
        return Rouge(tokenizer, pad_id)
    return None  # causal LM: eval loss (and its perplexity) only
