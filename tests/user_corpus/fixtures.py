"""What the corpus scripts train on, made locally and seeded (nothing is downloaded): tiny checkpoints saved the
way a downloaded one is (config.json, random weights, tokenizer files), and data files in the formats users hand
to load_dataset, pandas or open().

    make_fixtures(root) -> {placeholder: path}

Checkpoints (hidden size 32, 2 layers):
  qwen3        Qwen3ForCausalLM; word-level tokenizer with pad, bos, eos (<|im_end|>) and a ChatML-like
               chat_template; AutoModelForSequenceClassification loads it too (a new `score` head)
  llama_nopad  LlamaForCausalLM; adds <s> like Llama's tokenizer, has eos, and NO pad token
  gpt2         GPT2LMHeadModel; byte-level BPE with <|endoftext|> as bos/eos/unk, no pad (run_clm's case)
  bert         BertForMaskedLM; WordPiece (some words split into ##pieces), [CLS] ... [SEP], [PAD], no eos
  seq2seq      BartForConditionalGeneration; <s> ... </s>, pad, decoder_start = eos
Data (placeholder `data`, a folder): cls_train.csv / cls_dev.csv (text,label: 5 classes), short.csv (text,label:
5-35 tokens), sts.csv (sentence1,sentence2,score), ner.jsonl (tokens, ner_tags as tag names), sum.jsonl
(document,summary), chat.jsonl (messages), pc.jsonl (prompt,completion), alpaca.json (one JSON list of
instruction/input/output, as alpaca_data.json is), text.txt (a document a line).
`sft` is a folder load_dataset(<folder>) reads as a DatasetDict (train.jsonl, test.jsonl of messages), the way
TRL's sft.py takes --dataset_name.
Beyond text (_other_modalities): `vit` (ViTForImageClassification, 16x16 images, a ViTImageProcessor) and
`wav2vec2` (Wav2Vec2ForCTC, a character CTC tokenizer and a feature extractor); data/images/ (an imagefolder,
train/<class>/*.png), data/audio/ (*.npy waveforms at 16 kHz and audio.csv: file,label,text), swag.csv (sent1,
sent2, ending0-3, label), squad.jsonl (id, context, question, answers{text, answer_start}).
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

# Five topics, so that labels follow the words (a classifier can learn them); fillers and entities are shared.
TOPICS = {
    "billing": "invoice refund charge payment card fee bill credit debit price",
    "shipping": "parcel delivery courier package tracking address late lost box truck",
    "account": "password login email profile username reset locked security code verify",
    "product": "screen battery charger cable button speaker camera broken warranty repair",
    "weather": "rain snow wind storm sunny cloudy cold warm forecast temperature",
}
FILLER = "the a my your is was not very please today yesterday again still and but with for from to of it".split()
ENTITIES = {"ORG": "acme globex initech umbrella hooli".split(), "LOC": "paris berlin tokyo lima oslo cairo".split()}
ROLES = ["user", "assistant", "system"]
WORDS = sorted({w for t in TOPICS.values() for w in t.split()} | set(FILLER) | set(ROLES)
               | {w for names in ENTITIES.values() for w in names} | {"summary", "instruction", "response", "input"})
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 512}


def _word_level(specials: list[str], bos_template: str | None = None, **named):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=named.get("unk_token", specials[1])))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bos_template:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos_template} $A",
                                                           special_tokens=[(bos_template, vocab[bos_template])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=512, **named)


def _bert_wordpiece():
    """BERT's own kind: lower-cased WordPiece small enough that rarer words split into ##pieces (so run_ner's
    label alignment has continuation tokens to mask)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    common = [w for t in TOPICS.values() for w in t.split()] + FILLER
    tok.train_from_iterator(WORDS + common * 20, trainers.WordPieceTrainer(vocab_size=240, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=512, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_input_names=["input_ids", "token_type_ids", "attention_mask"])


def _gpt2_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = [" ".join(WORDS[i:i + 8]) for i in range(0, len(WORDS), 4)]
    tok.train_from_iterator(text * 4, trainers.BpeTrainer(vocab_size=520, special_tokens=["<|endoftext|>"],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=1024, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>", unk_token="<|endoftext|>")


def _checkpoints(root: Path) -> dict[str, str]:
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM)

    torch.manual_seed(0)
    made = {}
    tok = _word_level(["<|pad|>", "<|unk|>", "<|bos|>", "<|im_end|>", "<|im_start|>"], pad_token="<|pad|>",
                      unk_token="<|unk|>", bos_token="<|bos|>", eos_token="<|im_end|>",
                      additional_special_tokens=["<|im_start|>"])
    tok.chat_template = CHAT_TEMPLATE
    made["qwen3"] = tok, Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tok), pad_token_id=0, bos_token_id=2,
                                                      eos_token_id=3, tie_word_embeddings=True, **SMALL))
    tok = _word_level(["<unk>", "<s>", "</s>"], bos_template="<s>", bos_token="<s>", eos_token="</s>",
                      unk_token="<unk>")  # Llama's ids: unk 0, bos 1, eos 2
    made["llama_nopad"] = tok, LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), bos_token_id=1, eos_token_id=2,
                                                            pad_token_id=None, **SMALL))
    tok = _gpt2_bpe()
    made["gpt2"] = tok, GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2,
                                                   n_positions=512, bos_token_id=0, eos_token_id=0))
    tok = _bert_wordpiece()
    made["bert"] = tok, BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                                   num_attention_heads=2, intermediate_size=64, pad_token_id=0,
                                                   max_position_embeddings=512))
    tok = _word_level(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], pad_token="<pad>", bos_token="<s>",
                      eos_token="</s>", unk_token="<unk>", mask_token="<mask>")
    from tokenizers import processors  # BART wraps every text in <s> ... </s>

    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    made["seq2seq"] = tok, BartForConditionalGeneration(BartConfig(
        vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=512,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2))
    paths = {}
    for name, (tok, model) in made.items():
        path = root / name
        tok.save_pretrained(path)
        model.save_pretrained(path)
        paths[name] = str(path)
    return paths


