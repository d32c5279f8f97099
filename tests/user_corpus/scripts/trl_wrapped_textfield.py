"""TRL SFT continued pre-training on a corpus whose text column is not called "text": a CSV with a "body" column,
SFTConfig(dataset_text_field="body", packing=True, packing_strategy="wrapped", max_length=32) (wrapped packing cuts
documents across rows, classic run_clm-style blocks), eos appended by TRL, loss_type="dft" (TRL's Dynamic
Fine-Tuning loss), a GPT-2 model and tokenizer loaded by the script (no pad token: pad = eos), grad accum 2.

    python trl_wrapped_textfield.py GPT2_DIR cls_train.csv OUT
"""
import sys
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
from trl import SFTConfig, SFTTrainer

MODEL, CSV, OUT = sys.argv[1:4]
set_seed(23)
ds = load_dataset("csv", data_files=CSV)["train"].rename_column("text", "body").remove_columns(["label"])
tok = AutoTokenizer.from_pretrained(MODEL)
tok.pad_token = tok.eos_token
model = AutoModelForCausalLM.from_pretrained(MODEL)
cfg = SFTConfig(output_dir=OUT, dataset_text_field="body", packing=True, packing_strategy="wrapped", max_length=32,
                loss_type=sys.argv[4] if len(sys.argv) > 4 else "dft",
                per_device_train_batch_size=4, gradient_accumulation_steps=2, learning_rate=1e-3, max_steps=8,
                logging_steps=1, save_strategy="no", report_to="none", seed=23, bf16=False)
trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
trainer.train()
print("LOSSES", [e["loss"] for e in trainer.state.log_history if "loss" in e])
