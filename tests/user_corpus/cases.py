"""The corpus: one Case a script, how it is run, and what it exercises. Arguments hold placeholders filled from
make_fixtures()'s dict ("{qwen3}", "{data}/cls_train.csv", "{sft}") and "{out}", the run's output directory.

What the drop-in's checks must say on each script is tabled in tests/corpus/cases.py; this corpus, another hand's,
holds the drop-in to the losses (tests/test_user_corpus.py). `expect_checks` stays empty here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _trl_script(name: str) -> Path:
    """One of TRL's own scripts (scripts/sft.py, dpo.py, ...), as installed (found without importing trl)."""
    import importlib.util

    return Path(importlib.util.find_spec("trl").submodule_search_locations[0]) / "scripts" / f"{name}.py"


@dataclass(frozen=True)
class Case:
    name: str
    script: str  # a file in scripts/, or "trl:NAME" for TRL's installed scripts/NAME.py
    args: tuple[str, ...]
    task: str  # classification, regression, causal_lm, token_classification, seq2seq
    note: str
    expect_checks: dict[str, str] = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # modules the script imports beyond the test extras (skipped where one is missing)

    @property
    def path(self) -> Path:
        return _trl_script(self.script[4:]) if self.script.startswith("trl:") else SCRIPTS / self.script

    def argv(self, fixtures: dict[str, str], out: Path) -> list[str]:
        return [a.format(**fixtures, out=out) for a in self.args]


_HF_RUN = ("--logging_steps", "1", "--report_to", "none", "--save_strategy", "no", "--output_dir", "{out}")
_TRL_RUN = ("--max_steps", "6", "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
            "--learning_rate", "1e-3", "--max_length", "96", "--eval_strategy", "no", "--bf16", "False", *_HF_RUN)
# GRPO and RLOO: conversational prompts, four completions generated for each, scored by a reward model
_GENERATING_RUN = ("--model_name_or_path", "{qwen3}", "--dataset_name", "{data}/pref_conv",
                   "--reward_model_name_or_path", "{qwen3}", "--max_steps", "6", "--per_device_train_batch_size", "4",
                   "--num_generations", "4", "--max_completion_length", "8", "--learning_rate", "1e-3",
                   "--eval_strategy", "no", "--bf16", "False", *_HF_RUN)

