"""Someone coming from plain PyTorch: the text is tokenised once into two tensors, wrapped in a
torch.utils.data.TensorDataset, batched by torch's own default_collate (so a batch is a list [input_ids, labels],
not a dict), and a Trainer subclass whose compute_loss unpacks `x, y = inputs` and computes a shifted
cross-entropy itself. A decoder language model on fixed 32-token blocks of a text file, grad accum 2.

    python tensor_dataset_tuple_batch.py QWEN3_DIR text.txt OUT
"""
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset, default_collate
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, set_seed

MODEL, TEXT, OUT = sys.argv[1:4]
BLOCK = 32
set_seed(31)

tok = AutoTokenizer.from_pretrained(MODEL)
with open(TEXT) as f:
    ids = tok(f.read().replace("\n", " "))["input_ids"]
n = len(ids) // (BLOCK + 1)
data = torch.tensor(ids[: n * (BLOCK + 1)]).view(n, BLOCK + 1)
x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()  # next-token targets made up front
train_ds = TensorDataset(x, y)
print(f"{len(train_ds)} blocks of {BLOCK}")


class TupleTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        x, y = inputs
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        return (loss, logits) if return_outputs else loss


model = AutoModelForCausalLM.from_pretrained(MODEL)
args = TrainingArguments(output_dir=OUT, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                         max_steps=8, learning_rate=1e-3, warmup_steps=2, logging_steps=1, save_strategy="no",
                         report_to="none", seed=31)
trainer = TupleTrainer(model=model, args=args, train_dataset=train_ds, data_collator=default_collate)
trainer.train()
print("final loss", trainer.state.log_history[-2]["loss"])
