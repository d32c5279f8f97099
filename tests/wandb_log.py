"""Read a W&B offline run back from disk. wandb 0.31 keeps an offline run's config, summary and history
only in its transaction log (run-*.wandb, a LevelDB-style log of protobuf Records); its own Python reader
is gone, so the tests read the format directly."""
import struct
from pathlib import Path

from wandb.proto import wandb_internal_pb2

BLOCK, HEADER = 32768, 7  # log blocks; a record header is crc (4), length (2), type (1)


def _records(raw: bytes):
    pos, parts = HEADER, b""  # the file opens with ":W&B", magic, version
    while pos + HEADER <= len(raw):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # too little room for a header: the block is padded
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos:pos + HEADER])
        data = raw[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind == 1:  # full
            yield data
        elif kind == 2:  # first
            parts = data
        elif kind == 3:  # middle
            parts += data
        elif kind == 4:  # last
            yield parts + data


def read_run(run_dir: Path) -> dict:
    """{'group', 'name', 'tags', 'config': {key: json}, 'summary': {key: json}, 'history': [rows]}."""
    raw = next(Path(run_dir).glob("run-*.wandb")).read_bytes()
    key = lambda item: item.key or "/".join(item.nested_key)  # noqa: E731
    out = {"config": {}, "summary": {}, "history": []}
    for data in _records(raw):
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(data)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            out.update(group=rec.run.run_group, name=rec.run.display_name, tags=list(rec.run.tags),
                       job_type=rec.run.job_type, config={key(i): i.value_json for i in rec.run.config.update})
        elif kind == "summary":
            out["summary"].update({key(i): i.value_json for i in rec.summary.update})
        elif kind == "history":
            out["history"].append({key(i): i.value_json for i in rec.history.item})
    return out


def offline_runs(root: Path) -> list[Path]:
    return sorted(Path(root).glob("wandb/offline-run-*"))
