"""What the corpus scripts run on, made locally in a second (no download): tiny checkpoints saved the way a
downloaded one is (config, weights, tokenizer), and data files in the formats users hand to load_dataset.

    make_fixtures(root) -> {"qwen3": dir, "llama_nopad": dir, "gpt2": dir, "bert": dir, "bart": dir, "data": dir}

Checkpoints: `qwen3` (a Qwen3 causal LM; its tokenizer has pad, eos, bos and a chat template; it also loads as a
sequence or token classifier, heads newly initialised), `llama_nopad` (Llama, no pad token: users set pad = eos),
`gpt2` (GPT-2, eos only: run_clm's), `bert` ([CLS] ... [SEP], no eos), `bart` (an encoder-decoder).
Data (in data/): cls.csv (text,label: 4 classes), sts.csv (sentence1,sentence2,score), ner.jsonl (tokens,
ner_tags), sum.jsonl (document,summary), chat.jsonl (messages), pc.jsonl (prompt,completion), alpaca.jsonl
(instruction,input,output), text.txt (a line a document), short.csv (5-35 tokens a row), sft/train.jsonl (text:
a folder load_dataset reads, as TRL's sft.py --dataset_name takes it).
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

WORDS = ("the a tax account paid due late refund form bank office invoice credit debit fee rate client bill "
         "order month year cash card loan fund note sale cost item").split()
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} [EOS] {% endfor %}"
                 "{% if add_generation_prompt %}assistant: {% endif %}")


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _tokenizer(specials: list[str], template: bool = False, **named):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(specials + WORDS + ["user", "assistant", "system", ":"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if template:  # BERT's [CLS] ... [SEP]
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", model_max_length=128, **named)


def _checkpoints(root: Path) -> dict[str, str]:
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM)

    torch.manual_seed(0)
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 256}
    made = {}
    tok = _tokenizer(["[PAD]", "[UNK]", "[EOS]", "[BOS]"], pad_token="[PAD]", eos_token="[EOS]", bos_token="[BOS]")
    tok.chat_template = CHAT_TEMPLATE
    made["qwen3"] = (tok, Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tok), pad_token_id=0, eos_token_id=2,
                                                       bos_token_id=3, tie_word_embeddings=True, **small)))
    tok = _tokenizer(["[UNK]", "<s>", "</s>"], eos_token="</s>", bos_token="<s>")
    made["llama_nopad"] = (tok, LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), bos_token_id=1, eos_token_id=2,
                                                             **small)))
    tok = _tokenizer(["[UNK]", "<|endoftext|>"], eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    made["gpt2"] = (tok, GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2,
                                                    n_positions=256, bos_token_id=1, eos_token_id=1)))
    tok = _tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], template=True, pad_token="[PAD]",
                     cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    made["bert"] = (tok, BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=64, pad_token_id=0,
                                                    max_position_embeddings=256)))
    tok = _tokenizer(["<pad>", "[UNK]", "</s>", "<s>"], pad_token="<pad>", eos_token="</s>", bos_token="<s>")
    made["bart"] = (tok, BartForConditionalGeneration(BartConfig(
        vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=256,
        pad_token_id=0, bos_token_id=3, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)))
    out = {}
    for name, (tok, model) in made.items():
        path = root / name
        tok.save_pretrained(path)
        model.save_pretrained(path)
        out[name] = str(path)
    return out


def _data(root: Path) -> str:
    rng = random.Random(0)
    data = root / "data"
    (data / "sft").mkdir(parents=True)
    with open(data / "cls.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(160):
            text = _text(rng, 4, 40)
            w.writerow([text, (len(text.split()) + i) % 4])
    with open(data / "short.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(240):
            w.writerow([_text(rng, 5, 35), i % 3])
    with open(data / "sts.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sentence1", "sentence2", "score"])
        for _ in range(128):
            w.writerow([_text(rng, 3, 14), _text(rng, 3, 14), round(rng.uniform(0, 5), 2)])

    def jsonl(name, rows):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    tags = ["O", "B-ORG", "I-ORG", "B-AMT"]
    jsonl("ner.jsonl", [{"tokens": (t := _text(rng, 3, 20).split()), "ner_tags": [rng.randrange(4) for _ in t]}
                        for _ in range(128)])
    (data / "ner_labels.json").write_text(json.dumps(tags))
    jsonl("sum.jsonl", [{"document": _text(rng, 10, 40), "summary": _text(rng, 2, 8)} for _ in range(96)])
    jsonl("chat.jsonl", [{"messages": [{"role": "user", "content": _text(rng, 3, 15)},
                                       {"role": "assistant", "content": _text(rng, 3, 20)}]} for _ in range(96)])
    jsonl("pc.jsonl", [{"prompt": _text(rng, 3, 12), "completion": _text(rng, 2, 12)} for _ in range(96)])
    jsonl("alpaca.jsonl", [{"instruction": _text(rng, 3, 10), "input": _text(rng, 0, 6), "output": _text(rng, 2, 14)}
                           for _ in range(128)])
    (data / "text.txt").write_text("".join(_text(rng, 5, 60) + "\n" for _ in range(160)))
    jsonl("sft/train.jsonl", [{"text": _text(rng, 4, 30)} for _ in range(96)])
    return str(data)


def make_fixtures(root: Path) -> dict[str, str]:
    root = Path(root)
    return {**_checkpoints(root), "data": _data(root)}
