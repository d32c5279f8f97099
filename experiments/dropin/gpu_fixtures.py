"""What the GPU run's corpus scripts train on: a word-level tokenizer, the configs of Qwen3-4B and Llama-3.2-3B
(random weights: the scripts build them with --config_name), and rows of the field reports' lengths.
    python3 experiments/dropin/gpu_fixtures.py DIR [LAYERS]   # LAYERS: fewer layers of the real width
- DIR/cls.csv: 4,096 rows of ~N(211, 30) words in [40, 287] (the account classifier's), 280 classes, the class a
  function of the first word (learnable);
- DIR/sft/train.jsonl: 4,096 rows of ~N(400, 150) words in [32, 1024] (chat lengths);
- DIR/tok, DIR/qwen3_4b, DIR/llama_3b.
"""
import csv
import json
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, PreTrainedTokenizerFast, Qwen3Config

root = Path(sys.argv[1])
layers = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
root.mkdir(parents=True, exist_ok=True)
words = [f"w{i}" for i in range(8000)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]", "[BOS]"] + words)},
                                 unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]",
                        bos_token="[BOS]", model_max_length=2048).save_pretrained(root / "tok")
Qwen3Config(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=layers or 36,
            num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True, pad_token_id=0,
            eos_token_id=2, bos_token_id=3).save_pretrained(root / "qwen3_4b")
LlamaConfig(vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=layers or 28,
            num_attention_heads=24, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True, pad_token_id=0,
            eos_token_id=2, bos_token_id=3, rope_theta=500000.0).save_pretrained(root / "llama_3b")
rng = np.random.default_rng(0)


def rows(n, mean, sd, low, high):
    lengths = np.clip(rng.normal(mean, sd, n), low, high).astype(int)
    return [" ".join(words[j] for j in rng.integers(0, len(words), k)) for k in lengths]


with open(root / "cls.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["text", "label"])
    for text in rows(4096, 211, 30, 40, 287):
        w.writerow([text, int(text.split()[0][1:]) % 280])
(root / "sft").mkdir(exist_ok=True)
(root / "sft" / "train.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in rows(4096, 400, 150, 32, 1024)))
print(f"fixtures in {root} (layers: {layers or 'full depth'})")
