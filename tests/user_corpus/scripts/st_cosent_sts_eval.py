"""Training an STS model the way sentence-transformers' training_stsbenchmark.py example does, written against the
long-standing imports (`from sentence_transformers import losses, models`, still served by v5/v6's aliases): the
model assembled from modules (models.Transformer over a plain BERT checkpoint with max_seq_length, then
models.Pooling with mean pooling), sentence pairs from a CSV with their 0-5 gold score normalised to 0-1 under a
"score" column (the trainer's collator turns it into `label`), CoSENTLoss, an EmbeddingSimilarityEvaluator on a
held-out split run every 4 steps beside the eval loss, argparse flags, and the evaluator run once more at the end.

    python st_cosent_sts_eval.py --model BERT_DIR --sts sts.csv --output-dir OUT [--steps 8] [--batch-size 16]
"""
import argparse
import logging

from datasets import load_dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers import losses, models
from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator, SimilarityFunction

logging.basicConfig(format="%(asctime)s - %(message)s", level=logging.WARNING)

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--sts", required=True)
parser.add_argument("--output-dir", required=True)
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--lr", type=float, default=1e-3)
opts = parser.parse_args()

word_embedding_model = models.Transformer(opts.model, max_seq_length=32)
pooling_model = models.Pooling(word_embedding_model.get_embedding_dimension(), pooling_mode="mean")
model = SentenceTransformer(modules=[word_embedding_model, pooling_model], device="cpu")

dataset = load_dataset("csv", data_files=opts.sts)["train"]
dataset = dataset.map(lambda row: {"score": row["score"] / 5.0})
split = dataset.train_test_split(test_size=0.2, seed=12)
train_dataset, eval_dataset = split["train"], split["test"]
print(train_dataset)

train_loss = losses.CoSENTLoss(model=model)

dev_evaluator = EmbeddingSimilarityEvaluator(
    sentences1=eval_dataset["sentence1"],
    sentences2=eval_dataset["sentence2"],
    scores=eval_dataset["score"],
    main_similarity=SimilarityFunction.COSINE,
    name="sts-dev",
)

args = SentenceTransformerTrainingArguments(
    output_dir=opts.output_dir,
    max_steps=opts.steps,
    per_device_train_batch_size=opts.batch_size,
    per_device_eval_batch_size=opts.batch_size,
    learning_rate=opts.lr,
    warmup_steps=2,
    eval_strategy="steps",
    eval_steps=4,
    save_strategy="no",
    logging_steps=1,
    report_to="none",
    run_name="sts",
    seed=12,
)

trainer = SentenceTransformerTrainer(
    model=model,
    args=args,
    train_dataset=train_dataset,
    eval_dataset=eval_dataset,
    loss=train_loss,
    evaluator=dev_evaluator,
)
trainer.train()

print(dev_evaluator(model))