def _sentence(rng: random.Random, topic: str, low: int, high: int) -> list[str]:
    topical = TOPICS[topic].split()
    return [rng.choice(topical) if rng.random() < 0.45 else rng.choice(FILLER) for _ in range(rng.randint(low, high))]


def _write_csv(path: Path, header: list[str], rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _data(root: Path) -> tuple[str, str]:
    rng = random.Random(1234)
    names = sorted(TOPICS)
    data, sft = root / "data", root / "sft"
    data.mkdir(parents=True)
    sft.mkdir()

    def labelled(n, low, high):
        return [(" ".join(_sentence(rng, names[i % 5], low, high)), i % 5) for i in rng.sample(range(n), n)]

    _write_csv(data / "cls_train.csv", ["text", "label"], labelled(160, 4, 60))
    _write_csv(data / "cls_dev.csv", ["text", "label"], labelled(40, 4, 60))
    _write_csv(data / "short.csv", ["text", "label"], [(t, y % 3) for t, y in labelled(192, 5, 35)])
    sts = []
    for _ in range(128):
        a, b = rng.choice(names), rng.choice(names)
        sts.append((" ".join(_sentence(rng, a, 3, 18)), " ".join(_sentence(rng, b, 3, 18)),
                    round(4.0 + rng.random() if a == b else rng.uniform(0.0, 2.5), 2)))
    _write_csv(data / "sts.csv", ["sentence1", "sentence2", "score"], sts)

    ner = []
    for _ in range(128):
        tokens, tags = [], []
        for _ in range(rng.randint(2, 6)):
            if rng.random() < 0.4:
                kind = rng.choice(sorted(ENTITIES))
                span = [rng.choice(ENTITIES[kind]) for _ in range(rng.randint(1, 2))]
                tokens += span
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(span) - 1)
            else:
                words = _sentence(rng, rng.choice(names), 1, 6)
                tokens += words
                tags += ["O"] * len(words)
        ner.append({"tokens": tokens, "ner_tags": tags})
    _write_jsonl(data / "ner.jsonl", ner)

    _write_jsonl(data / "sum.jsonl", [{"document": " ".join(_sentence(rng, t, 12, 70)),
                                       "summary": " ".join(["summary", t] + _sentence(rng, t, 1, 10))}
                                      for t in (rng.choice(names) for _ in range(96))])

    def chat(topic):
        return {"messages": [{"role": "user", "content": " ".join(_sentence(rng, topic, 3, 20))},
                             {"role": "assistant", "content": " ".join(_sentence(rng, topic, 2, 30))}]}

    _write_jsonl(data / "chat.jsonl", [chat(rng.choice(names)) for _ in range(96)])
    _write_jsonl(sft / "train.jsonl", [chat(rng.choice(names)) for _ in range(80)])
    _write_jsonl(sft / "test.jsonl", [chat(rng.choice(names)) for _ in range(16)])
    _write_jsonl(data / "pc.jsonl", [{"prompt": " ".join(_sentence(rng, t, 3, 16)),
                                      "completion": " " + " ".join(_sentence(rng, t, 2, 20))}
                                     for t in (rng.choice(names) for _ in range(96))])
    alpaca = [{"instruction": " ".join(_sentence(rng, t, 3, 12)),
               "input": " ".join(_sentence(rng, t, 2, 10)) if rng.random() < 0.5 else "",
               "output": " ".join(_sentence(rng, t, 2, 24))} for t in (rng.choice(names) for _ in range(128))]
    (data / "alpaca.json").write_text(json.dumps(alpaca, indent=1))
    (data / "text.txt").write_text("".join(" ".join(_sentence(rng, rng.choice(names), 5, 80)) + "\n"
                                           for _ in range(160)))
    _preferences(data, names)
    return str(data), str(sft)