CASES = [
    Case("run_glue_style", "run_glue_style.py",
         ("--model_name_or_path", "{bert}", "--train_file", "{data}/cls_train.csv", "--validation_file",
          "{data}/cls_dev.csv", "--do_train", "--do_eval", "--max_seq_length", "48", "--per_device_train_batch_size",
          "4", "--gradient_accumulation_steps", "2", "--max_steps", "6", "--learning_rate", "1e-3", *_HF_RUN),
         "classification", "(a) HfArgumentParser, padding='max_length' at map time, default_data_collator, grad "
         "accum 2, evaluate() after train"),
    Case("stsb_regression", "stsb_regression.py",
         ("--model", "{bert}", "--csv", "{data}/sts.csv", "--out", "{out}"),
         "regression", "(b) sentence pairs, num_labels=1, float labels scaled, pandas -> from_pandas, MSE loss"),
    Case("run_clm_style", "run_clm_style.py",
         ("--model_name_or_path", "{gpt2}", "--train_file", "{data}/text.txt", "--block_size", "32", "--do_train",
          "--do_eval", "--per_device_train_batch_size", "4", "--max_steps", "8", *_HF_RUN),
         "causal_lm", "(c) group_texts into 32-token blocks, labels = input_ids, default_data_collator, GPT-2 BPE "
         "without pad"),
    Case("ner_course_style", "ner_course_style.py", ("{bert}", "{data}/ner.jsonl", "{out}"),
         "token_classification", "(d) is_split_into_words, first sub-token labelled and the rest -100, "
         "DataCollatorForTokenClassification, WordPiece splits"),
    Case("run_summarization_style", "run_summarization_style.py",
         ("--model_name_or_path", "{seq2seq}", "--train_file", "{data}/sum.jsonl", "--source_prefix", "summarize: ",
          "--per_device_train_batch_size", "4", "--max_steps", "8", "--learning_rate", "1e-3", *_HF_RUN),
         "seq2seq", "(e) Seq2SeqTrainer, text_target labels, DataCollatorForSeq2Seq(model=...) with -100"),
    Case("trl_sft_messages", "trl_sft_messages.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "(f) SFTTrainer(model=<path>) on messages rows, TRL applies the chat template"),
    Case("trl_sft_packing", "trl_sft_packing.py",
         ("--model", "{qwen3}", "--data", "{data}/text.txt", "--output_dir", "{out}"),
         "causal_lm", "(g) SFTConfig(packing=True): padding-free packed rows with position_ids, grad accum 2"),
    Case("trl_prompt_completion_lora", "trl_prompt_completion_lora.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "(h) prompt/completion rows (completion-only loss), LoraConfig via peft_config"),
    Case("peft_alpaca_lora", "peft_alpaca_lora.py",
         ("--base_model", "{llama_nopad}", "--data_path", "{data}/alpaca.json", "--output_dir", "{out}"),
         "causal_lm", "(i) get_peft_model, prompt masked to -100, pad_token_id=0 with left padding, "
         "DataCollatorForSeq2Seq(pad_to_multiple_of=8), grad accum 2, adapter saved"),
    Case("torch_dataset_tensors", "torch_dataset_tensors.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "(j) torch Dataset of squeezed return_tensors='pt' rows padded to max_length, "
         "decoder classifier, pad_token_id set on the config"),
    Case("set_format_torch", "set_format_torch.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "(k) set_format('torch') ragged rows, DataCollatorWithPadding"),
    Case("set_format_numpy", "set_format_numpy.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "classification", "(l) set_format('numpy') rows padded at map time, map(num_proc=2), default collator"),
    Case("batchencoding_rows", "batchencoding_rows.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "(m) __getitem__ returns the tokenizer's BatchEncoding with labels added"),
    Case("list_of_dicts", "list_of_dicts.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "classification", "(n) train_dataset is a plain list of dicts with a 'label' key, no datasets library"),
    Case("subclass_mean_ce", "subclass_mean_ce.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "(o) Trainer subclass, its own mean cross-entropy (num_items_in_batch ignored), grad "
         "accum 2"),
    Case("class_weighted_trainer", "class_weighted_trainer.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "classification", "(p) compute_loss pops labels before the forward, weighted CrossEntropyLoss"),
    Case("iterable_stream", "iterable_stream.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "(q) torch IterableDataset tokenizing on the fly, max_steps, model_init"),
    Case("eval_early_stopping", "eval_early_stopping.py",
         ("--model", "{qwen3}", "--train", "{data}/cls_train.csv", "--valid", "{data}/cls_dev.csv", "--out", "{out}"),
         "classification", "(r) eval/save every 2 steps, load_best_model_at_end, metric_for_best_model, "
         "EarlyStoppingCallback, checkpoints written"),
    Case("user_callbacks", "user_callbacks.py", ("{gpt2}", "{data}/short.csv", "{out}"),
         "classification", "(s) add_callback: a printing callback and one setting should_training_stop; GPT-2 "
         "pad = eos and model.config.pad_token_id fixed by hand"),
    Case("llama_pad_eos_classifier", "llama_pad_eos_classifier.py", ("{llama_nopad}", "{data}/cls_train.csv", "{out}"),
         "classification", "(t) Llama classifier, pad = eos with no eos in the rows, padded to the longest row at "
         "map time"),
    Case("short_rows_accum", "short_rows_accum.py", ("{qwen3}", "{data}/short.csv", "{out}"),
         "classification", "(u) 5-35 token rows, batch 8 x grad accum 2, the Trainer's default padding collator"),
    Case("callbacks_in_constructor", "callbacks_in_constructor.py",
         ("model={bert}", "train={data}/cls_train.csv", "output_dir={out}"),
         "classification", "(v) callbacks=[...] in the constructor, grad accum 2, key=value command line"),
    Case("collate_tokenize", "collate_tokenize.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "raw text rows, remove_unused_columns=False, the collate_fn tokenizes each batch"),
    Case("trl_sft_cli", "trl:sft",
         ("--model_name_or_path", "{qwen3}", "--dataset_name", "{sft}", *_TRL_RUN),
         "causal_lm", "TRL's installed scripts/sft.py unmodified, --dataset_name a local folder of messages rows, "
         "grad accum 2, saves the model"),
    Case("own_optimizer_scheduler", "own_optimizer_scheduler.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "Trainer(optimizers=(AdamW with weight-decay groups, cosine warmup schedule)) built by "
         "the script, decoder classifier, DataCollatorWithPadding, grad accum 2"),
    Case("flattening_clm", "flattening_clm.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "transformers' DataCollatorWithFlattening: one row a batch, position_ids restarting at 0, "
         "-100 at each boundary, labels made by the collator"),
    Case("label_smoothing_grouped", "label_smoothing_grouped.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "label_smoothing_factor=0.1 (the Trainer's LabelSmoother on popped labels), "
         "train_sampling_strategy='group_by_length' with a length column, the default collator"),
    Case("compute_loss_func_clm", "compute_loss_func_clm.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "Trainer(compute_loss_func=...): a summed token CE plus a z-loss term divided by "
         "num_items_in_batch, grad accum 2"),
    Case("resume_from_checkpoint", "resume_from_checkpoint.py", ("{llama_nopad}", "{data}/text.txt", "{out}"),
         "causal_lm", "a 4-step run saving checkpoints, then a second Trainer with train(resume_from_checkpoint="
         "True) to 8 steps on the same output_dir; pad = eos"),
    Case("seq2seq_generate_metrics", "seq2seq_generate_metrics.py", ("{seq2seq}", "{data}/sum.jsonl", "{out}"),
         "seq2seq", "Seq2SeqTrainer with predict_with_generate=True, beams 2, eval every 3 steps and a "
         "compute_metrics decoding the generations"),
    Case("lora_gradient_checkpointing", "lora_gradient_checkpointing.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "get_peft_model LoRA and TrainingArguments(gradient_checkpointing=True, use_reentrant=False), "
         "chat-template rows, DataCollatorForLanguageModeling"),
    Case("model_init_no_model", "model_init_no_model.py", ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv",
                                                           "{out}"),
         "classification", "Trainer(model=None, model_init=...) building a decoder classifier, DataCollatorWithPadding "
         "(speedup packed the Trainer's first model, and train() built another: it crashed on packed batches)"),
    Case("trl_dpo_cli", "trl:dpo",
         ("--model_name_or_path", "{qwen3}", "--dataset_name", "{data}/pref", *_TRL_RUN),
         "causal_lm", "TRL's installed scripts/dpo.py unmodified: prompt/chosen/rejected rows, the preference "
         "collator (no labels: the trainer computes the loss), grad accum 2"),
    Case("trl_kto_cli", "trl:kto",
         ("--model_name_or_path", "{qwen3}", "--dataset_name", "{data}/kto", *_TRL_RUN),
         "causal_lm", "TRL's installed scripts/kto.py unmodified: prompt/completion/label rows (the model check "
         "met a batch without labels and left its hook on the head)"),
    Case("trl_grpo_cli", "trl:grpo",
         _GENERATING_RUN,
         "causal_lm", "TRL's installed scripts/grpo.py unmodified: conversational prompts, completions generated "
         "each step, a reward model (rows and batches without input_ids: measuring turned itself off)"),
    Case("trl_reward_cli", "trl:reward",
         ("--model_name_or_path", "{qwen3}", "--dataset_name", "{data}/pref", *_TRL_RUN),
         "classification", "TRL's installed scripts/reward.py unmodified: a one-logit sequence classifier trained "
         "on chosen/rejected pairs (the report called it a regression)"),
    Case("trl_rloo_cli", "trl:rloo",
         _GENERATING_RUN,
         "causal_lm", "TRL's installed scripts/rloo.py unmodified: prompts, four generations each, a reward model, "
         "leave-one-out baselines"),
    Case("trl_distillation_cli", "trl:distillation",
         ("--model_name_or_path", "{qwen3}", "--teacher_model_name_or_path", "{qwen3}", "--dataset_name", "{data}/pc",
          "--max_completion_length", "8", *(a for a in _TRL_RUN if a not in ("--max_length", "96"))),
         "causal_lm", "TRL's installed scripts/distillation.py unmodified: a teacher of the same shape, "
         "prompt/completion rows, completions generated by the student"),
    Case("image_classification_style", "image_classification_style.py",
         ("--model_name_or_path", "{vit}", "--train_dir", "{data}/images", "--do_train", "--do_eval",
          "--remove_unused_columns", "False", "--per_device_train_batch_size", "8", "--max_steps", "6",
          "--learning_rate", "1e-3", *_HF_RUN),
         "image_classification", "run_image_classification's way: load_dataset('imagefolder'), a random flip and "
         "the image processor in set_transform, a collate_fn stacking pixel_values (no input_ids), a ViT from a "
         "config-sized checkpoint"),
    Case("run_swag_style", "run_swag_style.py",
         ("--model_name_or_path", "{bert}", "--train_file", "{data}/swag.csv", "--do_train", "--max_seq_length",
          "40", "--per_device_train_batch_size", "4", "--max_steps", "6", "--learning_rate", "1e-3", *_HF_RUN),
         "multiple_choice", "run_swag: four (context, ending) pairs a row un-flattened to input_ids [batch, 4, seq], "
         "DataCollatorForMultipleChoice, AutoModelForMultipleChoice"),
    Case("run_qa_style", "run_qa_style.py",
         ("--model_name_or_path", "{bert}", "--train_file", "{data}/squad.jsonl", "--do_train", "--max_seq_length",
          "48", "--doc_stride", "16", "--per_device_train_batch_size", "8", "--max_steps", "6", "--learning_rate",
          "1e-3", *_HF_RUN),
         "question_answering", "run_qa: overflowing features with a stride, offset_mapping to start_positions/"
         "end_positions (no labels key), padded to max_length, default_data_collator"),
    Case("run_mlm_style", "run_mlm_style.py",
         ("--model_name_or_path", "{bert}", "--train_file", "{data}/text.txt", "--line_by_line", "--max_seq_length",
          "64", "--do_train", "--do_eval", "--per_device_train_batch_size", "8", "--max_steps", "6",
          "--learning_rate", "1e-3", *_HF_RUN),
         "masked_lm", "run_mlm --line_by_line: DataCollatorForLanguageModeling(mlm=True) draws a new mask every "
         "batch (the random stream must not move under measuring), labels -100 off the masked tokens"),
    Case("audio_classification_style", "audio_classification_style.py",
         ("--model_name_or_path", "{wav2vec2}", "--audio_dir", "{data}/audio", "--max_length_seconds", "0.1",
          "--do_train", "--remove_unused_columns", "False", "--per_device_train_batch_size", "8", "--max_steps", "6",
          "--learning_rate", "1e-3", *_HF_RUN),
         "audio_classification", "run_audio_classification: .npy clips randomly cropped in set_transform, "
         "input_values of differing lengths padded by the Trainer's default collator over the feature extractor, "
         "a Wav2Vec2 classifier with its feature encoder frozen"),
    Case("speech_ctc_style", "speech_ctc_style.py", ("{wav2vec2}", "{data}/audio", "{out}"),
         "ctc", "run_speech_recognition_ctc: a Wav2Vec2Processor, the example's DataCollatorCTCWithPadding "
         "(labels padded with -100), group_by_length on an input_length column, Wav2Vec2ForCTC"),
    Case("custom_module_pooler", "custom_module_pooler.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "classification", "an nn.Module of the script's own (not a PreTrainedModel: no .config) around AutoModel, "
         "mean pooling, returning a dict {loss, logits}; save_model writes its state_dict"),
    Case("rdrop_extra_outputs", "rdrop_extra_outputs.py",
         ("{bert}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "R-Drop Trainer subclass: two dropout forwards a step, CE + KL, self.log from inside "
         "compute_loss, (loss, outputs) with extra keys, evaluation every 4 steps"),
    Case("peft_prompt_tuning_clm", "peft_prompt_learning_clm.py",
         ("prompt_tuning", "{qwen3}", "{data}/cls_train.csv", "{out}"),
         "causal_lm", "PEFT's peft_prompt_tuning_clm notebook on the Trainer: PromptTuningConfig TEXT init (virtual "
         "tokens prepended as embeddings, position_ids dropped), rows left-padded to max_length by hand, prompt -100"),
    Case("peft_prefix_tuning_clm", "peft_prompt_learning_clm.py",
         ("prefix_tuning", "{qwen3}", "{data}/cls_train.csv", "{out}"),
         "causal_lm", "PEFT's peft_prefix_tuning_clm notebook: PrefixTuningConfig (past_key_values in every layer), "
         "the same left-padded rows, default_data_collator"),
    Case("peft_p_tuning_cls", "peft_prompt_learning_cls.py",
         ("--method", "p_tuning", "{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "PEFT's P_Tuning notebook with a decoder classifier: PromptEncoderConfig's MLP prompt "
         "encoder, SEQ_CLS (score head trained), DataCollatorWithPadding, grad accum 2"),
    Case("peft_prompt_tuning_cls", "peft_prompt_learning_cls.py",
         ("--method", "prompt_tuning", "{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "PEFT's Prompt_Tuning notebook with a decoder classifier: virtual tokens passed as "
         "inputs_embeds, so the classifier pools the last position, padding or not (transformers warns)"),
    Case("peft_loha_clm", "peft_lycoris_clm.py",
         ("--method", "loha", "--model", "{qwen3}", "--data", "{data}/text.txt", "--output_dir", "{out}"),
         "causal_lm", "LoHaConfig on attention and MLP, DataCollatorForLanguageModeling, grad accum 2, adapter saved"),
    Case("peft_lokr_clm", "peft_lycoris_clm.py",
         ("--method", "lokr", "--model", "{qwen3}", "--data", "{data}/text.txt", "--output_dir", "{out}"),
         "causal_lm", "LoKrConfig (Kronecker factors) in the same script"),
    Case("peft_ia3_clm", "peft_lycoris_clm.py",
         ("--method", "ia3", "--model", "{qwen3}", "--data", "{data}/text.txt", "--output_dir", "{out}"),
         "causal_lm", "IA3Config: scaling vectors on k/v and down_proj (feedforward_modules), no rank"),
    Case("peft_adalora_clm", "peft_adalora_clm.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "AdaLoRA: total_step, update_and_allocate from a callback's on_optimizer_step, orthogonal "
         "regularisation added to each micro-batch's loss, DataCollatorForSeq2Seq, grad accum 2"),
    Case("peft_dora_clm", "peft_dora_clm.py",
         ("--base_model", "{llama_nopad}", "--data_path", "{data}/text.txt", "--output_dir", "{out}", "--use_dora"),
         "causal_lm", "PEFT's dora_finetuning.py shape: use_dora=True, pad = eos on the tokenizer only the collator "
         "holds, rows padded to max_length ending in eos (speedup scored the eos the collator unscores)"),
    Case("peft_vera_cls", "peft_vera_cls.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "VeRA on a decoder classifier with modules_to_save=['score'], the script's own two-group "
         "AdamW, grad accum 2"),
    Case("peft_multi_adapter", "peft_multi_adapter.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "two LoRA adapters (r 4 and 16), set_adapter('mlp') trains the second (the report named the "
         "first's rank)"),
    Case("peft_kbit_prepare", "peft_kbit_prepare.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "prepare_model_for_kbit_training without quantization (CPU), LoRA all-linear, gradient "
         "checkpointing on, grad accum 4"),
    # a collator of the script's own that pads as DataCollatorWithPadding does: speedup packs it by what it does
    # (src/levers/collator_probe.py), its rows handed over as the Trainer hands them ("text" dropped first)
    Case("own_padding_collator", "own_padding_collator.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "a dataclass collator of its own: pops each row's label, tokenizer.pad(padding='longest'), "
         "labels stacked; the text column left for the Trainer to drop, grad accum 2"),
    # TrainingArguments and Trainer styles from the candidates list of the drop-in's promises (docs/dropin.md)
    Case("neftune_clm", "neftune_clm.py", ("{qwen3}", "{data}/alpaca.json", "{out}"),
         "causal_lm", "TrainingArguments(neftune_noise_alpha=5): noise on the embeddings in training, scaled by "
         "1/sqrt(batch width x hidden) (speedup packed it, and the wider packs trained with less noise, unsaid: "
         "now left alone, said why), alpaca prompts, DataCollatorForSeq2Seq, grad accum 2"),
    Case("tokens_seen_clm", "tokens_seen_clm.py", ("{llama_nopad}", "{data}/text.txt", "{out}"),
         "causal_lm", "include_num_input_tokens_seen=True (the Trainer's own count, 'all' positions) logged with "
         "each loss, pad = eos, DataCollatorForLanguageModeling (under packing 'non_padding' counted the packs' "
         "padding: tests/test_dropin_styles.py)"),
    Case("trl_formatting_func", "trl_formatting_func.py", ("{qwen3}", "{data}/alpaca.json", "{out}"),
         "causal_lm", "SFTTrainer(model=<path>, formatting_func=...) on instruction/input/output rows, "
         "model_init_kwargs, grad accum 2"),
    Case("trl_assistant_only_loss", "trl_assistant_only_loss.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "SFTConfig(assistant_only_loss=True, eos_token=...) with the script's own chat template "
         "carrying {% generation %} markers: only the assistant's tokens scored, grad accum 2"),
    Case("dataloader_workers_cls", "dataloader_workers_cls.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "dataloader_num_workers=2, persistent workers, prefetch_factor 2, pin_memory where a "
         "GPU is, data_seed: the collators (speedup's packing one too) run in worker processes"),
    Case("custom_sampler_subclass", "custom_sampler_subclass.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "a Trainer subclass overriding _get_train_sampler with a SequentialSampler over rows sorted "
         "by length, a curriculum (speedup packed in its own shuffled order, dropping it unsaid: now left alone)"),
    Case("epochs_adafactor_restarts", "epochs_adafactor_restarts.py", ("{qwen3}", "{data}/short.csv", "{out}"),
         "classification", "num_train_epochs=1.5 with no max_steps, optim='adafactor', cosine_with_restarts with "
         "lr_scheduler_kwargs num_cycles 2, disable_tqdm, remove_callback(PrinterCallback) and add_callback after "
         "construction, grad accum 2"),
    Case("fgm_training_step", "fgm_training_step.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "FGM adversarial training: a subclass's own training_step runs super()'s step, then "
         "a second forward and backward on perturbed embeddings; the Trainer's default collator from processing_class"),
    Case("kaggle_auto_batch", "kaggle_auto_batch.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "auto_find_batch_size, eval_on_start, accuracy and macro F1, best checkpoint by "
         "accuracy, trainer.predict on an unlabelled split"),
    Case("clm_eval_plateau", "clm_eval_plateau.py", ("{llama_nopad}", "{data}/text.txt", "{out}"),
         "causal_lm", "preprocess_logits_for_metrics (argmax), eval_accumulation_steps, reduce_lr_on_plateau, "
         "max_grad_norm=0, adamw_torch_fused"),
    Case("two_eval_sets_two_stages", "two_eval_sets_two_stages.py",
         ("{gpt2}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "eval_dataset as a dict of two sets, best checkpoint by eval_in_domain_loss; two "
         "train() calls on one Trainer (head only, then unfrozen)"),
    Case("trl_padding_free_lora", "trl_padding_free_lora.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "SFTConfig(padding_free=True) without packing, completion-only loss, LoRA, "
         "model_init_kwargs"),
    Case("compiled_before_trainer", "compiled_before_trainer.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "model = torch.compile(model) before the Trainer (remove_unused_columns=False, as the "
         "Trainer asks), bf16 autocast on the CPU, logging every 2 steps"),
    Case("tuple_rows_collate", "tuple_rows_collate.py", ("{gpt2}", "{data}/short.csv", "{out}"),
         "classification", "a torch Dataset of (text, label) tuples tokenised per batch by a collate_fn, "
         "remove_unused_columns=False, grad accum 2, one epoch"),
    Case("clm_maxlen_labels_copy", "clm_maxlen_labels_copy.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "padding='max_length' at map time, labels = input_ids.copy() (every pad a target), set_format torch, default_data_collator"),
    Case("decoder_token_cls", "decoder_token_cls.py", ("{gpt2}", "{data}/ner.jsonl", "{out}"),
         "token_classification", "GPT2ForTokenClassification with DataCollatorForTokenClassification, pad = eos"),
    Case("freeze_lr_callback", "freeze_lr_callback.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "a callback freezes the embeddings and layer 0 at step 3 and halves the scheduler's base rates at step 5"),
    Case("gc_compile_clm", "gc_compile_clm.py", ("{llama_nopad}", "{data}/alpaca.json", "{out}"),
         "causal_lm", "gradient_checkpointing with torch_compile (aot_eager), pad = eos, pad_to_multiple_of=16"),
    Case("gradual_unfreeze", "gradual_unfreeze.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "the script's own AdamW over every weight, the body frozen, a callback unfreezing it at steps 2 and 4"),
    Case("kfold_cv", "kfold_cv.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "3-fold cross-validation: a new Trainer and output_dir a fold, evaluate() after each"),
    Case("left_pad_generator_cls", "left_pad_generator_cls.py", ("{llama_nopad}", "{data}/cls_train.csv", "{out}"),
         "classification", "left padding, pad = eos, an eos closing every text, Dataset.from_generator"),
    Case("loss_func_smoothing_cls", "loss_func_smoothing_cls.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "compute_loss_func with label smoothing and a focal weight over num_items_in_batch, grad accum 4"),
    Case("multilabel_earlystop", "multilabel_earlystop.py", ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "multi-label, EarlyStoppingCallback on a micro-F1 of its own, the best model loaded at the end"),
    Case("resume_specific_ckpt", "resume_specific_ckpt.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "resume_from_checkpoint naming checkpoint-4 (not the latest), then a reference run"),
    Case("transform_eval_first", "transform_eval_first.py", ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "with_transform tokenising on the fly, remove_unused_columns=False, evaluate() before train()"),
    Case("trl_wrapped_textfield", "trl_wrapped_textfield.py", ("{gpt2}", "{data}/cls_train.csv", "{out}"),
         "causal_lm", "SFTTrainer, dataset_text_field, packing_strategy='wrapped', loss_type='dft'"),
    Case("user_torch_compile", "user_torch_compile.py", ("{qwen3}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "TrainingArguments(torch_compile=True, torch_compile_backend='aot_eager'): the Trainer compiles "
         "the whole model; speedup's compile levers say so and stay off, its packs meet the compiled model"),
    # a fifth hand: batches that are not a dict of tensors, TRL's experimental preference trainers, datasets
    # joined by torch, 8-bit optimizers, the Trainer's own log() overridden, bf16 weights on the CPU
    Case("tensor_dataset_tuple_batch", "tensor_dataset_tuple_batch.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "TensorDataset(x, y) batched by torch's default_collate (a batch is a list, not a dict), a "
         "subclass's compute_loss unpacking `x, y = inputs` with its own shifted CE, grad accum 2"),
    Case("multitask_dict_labels", "multitask_dict_labels.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "an nn.Module of its own with two heads over AutoModel, `labels` a dict of two tensors "
         "({'topic', 'urgent'}) from a collate_fn calling tokenizer.pad, compute_loss summing two CEs, grad accum 2"),
    Case("string_ids_passthrough", "string_ids_passthrough.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "remove_unused_columns=False, a collator wrapping DataCollatorWithPadding that carries a "
         "list of string ids beside the tensors, compute_loss popping them for per-example losses, grad accum 2"),
    Case("trl_orpo_lora", "trl_orpo_cpo_lora.py",
         ("--method", "orpo", "--model", "{qwen3}", "--data", "{data}/pref", "--output_dir", "{out}"),
         "causal_lm", "trl.experimental.orpo's ORPOTrainer/ORPOConfig on prompt/chosen/rejected rows (no reference "
         "model: NLL plus an odds-ratio term), LoRA via peft_config, a loaded model, grad accum 2"),
    Case("trl_cpo_simpo_lora", "trl_orpo_cpo_lora.py",
         ("--method", "cpo", "--model", "{qwen3}", "--data", "{data}/pref", "--output_dir", "{out}"),
         "causal_lm", "trl.experimental.cpo's CPOTrainer with loss_type='simpo', cpo_alpha 0.5, simpo_gamma, LoRA, "
         "the same rows"),
    Case("concat_datasets_padding", "concat_datasets_padding.py",
         ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "torch ConcatDataset of two tokenised datasets.Dataset, then torch Subsets for train and "
         "eval, the text column left for the Trainer's column-removing collator, DataCollatorWithPadding"),
    Case("bnb_adamw_8bit", "bnb_8bit_optim.py", ("{qwen3}", "{data}/chat.jsonl", "{out}", "adamw_bnb_8bit"),
         "causal_lm", "optim='adamw_bnb_8bit' (bitsandbytes on the CPU), LoRA on every linear, chat-template rows, "
         "DataCollatorForLanguageModeling, constant_with_warmup, grad accum 2"),
    Case("bnb_paged_adamw_8bit", "bnb_8bit_optim.py", ("{qwen3}", "{data}/chat.jsonl", "{out}", "paged_adamw_8bit"),
         "causal_lm", "optim='paged_adamw_8bit' as QLoRA notebooks write it (unpaged on the CPU), the same script"),
    Case("log_override_eval_callback", "log_override_eval_callback.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "a subclass's log() adding perplexity and a clock to each log; a callback setting "
         "control.should_evaluate/should_save at steps 3 and 6 (strategies 'no') and calling trainer.log itself"),
    Case("bf16_weights_cpu", "bf16_weights_cpu.py", ("{qwen3}", "{data}/alpaca.json", "{out}"),
         "causal_lm", "from_pretrained(torch_dtype=torch.bfloat16), bf16=True, use_cpu=True, prompt masked -100, "
         "DataCollatorForSeq2Seq, grad accum 2"),
    Case("bf16_default_dtype_cpu", "bf16_weights_cpu.py", ("{qwen3}", "{data}/alpaca.json", "{out}", "--default-dtype"),
         "causal_lm", "torch.set_default_dtype(torch.bfloat16) before loading (from_pretrained still loads "
         "float32 weights; the Trainer's loss accumulator is made bf16, so logged losses are bf16-rounded), "
         "bf16=True, use_cpu=True, the same script"),
    Case("dpo_precompute_ref_lora", "dpo_precompute_ref_lora.py", ("{qwen3}", "{data}/pref_conv", "{out}"),
         "causal_lm", "DPOTrainer from the user's own script: LoRA via peft_config, precompute_ref_log_probs=True "
         "(the reference scored once before training), loss_type=['sigmoid', 'sft'] with loss_weights, "
         "conversational rows, grad accum 2"),
    # styles added by a later hand: schedules and optimizers by name, added tokens, streaming metrics, overridden
    # optimizer and training step, checkpointing enabled before PEFT, resuming on the same Trainer, mixed sources
    Case("lora_noclip_sgd_wsd", "lora_noclip_sgd_wsd.py", ("{llama_nopad}", "{data}/text.txt", "{out}"),
         "causal_lm", "LoRA on q/k/v/o, pad = unk, micro-batch 2 x grad accum 4, max_grad_norm=0.0, optim='sgd' with "
         "optim_args momentum/nesterov, warmup_stable_decay with lr_scheduler_kwargs"),
    Case("added_tokens_resize_lora", "added_tokens_resize_lora.py", ("{llama_nopad}", "{data}/chat.jsonl", "{out}"),
         "causal_lm", "new [PAD] and role tokens, resize_token_embeddings(pad_to_multiple_of=8), LoRA with "
         "modules_to_save=['embed_tokens', 'lm_head'], user turn masked -100, DataCollatorForSeq2Seq, grad accum 2"),
    Case("clm_batch_eval_metrics", "clm_batch_eval_metrics.py",
         ("--model", "{qwen3}", "--text", "{data}/text.txt", "--out", "{out}"),
         "causal_lm", "batch_eval_metrics=True with a stateful compute_metrics(eval_pred, compute_result), "
         "preprocess_logits_for_metrics argmax, group_texts blocks, cosine_with_min_lr (min_lr_rate), eval every 3"),
    Case("llrd_create_optimizer", "llrd_create_optimizer.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "classification", "a Trainer subclass's create_optimizer: layer-wise LR decay groups over BERT, the Trainer's "
         "linear schedule on them, padding='max_length', grad accum 2"),
    Case("manual_backward_step", "manual_backward_step.py", ("{qwen3}", "{data}/short.csv", "{out}"),
         "classification", "a subclass's training_step replacing the Trainer's: its own forward, a confidence "
         "penalty on the logits, loss / grad accum, self.accelerator.backward; DataCollatorWithPadding, grad accum 2"),
    Case("gc_enable_before_peft", "gc_enable_before_peft.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "gradient_checkpointing_enable(use_reentrant=False) and enable_input_require_grads on the base "
         "model before get_peft_model, no gradient_checkpointing argument; torch_empty_cache_steps, "
         "average_tokens_across_devices, DataCollatorForSeq2Seq, grad accum 2"),
    Case("resume_same_trainer_twice", "resume_same_trainer_twice.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "train() to 4 steps saving checkpoints, then trainer.args.max_steps = 8 and "
         "train(resume_from_checkpoint=True) on the same Trainer object"),
    Case("interleave_with_format", "interleave_with_format.py",
         ("--model", "{qwen3}", "--main", "{data}/cls_train.csv", "--extra", "{data}/cls_dev.csv", "--out", "{out}"),
         "classification", "interleave_datasets (probabilities, all_exhausted), with_format('torch', columns=[...]) "
         "hiding the text column, DataCollatorWithPadding"),
    Case("trl_full_loss_lora", "trl_full_loss_lora.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "SFTTrainer on prompt/completion rows with completion_only_loss=False, max_length=None, "
         "pad_to_multiple_of=8, dataset_kwargs, peft_config, a loaded model, grad accum 2"),
    Case("bert_pair_pad8", "bert_pair_pad8.py", ("{bert}", "{data}/sts.csv", "{out}"),
         "classification", "sentence pairs with token_type_ids, DataCollatorWithPadding(pad_to_multiple_of=8), "
         "cosine_with_min_lr (min_lr), accuracy and F1"),
    # a third hand: an optimizer class in the constructor, a teacher inside compute_loss, inputs without
    # input_ids or labels, Subsets and a collator padding to a width, datasets' streaming, a model that is no
    # transformers model, two regression targets, a weighted sampler in get_train_dataloader
    Case("optimizer_cls_kwargs_click", "optimizer_cls_kwargs_click.py",
         ("--model", "{qwen3}", "--train-csv", "{data}/cls_train.csv", "--output-dir", "{out}"),
         "classification", "Trainer(optimizer_cls_and_kwargs=(RAdam, {lr: 3e-3, ...})) with learning_rate left at "
         "its default (unused), weight_decay groups, polynomial schedule with lr_scheduler_kwargs, "
         "dataloader_drop_last, a click command line"),
    Case("distill_teacher_subclass", "distill_teacher_subclass.py",
         ("--teacher", "{qwen3}", "--text_file", "{data}/text.txt", "--per_device_train_batch_size", "4",
          "--gradient_accumulation_steps", "2", "--max_steps", "8", "--learning_rate", "1e-3", "--seed", "7",
          *_HF_RUN),
         "causal_lm", "a Trainer subclass distilling a frozen teacher (self.teacher, its forward under no_grad in "
         "compute_loss: CE + T^2 KL), a 1-layer student from_config, a TrainingArguments subclass dataclass with "
         "alpha/temperature, grad accum 2 with a per-micro-batch mean"),
    Case("biencoder_inbatch", "biencoder_inbatch.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "contrastive", "a two-tower nn.Module over one BERT, rows of q_input_ids/p_input_ids (no input_ids, no "
         "labels: in-batch negatives built in forward), a collator padding each side with tokenizer.pad"),
    Case("random_split_collator_maxlen", "random_split_collator_maxlen.py",
         ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "torch random_split Subsets of a datasets.Dataset (text column removed per batch by the "
         "Trainer's column-removing collator), DataCollatorWithPadding(padding='max_length', max_length=64), "
         "grad accum 2"),
    Case("hf_streaming_omegaconf", "hf_streaming_omegaconf.py",
         ("model={qwen3}", "data={data}/chat.jsonl", "out={out}"),
         "causal_lm", "load_dataset(streaming=True): a datasets.IterableDataset shuffled by a seeded buffer, chat "
         "template rendered in a lazy map, max_steps; OmegaConf YAML defaults merged with a dotlist; grad accum 2"),
    Case("gru_tuple_output", "gru_tuple_output.py", ("{qwen3}", "{data}/cls_train.csv", "{out}"),
         "classification", "a GRU classifier of the script's own (no transformers model), forward(token_ids, "
         "lengths, targets) returning a tuple (loss, logits), label_names=['targets'], pad_sequence collate_fn, "
         "grad accum 2, an Experiment class"),
    Case("multi_target_regression", "multi_target_regression.py", ("{qwen3}", "{data}/sts.csv", "{out}"),
         "regression", "num_labels=2 with problem_type='regression' (MSE over two float targets a row), sentence "
         "pairs, num_train_epochs=2 with eval once an epoch and a loss every 2 steps"),
    Case("weighted_sampler_typer", "weighted_sampler_typer.py",
         ("--model", "{qwen3}", "--csv", "{data}/cls_train.csv", "--out", "{out}"),
         "classification", "a subclass's get_train_dataloader returning its own DataLoader with a "
         "WeightedRandomSampler (accelerator.prepare'd), imbalanced classes, a typer command line, grad accum 2"),
    # a newcomer's try of the drop-in, 2026-12-07: styles none of the above had
    Case("notebook_train_twice", "notebook_train_twice.py", ("{qwen3}", "{data}/text.txt", "{out}"),
         "causal_lm", "a notebook's cells: remove_callback, add_callback, pop_callback, then train() twice, "
         "args.max_steps raised on the script's own TrainingArguments and trainer.args.learning_rate between them "
         "(under speedup the Trainer once held a copy: 4 steps for 6), logging_first_step"),
    Case("dict_head_label_names", "dict_head_label_names.py",
         ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "LastTokenClassifier", "a PreTrainedModel of the script's own (LlamaModel and a head) returning a dict with "
         "no loss, labels under label_names=['target'], compute_loss overridden, prediction_loss_only, evaluate() "
         "before train() and predict() after, grad accum 2"),
    Case("activation_ckpt_fused_clm", "activation_ckpt_fused_clm.py", ("{llama_nopad}", "{data}/text.txt", "{out}"),
         "causal_lm", "transformers 5's activation_checkpointing with every_n_layers=2, adamw_torch_fused, "
         "torch_empty_cache_steps, logging_steps as a ratio, dataloader_drop_last, pad = eos, grad accum 2"),
    Case("determinism_split_batches_cls", "determinism_split_batches_cls.py",
         ("{qwen3}", "{data}/short.csv", "{out}"),
         "classification", "full_determinism, data_seed, accelerator_config split_batches, skip_memory_metrics=False, "
         "enable_jit_checkpoint, an inverse_sqrt schedule with a warm-up ratio"),
    Case("eval_inputs_metrics_cls", "eval_inputs_metrics_cls.py",
         ("{qwen3}", "{data}/cls_train.csv", "{data}/cls_dev.csv", "{out}"),
         "classification", "a classifier from a config, include_for_metrics=['inputs', 'loss'], eval_steps as a "
         "ratio, eval_delay, eval_do_concat_batches=False, eval_accumulation_steps, predict(metric_key_prefix='test')"),
    Case("generator_rebalance_sft", "generator_rebalance_sft.py", ("{qwen3}", "{data}/pc.jsonl", "{out}"),
         "causal_lm", "Dataset.from_generator with a length column of its own, train_sampling_strategy="
         "'batch_rebalance', num_train_epochs=0.7, dataloader_drop_last, DataCollatorForSeq2Seq over prompt and "
         "completion rows"),
    # sentence-transformers' own trainers (a Trainer subclass with its own collator and compute_loss); skipped
    # where sentence-transformers is not installed (CI)
    Case("st_mnrl_pairs", "st_mnrl_pairs.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "embedding", "SentenceTransformerTrainer, (anchor, positive) pairs, MultipleNegativesRankingLoss, "
         "BatchSamplers.NO_DUPLICATES, grad accum 2: batches of anchor_input_ids/positive_input_ids, no labels",
         needs=("sentence_transformers",)),
    Case("st_cosent_sts_eval", "st_cosent_sts_eval.py",
         ("--model", "{bert}", "--sts", "{data}/sts.csv", "--output-dir", "{out}"),
         "embedding", "models.Transformer + models.Pooling, CoSENTLoss on a float `score` column, "
         "EmbeddingSimilarityEvaluator and eval loss every 4 steps", needs=("sentence_transformers",)),
    Case("st_multitask_softmax_cosent", "st_multitask_softmax_cosent.py", ("{bert}", "{data}/sts.csv", "{out}"),
         "embedding", "a dict of two datasets with a loss each (SoftmaxLoss 3 classes, CoSENTLoss), round robin: a "
         "string dataset_name in every batch", needs=("sentence_transformers",)),
    Case("cross_encoder_bce", "cross_encoder_bce.py", ("{bert}", "{data}/cls_train.csv", "{out}"),
         "reranking", "CrossEncoderTrainer, num_labels=1, BinaryCrossEntropyLoss: batches of raw text lists "
         "tokenised inside the loss, grad accum 2, dataloader_drop_last", needs=("sentence_transformers",)),
]
BY_NAME = {case.name: case for case in CASES}
