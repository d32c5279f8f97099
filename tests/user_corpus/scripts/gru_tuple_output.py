"""A PyTorch-first user's model on the Trainer, no transformers model at all: a GRU text classifier of their
own (nn.Embedding with padding_idx, a bidirectional GRU over pack_padded_sequence, a linear head) whose forward
takes its own argument names (token_ids, lengths, targets) and returns a TUPLE (loss, logits), as nn.Module code
written before ModelOutput does; TrainingArguments(label_names=["targets"]) tells the Trainer which input is the
label. A torch Dataset returns tensors of each row's ids (the tokenizer is only a vocabulary here), a collate_fn
pads them with pad_sequence and sorts nothing. Everything in an Experiment class (build_data / build_model / run),
the way people structure research code; gradient accumulation 2, a seed in the constructor.

    python gru_tuple_output.py QWEN3_DIR cls_train.csv OUT
"""
import csv
import sys

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import Dataset
from transformers import AutoTokenizer, Trainer, TrainingArguments, set_seed


class TextRows(Dataset):
    def __init__(self, path, tokenizer, max_len=64):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        self.ids = [torch.tensor(tokenizer(r["text"], truncation=True, max_length=max_len)["input_ids"])
                    for r in rows]
        self.labels = [int(r["label"]) for r in rows]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"token_ids": self.ids[i], "targets": torch.tensor(self.labels[i])}


class GRUClassifier(nn.Module):
    def __init__(self, vocab_size, pad_id, num_classes, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        self.gru = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * dim, num_classes)

    def forward(self, token_ids, lengths, targets=None):
        packed = pack_padded_sequence(self.embed(token_ids), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        logits = self.head(torch.cat([h[0], h[1]], dim=-1))
        if targets is None:
            return (logits,)
        return nn.functional.cross_entropy(logits, targets), logits


class Experiment:
    def __init__(self, model_dir, csv_path, out_dir, seed=4):
        self.model_dir, self.csv_path, self.out_dir, self.seed = model_dir, csv_path, out_dir, seed
        set_seed(seed)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)

    def collate(self, rows):
        ids = [r["token_ids"] for r in rows]
        return {"token_ids": pad_sequence(ids, batch_first=True, padding_value=self.tokenizer.pad_token_id),
                "lengths": torch.tensor([len(x) for x in ids]),
                "targets": torch.stack([r["targets"] for r in rows])}

    def build_data(self):
        self.train_set = TextRows(self.csv_path, self.tokenizer)

    def build_model(self):
        self.model = GRUClassifier(len(self.tokenizer), self.tokenizer.pad_token_id, num_classes=5)

    def run(self):
        self.build_data()
        self.build_model()
        args = TrainingArguments(output_dir=self.out_dir, per_device_train_batch_size=8,
                                 gradient_accumulation_steps=2, learning_rate=5e-3, max_steps=10,
                                 label_names=["targets"], logging_steps=1, save_strategy="no", report_to="none",
                                 seed=self.seed)
        trainer = Trainer(model=self.model, args=args, train_dataset=self.train_set, data_collator=self.collate)
        out = trainer.train()
        print(f"done: {out.global_step} steps, mean loss {out.training_loss:.4f}")


if __name__ == "__main__":
    Experiment(*sys.argv[1:4]).run()