def _preferences(data: Path, names: list[str]) -> None:
    """Folders TRL's scripts take as --dataset_name: prompt/chosen/rejected rows as text (pref/, DPO and reward
    modelling) and as messages (pref_conv/, GRPO's prompts), prompt/completion/label rows (kto/), prompt/completion
    rows (pc/, distillation)."""
    rng = random.Random(7)  # its own stream: the other files stay as they were

    def pair():
        topic = rng.choice(names)
        other = rng.choice([n for n in names if n != topic])
        return (" ".join(_sentence(rng, topic, 3, 16)), " ".join(_sentence(rng, topic, 2, 20)),
                " ".join(_sentence(rng, other, 2, 20)))

    for split, n in (("train", 64), ("test", 16)):
        pairs = [pair() for _ in range(n)]
        for name, rows in (
                ("pref", [{"prompt": p, "chosen": " " + c, "rejected": " " + r} for p, c, r in pairs]),
                ("pref_conv", [{"prompt": [{"role": "user", "content": p}],
                                "chosen": [{"role": "assistant", "content": c}],
                                "rejected": [{"role": "assistant", "content": r}]} for p, c, r in pairs]),
                ("kto", [{"prompt": p, "completion": " " + (c if i % 2 else r), "label": bool(i % 2)}
                         for i, (p, c, r) in enumerate(pairs)]),
                ("pc", [{"prompt": p, "completion": " " + c} for p, c, _ in pairs])):
            (data / name).mkdir(exist_ok=True)
            _write_jsonl(data / name / f"{split}.jsonl", rows)


