"""Image classification the way examples/pytorch/image-classification does it: an imagefolder (train/<class>/*.png)
read with load_dataset("imagefolder"), a train/validation split, label2id/id2label written into the config, a
random flip and the image processor applied in set_transform (run anew every epoch), a collate_fn stacking
pixel_values and labels, remove_unused_columns=False. The batches hold pixel_values and labels, no input_ids.

    python image_classification_style.py --model_name_or_path VIT_DIR --train_dir IMAGES_DIR --output_dir OUT ...
"""
import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from datasets import load_dataset
from transformers import (AutoConfig, AutoImageProcessor, AutoModelForImageClassification, HfArgumentParser, Trainer,
                          TrainingArguments, set_seed)

logger = logging.getLogger(__name__)


@dataclass
class DataTrainingArguments:
    train_dir: Optional[str] = field(default=None, metadata={"help": "A folder of train/<class>/<image> files."})
    train_val_split: float = field(default=0.15, metadata={"help": "Share of train held out for validation."})
    max_train_samples: Optional[int] = field(default=None)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="google/vit-base-patch16-224-in21k")
    ignore_mismatched_sizes: bool = field(default=True)


def collate_fn(examples):
    pixel_values = torch.stack([example["pixel_values"] for example in examples])
    labels = torch.tensor([example["label"] for example in examples])
    return {"pixel_values": pixel_values, "labels": labels}


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO,
                        handlers=[logging.StreamHandler(sys.stdout)])
    set_seed(training_args.seed)

    dataset = load_dataset("imagefolder", data_dir=data_args.train_dir)
    split = dataset["train"].train_test_split(data_args.train_val_split, seed=training_args.seed)
    dataset["train"], dataset["validation"] = split["train"], split["test"]

    labels = dataset["train"].features["label"].names
    label2id = {label: str(i) for i, label in enumerate(labels)}
    id2label = {str(i): label for i, label in enumerate(labels)}

    def compute_metrics(p):
        return {"accuracy": float((np.argmax(p.predictions, axis=1) == p.label_ids).mean())}

    config = AutoConfig.from_pretrained(model_args.model_name_or_path, num_labels=len(labels), label2id=label2id,
                                        id2label=id2label, finetuning_task="image-classification")
    model = AutoModelForImageClassification.from_pretrained(model_args.model_name_or_path, config=config,
                                                            ignore_mismatched_sizes=model_args.ignore_mismatched_sizes)
    image_processor = AutoImageProcessor.from_pretrained(model_args.model_name_or_path)

    def train_transforms(example_batch):
        images = []
        for image in example_batch["image"]:
            image = image.convert("RGB")
            if torch.rand(1).item() < 0.5:  # RandomHorizontalFlip, without torchvision
                image = image.transpose(0)
            images.append(image)
        example_batch["pixel_values"] = list(image_processor(images, return_tensors="pt")["pixel_values"])
        return example_batch

    def val_transforms(example_batch):
        images = [image.convert("RGB") for image in example_batch["image"]]
        example_batch["pixel_values"] = list(image_processor(images, return_tensors="pt")["pixel_values"])
        return example_batch

    if data_args.max_train_samples is not None:
        dataset["train"] = dataset["train"].shuffle(seed=training_args.seed).select(range(data_args.max_train_samples))
    dataset["train"].set_transform(train_transforms)
    dataset["validation"].set_transform(val_transforms)

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=dataset["train"] if training_args.do_train else None,
        eval_dataset=dataset["validation"] if training_args.do_eval else None,
        compute_metrics=compute_metrics,
        processing_class=image_processor,
        data_collator=collate_fn,
    )

    if training_args.do_train:
        train_result = trainer.train()
        trainer.log_metrics("train", train_result.metrics)
        trainer.save_state()
    if training_args.do_eval:
        metrics = trainer.evaluate()
        trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    main()
