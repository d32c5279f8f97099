"""CTC speech recognition in examples/pytorch/speech-recognition/run_speech_recognition_ctc.py's style: a
Wav2Vec2Processor (feature extractor + character tokenizer), each clip's transcript lower-cased and turned into
label ids with processor(text=...), input_values computed once with map() and an input_length column for
group_by_length, and the example's own DataCollatorCTCWithPadding: processor.pad for the audio and the labels
apart, label padding replaced by -100. Wav2Vec2ForCTC with ctc_loss_reduction="mean" and its feature encoder
frozen. The batches hold input_values, attention_mask and [batch, chars] labels, no input_ids.

    python speech_ctc_style.py W2V_DIR AUDIO_DIR OUT
"""
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Union

import numpy as np
import pandas as pd
import torch
from datasets import Dataset
from transformers import (AutoModelForCTC, Trainer, TrainingArguments, Wav2Vec2Processor, set_seed)

MODEL, AUDIO, OUT = sys.argv[1:4]
set_seed(3)


@dataclass
class DataCollatorCTCWithPadding:
    processor: Wav2Vec2Processor
    padding: Union[bool, str] = "longest"
    pad_to_multiple_of: Optional[int] = None
    pad_to_multiple_of_labels: Optional[int] = None

    def __call__(self, features: List[Dict[str, Union[List[int], torch.Tensor]]]) -> Dict[str, torch.Tensor]:
        input_features = [{"input_values": feature["input_values"]} for feature in features]
        label_features = [{"input_ids": feature["labels"]} for feature in features]
        batch = self.processor.pad(input_features, padding=self.padding, pad_to_multiple_of=self.pad_to_multiple_of,
                                   return_tensors="pt")
        labels_batch = self.processor.pad(labels=label_features, padding=self.padding,
                                          pad_to_multiple_of=self.pad_to_multiple_of_labels, return_tensors="pt")
        labels = labels_batch["input_ids"].masked_fill(labels_batch.attention_mask.ne(1), -100)
        batch["labels"] = labels
        return batch


processor = Wav2Vec2Processor.from_pretrained(MODEL)
table = pd.read_csv(os.path.join(AUDIO, "audio.csv"))
table["path"] = [os.path.join(AUDIO, f) for f in table["file"]]
raw = Dataset.from_pandas(table[["path", "text"]])


def prepare_dataset(batch):
    wav = np.load(batch["path"])[:2400]
    inputs = processor(wav, sampling_rate=16000)
    batch["input_values"] = inputs.input_values[0]
    batch["input_length"] = len(batch["input_values"])
    batch["labels"] = processor(text=batch["text"].lower()).input_ids
    return batch


vectorized = raw.map(prepare_dataset, remove_columns=raw.column_names, desc="preprocess datasets")

model = AutoModelForCTC.from_pretrained(MODEL, ctc_loss_reduction="mean", pad_token_id=processor.tokenizer.pad_token_id,
                                        vocab_size=len(processor.tokenizer))
model.freeze_feature_encoder()

args = TrainingArguments(OUT, per_device_train_batch_size=8, learning_rate=1e-3, max_steps=8, logging_steps=1,
                         train_sampling_strategy="group_by_length", length_column_name="input_length",
                         save_strategy="no", report_to="none", seed=3)
trainer = Trainer(model=model, args=args, train_dataset=vectorized, processing_class=processor,
                  data_collator=DataCollatorCTCWithPadding(processor=processor))
trainer.train()
