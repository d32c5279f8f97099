"""The corpus: each script, how it is run (placeholders filled from tests/corpus/fixtures.py), the task the checks
must judge, and what they must say on it.

`expect` maps a check to the status it must have (pass, warn, fail, info); every check the drop-in lists that is
not named must pass or be info, so a false warning fails the test. `not_run` names the check groups that cannot run
on the script (and must say so rather than pass in silence). `speedup` is the padding-free lever's verdict on the
script: "on", or a fragment of the reason it gives for leaving the script alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple
    task: str
    speedup: str  # "on", or a fragment of why the padding-free lever is off
    expect: dict = field(default_factory=dict)
    not_run: tuple = ()
    # the report's rows, real tokens and loss items against the harness's own count of the training batches
    counted: bool = True

    @property
    def script(self) -> Path:
        return SCRIPTS / f"{self.name}.py"

    def argv(self, fx: dict, out: Path) -> list[str]:
        return [a.format(**fx, out=out) for a in self.args]


PAD_WASTE = {"data.padding_waste": "warn"}  # dynamic padding where grouping by length would pad far less
# A checkpoint's weights (random here, as a saved checkpoint they count as pretrained) with a new head: over half
# of the step-1 gradient is clipped at max_grad_norm 1.0, which the check reports as it would on real weights.
CLIPPED = {"train.grad_norm": "warn"}

CASES = [
    Case("glue_style", ("--model_name_or_path", "{bert}", "--train_file", "{data}/cls.csv", "--output_dir", "{out}",
                        "--max_steps", "8", "--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "2",
                        "--logging_steps", "1", "--report_to", "none", "--save_strategy", "no", "--learning_rate",
                        "1e-3"),
         "classification", "encoder", {"data.padding_waste": "warn", "data.truncation": "warn",
                                       "train.grad_accum_loss": "fail"}),
    Case("sts_regression", ("{bert}", "{data}/sts.csv", "{out}"), "regression", "encoder", {**PAD_WASTE, **CLIPPED}),
    Case("clm_blocks", ("--model_name_or_path", "{gpt2}", "--train_file", "{data}/text.txt", "--block_size", "32",
                        "--output_dir", "{out}", "--max_steps", "8", "--per_device_train_batch_size", "4",
                        "--logging_steps", "1", "--report_to", "none", "--save_strategy", "no"),
         "causal_lm", "on", {"model.initial_loss": "info"}),
    Case("ner_tokens", ("{bert}", "{data}/ner.jsonl", "{data}/ner_labels.json", "{out}"), "token_classification",
         "padding-free batches are for", PAD_WASTE),
    Case("seq2seq_summary", ("{bart}", "{data}/sum.jsonl", "{out}"), "seq2seq", "padding-free batches are for",
         {**PAD_WASTE, "model.initial_loss": "info"}),
    Case("trl_messages", ("{qwen3}", "{data}/chat.jsonl", "{out}"), "causal_lm", "on",
         {**PAD_WASTE, "model.initial_loss": "info"}),
    Case("trl_packing", ("{qwen3}", "{data}/sft", "{out}"), "causal_lm", "padding-free already",
         {"model.initial_loss": "info"}),
    Case("trl_prompt_completion_lora", ("{qwen3}", "{data}/pc.jsonl", "{out}"), "causal_lm", "on",
         {**PAD_WASTE, "model.initial_loss": "info"}),
    Case("peft_alpaca", ("{llama_nopad}", "{data}/alpaca.jsonl", "{out}"), "causal_lm", "on",
         {**PAD_WASTE, "model.initial_loss": "info"}),  # 1 warm-up step of 8: full rate at step 1, not a warning
    Case("torch_tensor_rows", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on",
         {**PAD_WASTE, **CLIPPED}),
    Case("set_format_torch", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("set_format_numpy", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("batchencoding_rows", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("list_of_dicts", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("subclass_mean_loss", ("{qwen3}", "{data}/text.txt", "{out}"), "causal_lm", "is your own",
         {"data.padding_waste": "warn", "data.truncation": "warn", "model.initial_loss": "info",
          "train.grad_accum_loss": "fail"}),
    Case("subclass_class_weights", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "is your own",
         {**PAD_WASTE, **CLIPPED}),
    Case("iterable_stream", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "IterableDataset", {},
         not_run=("tokenizer", "data", "model")),
    Case("eval_early_stopping", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("user_callbacks", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("llama_pad_is_eos", ("{llama_nopad}", "{data}/cls.csv", "{out}"), "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("short_rows_accum", ("{qwen3}", "{data}/short.csv", "{out}"), "classification", "on",
         {**PAD_WASTE, **CLIPPED, "train.grad_accum_loss": "fail"}),
    Case("callbacks_in_constructor", ("{qwen3}", "{data}/cls.csv", "{out}"), "classification", "on",
         {**PAD_WASTE, **CLIPPED, "train.grad_accum_loss": "fail"}),
    Case("lora_classifier", ("--config_name", "{qwen3}", "--tokenizer_name", "{qwen3}", "--train_file",
                             "{data}/cls.csv", "--output_dir", "{out}", "--max_steps", "8", "--logging_steps", "1",
                             "--per_device_train_batch_size", "8", "--report_to", "none", "--save_strategy", "no"),
         # built from a config, its random weights look like a checkpoint's (config._name_or_path is set either way)
         "classification", "on", {**PAD_WASTE, **CLIPPED}),
    Case("trl_sft_lora", ("--config_name", "{qwen3}", "--tokenizer_name", "{qwen3}", "--dataset_name", "{data}/sft",
                          "--use_peft", "--lora_r", "8", "--output_dir", "{out}", "--max_steps", "8", "--logging_steps",
                          "1", "--per_device_train_batch_size", "4", "--report_to", "none", "--save_strategy", "no",
                          "--use_cpu", "--bf16", "false", "--max_length", "64"),
         "causal_lm", "on", PAD_WASTE),
    Case("bert_lora_classifier", ("{bert}", "{data}/cls.csv", "{out}"), "classification", "encoder",
         PAD_WASTE),  # 2 warm-up steps of 8 reach the full rate at step 2: the decay to 0 at step 8 is no warm-up's
]
BY_NAME = {c.name: c for c in CASES}
