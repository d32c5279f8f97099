"""The checks in a Trainer script's words (trainsweep.attach): a user of HF's example scripts or of TRL has no
padding=grouped or trainer.warmup_steps to set; the hints name TrainingArguments fields, the usual script flags,
and what the script's data already is (padded when tokenised, or by the collator)."""
from __future__ import annotations

import re


# trainsweep's keys in a check's words, and what a Trainer script calls them (TrainingArguments fields, the usual
# example-script flags): a user of run_glue has no padding=grouped to set.
SCRIPT_WORDS = (
    (r"raise data\.max_length \(now (\d+)\)", r"raise the length rows are cut to when tokenising (the tokenizer's "
                                                 r"max_length, a script's --max_seq_length; now \1)"),
    # read off the rows (many at one length), or where none pile up, the tokenizer's limit: a cut no row reached
    # is not seen
    (r"data\.max_length", "the cut length your rows show, else the tokenizer's limit"),
    (r"shorten trainer\.warmup_steps", "shorten warmup_steps (or warmup_ratio)"),
    (r"trainer\.max_grad_norm", "max_grad_norm"),
    (r"trainer\.lr\b", "learning_rate"),
    (r"Set trainer\.checkpoint_reentrant=false", "Pass gradient_checkpointing_kwargs={'use_reentrant': False}"),
    (r"set task\.num_labels to the number of classes", "set num_labels in the model's config to the number of classes"),
    (r"\(model\.init\.head_init=scaled\) or zero \(model\.init\.head_init=zero\)",
     "(normal_(0, 1/norm) on the score/classifier weight) or zero (zero_() on it) before training"),
)
PADDING_WORDS = {  # the padding check's strategies, as a script sets them
    "max_length": "rows padded to one length (a script's --pad_to_max_length, or a collator's padding='max_length')",
    "longest": "rows padded when tokenising (padding='longest' in map)",
    "dynamic": "the collator padding each batch ({collator})",
    "grouped": "the collator padding each batch, rows of similar length together "
               "(train_sampling_strategy='group_by_length')",
    # DataCollatorWithFlattening makes token-level LM labels: a classifier's rows would lose their class
    "packed": "rows packed side by side, padding only in each pack's unfilled tail (trainsweep.speedup packs a "
              "classifier's or a causal LM's rows; for a causal LM, DataCollatorWithFlattening or TRL's "
              "padding_free=True too)",
}


def in_script_words(checks: list[dict], padded_at_map_time: bool, collator: str = "DataCollatorWithPadding",
                    order_is_the_trainers: bool = False) -> list[dict]:
    """The checks' hints and expectations in a Trainer script's words rather than trainsweep's keys; the padding
    check says what the script's data already is (naming its collator), and that padding done at map time must be
    undone there first. order_is_the_trainers: a trainer that orders or pairs its rows itself (TRL's KTO refuses
    any sampling but sequential) is not told to group them by length."""
    def words(text):
        if not isinstance(text, str):
            return text
        for pattern, repl in SCRIPT_WORDS:
            text = re.sub(pattern, repl, text)
        return text

    out = []
    for check in checks:
        check = {**check, "hint": words(check["hint"]), "expected": words(check["expected"])}
        if check["check"] == "data.padding_waste" and check["value"].get("chosen") == "packed":
            # the script's own padding-free batches (TRL's packing or padding_free, DataCollatorWithFlattening) hold
            # no padding at all; trainsweep's own packed batches pad a tail, which the figure models
            check = {**check, "status": "pass", "value": {**check["value"], "packed": 0.0}, "hint": ""}
        elif check["check"] == "data.padding_waste" and check["status"] != "pass":
            waste = check["value"]
            best = min((k for k in waste if k != "chosen" and not (k == "grouped" and order_is_the_trainers)),
                       key=waste.get)
            if waste[waste["chosen"]] - waste[best] <= 0.10:  # grouping was the only better way, and it is not theirs
                out.append({**check, "status": "pass", "hint": "", "expected": f"within 10 points of the least this "
                            f"trainer allows ({best}: {waste[best]:.1%}; it orders its rows itself)"})
                continue
            undo = (" The rows are padded already when tokenised: turn that off first (run_glue: "
                    "--pad_to_max_length False), then let the collator pad." if padded_at_map_time else "")
            said = {k: v.format(collator=collator) for k, v in PADDING_WORDS.items()}
            check["hint"] = (f"now {said.get(waste['chosen'], waste['chosen'])}: about {waste[waste['chosen']]:.0%} "
                             f"of the positions are padding (estimated on your train rows, shuffled); "
                             f"{said.get(best, best)}: {waste[best]:.0%}.{undo} "
                             "Fewer pad tokens is not always faster: a host-bound step can gain more from fixed shapes")
        out.append(check)
    return out
