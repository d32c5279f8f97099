"""Multi-task training with sentence-transformers, as its training_nli / multi-dataset docs show: a dict of two
datasets, each with its own loss (an NLI-style 3-class SoftmaxLoss on (premise, hypothesis, label) and CoSENTLoss on
(sentence1, sentence2, score)), so the trainer adds a `dataset_name` column and the collator passes it through as a
string in every batch; batches drawn round-robin from the two (multi_dataset_batch_sampler), the model a
SentenceTransformer over a plain BERT checkpoint (mean pooling added for it), the SoftmaxLoss'
classifier trained beside the encoder.

    python st_multitask_softmax_cosent.py BERT_DIR sts.csv OUT
"""
import sys

import pandas as pd
from datasets import Dataset
from transformers import set_seed
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import MultiDatasetBatchSamplers
from sentence_transformers.sentence_transformer.losses import CoSENTLoss, SoftmaxLoss

model_path, sts_csv, out = sys.argv[1:4]

set_seed(3)  # SoftmaxLoss draws its classifier before the trainer seeds

model = SentenceTransformer(model_path, device="cpu")
model.max_seq_length = 32

df = pd.read_csv(sts_csv)
# NLI-like labels from the gold score: 0 entailment, 1 neutral, 2 contradiction
nli = pd.DataFrame({"premise": df["sentence1"], "hypothesis": df["sentence2"],
                    "label": [0 if s >= 4.0 else (2 if s < 1.0 else 1) for s in df["score"]]})
sts = pd.DataFrame({"sentence1": df["sentence1"], "sentence2": df["sentence2"], "score": df["score"] / 5.0})
train_dataset = {"nli": Dataset.from_pandas(nli), "sts": Dataset.from_pandas(sts)}

losses = {
    "nli": SoftmaxLoss(model, embedding_dimension=model.get_embedding_dimension(), num_labels=3),
    "sts": CoSENTLoss(model),
}

args = SentenceTransformerTrainingArguments(
    output_dir=out,
    max_steps=8,
    per_device_train_batch_size=8,
    learning_rate=1e-3,
    lr_scheduler_type="constant_with_warmup",
    warmup_steps=1,
    multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=3,
)
trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=train_dataset, loss=losses)
trainer.train()
print("nli classifier:", tuple(losses["nli"].classifier.weight.shape))