def _other_modalities(root: Path, data: Path) -> dict[str, str]:
    """Images, audio, multiple choice and extractive QA, from a stream of their own (the text files stay as
    they were)."""
    import numpy as np
    import torch
    from PIL import Image
    from transformers import (ViTConfig, ViTForImageClassification, ViTImageProcessor, Wav2Vec2Config,
                              Wav2Vec2CTCTokenizer, Wav2Vec2FeatureExtractor, Wav2Vec2ForCTC)

    rng, gen = random.Random(99), np.random.default_rng(99)
    torch.manual_seed(1)
    names = sorted(TOPICS)
    vit = root / "vit"
    ViTForImageClassification(ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, intermediate_size=64, num_labels=3)).save_pretrained(vit)
    ViTImageProcessor(size={"height": 16, "width": 16}, image_mean=[0.5] * 3, image_std=[0.5] * 3).save_pretrained(vit)
    colours = {"red": (200, 40, 40), "green": (40, 200, 40), "blue": (40, 40, 200)}
    for name, rgb in colours.items():  # a class is a tint under noise, of a few sizes (the processor resizes)
        folder = data / "images" / "train" / name
        folder.mkdir(parents=True)
        for i in range(16):
            side = rng.choice([12, 16, 20])
            pixels = np.clip(np.array(rgb) + gen.normal(0, 60, (side, side, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{i}.png")

    w2v = root / "wav2vec2"
    letters = sorted(set("".join(names)))
    vocab = {"<pad>": 0, "<unk>": 1, "|": 2, **{c: i + 3 for i, c in enumerate(letters)}}
    (root / "w2v_vocab.json").write_text(json.dumps(vocab))
    chars = Wav2Vec2CTCTokenizer(str(root / "w2v_vocab.json"), pad_token="<pad>", unk_token="<unk>",
                                 word_delimiter_token="|")
    chars.save_pretrained(w2v)
    Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True,
                             return_attention_mask=True).save_pretrained(w2v)
    Wav2Vec2ForCTC(Wav2Vec2Config(
        vocab_size=len(chars), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2, feat_extract_norm="layer", do_stable_layer_norm=True, pad_token_id=0,
        ctc_loss_reduction="mean", mask_time_prob=0.0, layerdrop=0.0, classifier_proj_size=16)).save_pretrained(w2v)
    (data / "audio").mkdir()
    rows = []
    for i in range(64):  # a class is a pitch: a tone under noise, 0.1 to 0.3 s long
        label = i % 4
        t = np.arange(rng.randint(1600, 4800)) / 16000
        wave = 0.5 * np.sin(2 * np.pi * (220 * (label + 1)) * t) + gen.normal(0, 0.2, t.shape)
        np.save(data / "audio" / f"{i}.npy", wave.astype(np.float32))
        rows.append((f"{i}.npy", label, names[label]))
    _write_csv(data / "audio" / "audio.csv", ["file", "label", "text"], rows)

    swag = []
    for _ in range(96):
        topic = rng.choice(names)
        others = [n for n in names if n != topic]
        right = rng.randrange(4)
        endings = [" ".join(_sentence(rng, topic if k == right else rng.choice(others), 2, 10)) for k in range(4)]
        swag.append((" ".join(_sentence(rng, topic, 4, 16)), "then", *endings, right))
    _write_csv(data / "swag.csv", ["sent1", "sent2", "ending0", "ending1", "ending2", "ending3", "label"], swag)

    squad = []
    for i in range(96):
        topic = rng.choice(names)
        before, after = _sentence(rng, topic, 3, 40), _sentence(rng, topic, 3, 40)
        answer = rng.choice(ENTITIES["ORG"] + ENTITIES["LOC"])
        context = " ".join(before + [answer] + after)
        squad.append({"id": str(i), "title": topic, "context": context,
                      "question": " ".join(["where", "is"] + _sentence(rng, topic, 2, 6)),
                      "answers": {"text": [answer], "answer_start": [len(" ".join(before)) + 1]}})
    _write_jsonl(data / "squad.jsonl", squad)
    return {"vit": str(vit), "wav2vec2": str(w2v)}


def make_fixtures(root: Path) -> dict[str, str]:
    """Idempotent: a root made before (its marker file present) is reused as it is."""
    root = Path(root)
    names = ["qwen3", "llama_nopad", "gpt2", "bert", "seq2seq", "vit", "wav2vec2"]
    done = root / "fixtures.json"
    if done.exists():
        return json.loads(done.read_text())
    root.mkdir(parents=True, exist_ok=True)
    paths = _checkpoints(root)
    paths["data"], paths["sft"] = _data(root)
    paths.update(_other_modalities(root, Path(paths["data"])))
    assert set(names) <= set(paths)
    done.write_text(json.dumps(paths))
    return paths
