"""Audio classification in examples/pytorch/audio-classification's style, on one's own clips: a CSV of (file, label)
beside .npy waveforms at 16 kHz, a random crop of each clip (random_subsample) and the feature extractor applied
in set_transform, so the rows hold input_values of differing lengths and no input_ids; the Trainer's default
collator (DataCollatorWithPadding over the feature extractor) pads them and adds an attention_mask.
AutoModelForAudioClassification builds a Wav2Vec2 classifier on the checkpoint, its feature encoder frozen.

    python audio_classification_style.py --model_name_or_path W2V_DIR --audio_dir AUDIO_DIR --output_dir OUT ...
"""
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from datasets import ClassLabel, Dataset
from transformers import (AutoConfig, AutoFeatureExtractor, AutoModelForAudioClassification, HfArgumentParser,
                          Trainer, TrainingArguments, set_seed)


@dataclass
class DataTrainingArguments:
    audio_dir: str = field(metadata={"help": "A folder of .npy clips and audio.csv (file,label)."})
    max_length_seconds: float = field(default=0.2, metadata={"help": "Clips longer than this are randomly cropped."})


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/wav2vec2-base")
    freeze_feature_encoder: bool = field(default=True)
    attention_mask: bool = field(default=True)


def random_subsample(wav: np.ndarray, max_length: float, sample_rate: int = 16000):
    """Randomly sample chunks of `max_length` seconds from the input audio"""
    sample_length = int(round(sample_rate * max_length))
    if len(wav) <= sample_length:
        return wav
    random_offset = np.random.randint(0, len(wav) - sample_length - 1)
    return wav[random_offset: random_offset + sample_length]


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    set_seed(training_args.seed)

    table = pd.read_csv(os.path.join(data_args.audio_dir, "audio.csv"))
    labels = sorted(table["text"].unique())
    table["path"] = [os.path.join(data_args.audio_dir, f) for f in table["file"]]
    raw = Dataset.from_pandas(table[["path", "label"]]).cast_column("label", ClassLabel(names=labels))
    raw = raw.train_test_split(test_size=0.125, seed=training_args.seed)

    feature_extractor = AutoFeatureExtractor.from_pretrained(model_args.model_name_or_path,
                                                             return_attention_mask=model_args.attention_mask)
    model_input_name = feature_extractor.model_input_names[0]

    def train_transforms(batch):
        wavs = [random_subsample(np.load(p), max_length=data_args.max_length_seconds,
                                 sample_rate=feature_extractor.sampling_rate) for p in batch["path"]]
        inputs = feature_extractor(wavs, sampling_rate=feature_extractor.sampling_rate)
        return {model_input_name: inputs.get(model_input_name), "labels": list(batch["label"])}

    def val_transforms(batch):
        wavs = [np.load(p) for p in batch["path"]]
        inputs = feature_extractor(wavs, sampling_rate=feature_extractor.sampling_rate)
        return {model_input_name: inputs.get(model_input_name), "labels": list(batch["label"])}

    label2id = {label: str(i) for i, label in enumerate(labels)}
    id2label = {str(i): label for i, label in enumerate(labels)}

    def compute_metrics(eval_pred):
        return {"accuracy": float((np.argmax(eval_pred.predictions, axis=1) == eval_pred.label_ids).mean())}

    config = AutoConfig.from_pretrained(model_args.model_name_or_path, num_labels=len(labels), label2id=label2id,
                                        id2label=id2label, finetuning_task="audio-classification")
    model = AutoModelForAudioClassification.from_pretrained(model_args.model_name_or_path, config=config)
    if model_args.freeze_feature_encoder:
        model.freeze_feature_encoder()

    raw["train"].set_transform(train_transforms, output_all_columns=False)
    raw["test"].set_transform(val_transforms, output_all_columns=False)

    trainer = Trainer(model=model, args=training_args,
                      train_dataset=raw["train"] if training_args.do_train else None,
                      eval_dataset=raw["test"] if training_args.do_eval else None,
                      compute_metrics=compute_metrics, processing_class=feature_extractor)
    if training_args.do_train:
        train_result = trainer.train()
        trainer.log_metrics("train", train_result.metrics)
        trainer.save_state()
    if training_args.do_eval:
        metrics = trainer.evaluate()
        trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    main()
