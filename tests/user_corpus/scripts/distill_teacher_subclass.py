"""Logit distillation on the plain Trainer, the "distil your own small LM" blog-post shape: a DistillationTrainer
subclass holds a frozen teacher (a causal LM loaded from the checkpoint, eval mode, moved to the student's device)
and its compute_loss mixes the student's own cross-entropy with a temperature-scaled KL to the teacher's token
distribution over the scored positions (alpha, T^2); the teacher's forward runs under no_grad inside the training
step. The student is half the teacher's depth, built from the teacher's config (AutoConfig with
num_hidden_layers=1, random init via from_config). The arguments are a TrainingArguments SUBCLASS dataclass with
the distillation knobs added (alpha, temperature), read with HfArgumentParser beside a ModelArguments dataclass.
Lines of text tokenized with truncation, DataCollatorForLanguageModeling(mlm=False), grad accum 2 (the loss is
a per-micro-batch mean: num_items_in_batch is ignored).

    python distill_teacher_subclass.py --teacher QWEN3_DIR --text_file text.txt --output_dir OUT ...
"""
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          HfArgumentParser, Trainer, TrainingArguments, set_seed)


@dataclass
class ModelArguments:
    teacher: str = field(metadata={"help": "teacher checkpoint (the student copies its config)"})
    text_file: str = field(metadata={"help": "one document a line"})
    student_layers: int = field(default=1)
    max_length: int = field(default=48)


@dataclass
class DistillationArguments(TrainingArguments):
    alpha: float = field(default=0.5, metadata={"help": "weight of the student's own cross-entropy"})
    temperature: float = field(default=2.0)


class DistillationTrainer(Trainer):
    def __init__(self, *args, teacher_model=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.teacher = teacher_model
        self.teacher.eval()
        self.teacher.to(self.args.device)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        with torch.no_grad():
            teacher_logits = self.teacher(input_ids=inputs["input_ids"],
                                          attention_mask=inputs["attention_mask"]).logits
        t = self.args.temperature
        scored = inputs["labels"][:, 1:] != -100  # the positions the student's CE scores (shifted)
        student = F.log_softmax(outputs.logits[:, :-1][scored] / t, dim=-1)
        teacher = F.log_softmax(teacher_logits[:, :-1][scored] / t, dim=-1)
        kl = F.kl_div(student, teacher, log_target=True, reduction="batchmean") * t * t
        loss = self.args.alpha * outputs.loss + (1.0 - self.args.alpha) * kl
        return (loss, outputs) if return_outputs else loss


def main():
    parser = HfArgumentParser((ModelArguments, DistillationArguments))
    margs, targs = parser.parse_args_into_dataclasses()
    set_seed(targs.seed)

    tokenizer = AutoTokenizer.from_pretrained(margs.teacher)
    teacher = AutoModelForCausalLM.from_pretrained(margs.teacher, dtype=torch.float32)
    for p in teacher.parameters():
        p.requires_grad_(False)
    config = AutoConfig.from_pretrained(margs.teacher, num_hidden_layers=margs.student_layers)
    student = AutoModelForCausalLM.from_config(config)
    print(f"teacher {teacher.num_parameters():,} params, student {student.num_parameters():,}")

    lines = load_dataset("text", data_files=margs.text_file, split="train")
    lines = lines.filter(lambda r: len(r["text"].strip()) > 0)
    tokenized = lines.map(lambda b: tokenizer(b["text"], truncation=True, max_length=margs.max_length),
                          batched=True, remove_columns=["text"])

    trainer = DistillationTrainer(model=student, teacher_model=teacher, args=targs, train_dataset=tokenized,
                                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
                                  processing_class=tokenizer)
    trainer.train()


if __name__ == "__main__":
    main()
