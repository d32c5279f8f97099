"""Padding-free batches (padding=packed): packs, the collator's rows, and packed models computing the same
numbers as each sequence run alone. On the CPU attention is sdpa, with the block mask built from position_ids."""
import importlib.util
import math

import numpy as np
import pytest
import torch

from src.checks import training as check_training
from src.data import collate, packing, prepare, sources
from src.machine import env
from src.model import build as models
from src.train import trainer as train
from src.config.errors import ConfigError
from src.config.schema import validate
from src.run import run
from tests.conftest import QUICK, cli, compose

BUDGET = 1024


def _model(*overrides):
    cfg = compose(*overrides)
    torch.manual_seed(0)
    return cfg, models.build_model(cfg, env.resolve(cfg), models.hf_config(cfg))


def _seqs(*lengths):
    """Token ids clear of the pad id (0), so a sequence run alone pools its own last token."""
    return [torch.randint(4, 1000, (n,), generator=torch.Generator().manual_seed(n)).tolist() for n in lengths]


# -- first fit ------------------------------------------------------------------------------------------
def test_first_fit_uses_every_row_once_within_the_budget_and_fills_the_packs():
    rng = np.random.default_rng(0)
    lengths = np.clip(np.rint(rng.normal(211, 30, 4096)), 40, 287).astype(int)
    packs = packing.first_fit(lengths, 8192, seed=0)
    assert sorted(i for p in packs for i in p) == list(range(len(lengths)))
    assert max(lengths[p].sum() for p in packs) <= 8192
    assert lengths.sum() / (len(packs) * 8192) > 0.9


# -- the collator at a token budget -------------------------------------------------------------------
def _packed_batches(task):
    """Every pack of 64 synthetic rows, plus a one-row pack whose long tail needs several dummy sequences."""
    cfg = compose(f"task={task}", "padding=packed", f"batch.tokens={BUDGET}")
    conf = models.hf_config(cfg)
    ds = sources.synthetic(cfg, conf, 64, 0)
    collator = collate.collator_for(cfg, conf, prepare.length_stats(ds))
    packs = [[ds[j] for j in p] for p in prepare.for_trainer(cfg, ds).packs] + [[ds[0]]]
    return cfg, collator, [(rows, collator([{"pack": rows}])) for rows in packs]


@pytest.mark.parametrize("task", ["classification", "causal_lm"])
def test_packed_rows_have_the_budget_restarting_positions_and_bounded_dummies(task):
    cfg, collate, batches = _packed_batches(task)
    for rows, batch in batches:
        ids, pos, cu = batch["input_ids"], batch["position_ids"][0], batch["cu_seq_lens_q"].long()
        lengths = [len(r["input_ids"]) for r in rows]
        real = sum(lengths)
        assert ids.shape == (1, BUDGET)  # one shape for every micro-batch
        assert len(cu) == collate.slots + 1  # and one shape for the boundaries
        assert ids[0, :real].tolist() == [t for r in rows for t in r["input_ids"]]
        assert (ids[0, real:] == 0).all()  # the tail holds pad ids
        assert cu[: len(rows) + 1].tolist() == [0, *np.cumsum(lengths)] and cu[-1] == BUDGET
        seq_lens = cu.diff()
        dummies = seq_lens[len(rows):]
        assert dummies.sum() == BUDGET - real and dummies.max() <= cfg.data.max_length  # flash's max_seqlen holds
        # each position counts from its own sequence's start: 0 at every boundary
        assert torch.equal(pos, torch.arange(BUDGET) - torch.repeat_interleave(cu[:-1], seq_lens))
        loss = len(rows) if task == "classification" else real - len(rows)
        assert batch["pack_stats"] == {"samples": len(rows), "real": real, "loss": loss}
    assert (batches[-1][1]["cu_seq_lens_q"].diff()[1:] > 0).sum() >= 3  # the one-row pack did need several dummies


def test_packed_classification_labels_are_the_rows_labels_then_ignored():
    _, collate, batches = _packed_batches("classification")
    for rows, batch in batches:
        n = len(rows)
        assert batch["labels"].shape == (collate.slots,)
        assert batch["labels"][:n].tolist() == [r["labels"] for r in rows]
        assert (batch["labels"][n:] == -100).all()


def test_packed_causal_lm_labels_skip_each_first_token_and_the_tail():
    _, _, batches = _packed_batches("causal_lm")
    for rows, batch in batches:
        labels, start = batch["labels"][0], 0
        for r in rows:
            n = len(r["input_ids"])
            assert labels[start] == -100  # not predicted from the previous sequence's last token
            assert labels[start + 1:start + n].tolist() == r["input_ids"][1:]
            start += n
        assert (labels[start:] == -100).all()


def test_more_sequences_than_slots_is_an_error_not_a_truncation():
    collate = packing.PackCollator(task="causal_lm", pad_id=0, max_length=16, budget=None, slots=3)
    with pytest.raises(ValueError, match="slots"):
        collate([{"input_ids": [5, 6]}] * 3)  # 3 sequences and a dummy tail: 4 > 2 slots


# -- packed models equal each sequence run alone --------------------------------------------------------
@pytest.mark.parametrize("peft", ["none", "lora"])
def test_packed_classification_equals_each_sequence_alone(peft):
    cfg, model = _model("padding=packed", "precision=fp32", f"peft={peft}")
    with torch.no_grad():
        # lora_B and the head start at zero: give them weight, so the adapters and the pooled position take part in
        # the comparison (with a zero head every logit was 0 whichever token was pooled)
        for name, p in model.named_parameters():
            if "lora_B" in name or "score" in name:
                p.normal_(0, 0.1 if "lora_B" in name else 0.5)
    model.eval()
    seqs = _seqs(7, 12, 5)
    labels = torch.tensor([0, 1, 2])
    batch = collate.build_collator(cfg, pad_id=0)([{"input_ids": s, "labels": int(y)} for s, y in zip(seqs, labels)])
    with torch.no_grad():
        packed = model(**collate.to_device(batch, "cpu"))
        # no cu_seq_lens: the model's own forward, pooling the last non-pad token of an unpadded row
        alone = torch.cat([model(input_ids=torch.tensor([s])).logits for s in seqs])
    assert torch.allclose(packed.logits[:3], alone, atol=1e-4)
    # one loss per sequence, the empty slots ignored
    assert packed.loss.item() == pytest.approx(torch.nn.functional.cross_entropy(alone, labels).item(), abs=1e-4)


def test_a_sequence_ending_in_the_pad_id_pools_the_token_the_model_pools_alone():
    """A user's classifier with pad = eos and an eos closing every text: the model's own pooling skips the trailing
    eos (it is the pad id) and reads the token before it; packs pooled the eos itself, and nothing said so."""
    cfg, model = _model("padding=packed", "precision=fp32")
    model.eval()
    with torch.no_grad():  # the head starts at zero: give it weight, so the pooled position shows in the logits
        model.score.weight.normal_(0, 0.5)
    seqs = [s + [0] for s in _seqs(7, 12, 5)]  # each row's eos is the pad id (0)
    batch = collate.build_collator(cfg, pad_id=0)([{"input_ids": s, "labels": 1} for s in seqs])
    with torch.no_grad():
        packed = model(**collate.to_device(batch, "cpu"))
        alone = torch.cat([model(input_ids=torch.tensor([s])).logits for s in seqs])
        eos = torch.cat([model(input_ids=torch.tensor([s[:-1] + [5]])).logits for s in seqs])  # a real last token
    assert torch.allclose(packed.logits[:3], alone, atol=1e-4)
    assert not torch.allclose(alone, eos, atol=1e-4)  # the pooled position matters to the logits


def test_packed_causal_lm_loss_is_the_sum_of_each_sequences_loss():
    cfg, model = _model("task=causal_lm", "padding=packed", "precision=fp32", "peft=none")
    model.eval()
    seqs = _seqs(7, 12, 5)
    batch = collate.build_collator(cfg, pad_id=0)([{"input_ids": s} for s in seqs])
    with torch.no_grad():
        packed = model(**collate.to_device(batch, "cpu")).loss  # a mean over the scored tokens
        # num_items_in_batch=1: the token sum the Trainer divides by the accumulated batch's count
        summed = model(**collate.to_device(batch, "cpu"), num_items_in_batch=1).loss
        own = sum(model(input_ids=torch.tensor([s]), labels=torch.tensor([s])).loss.item() * (len(s) - 1) for s in seqs)
    assert batch["pack_stats"]["loss"] == sum(len(s) - 1 for s in seqs)
    assert packed.item() * batch["pack_stats"]["loss"] == pytest.approx(own, rel=1e-5)
    assert summed.item() == pytest.approx(own, rel=1e-5)


# -- gradient accumulation ------------------------------------------------------------------------------
def test_packed_classification_grad_accum_equals_the_larger_batch(tmp_path):
    """The packed classifier sums its loss over num_items_in_batch: two packs of 4 rows = one pack of 8."""
    cfg, model = _model("padding=packed", f"batch.tokens={BUDGET}", "batch=4")
    conf = models.hf_config(cfg)
    ds = sources.synthetic(cfg, conf, 8, 0)
    collator = collate.collator_for(cfg, conf)
    trainer = train.trainer_class("classification", packed=True)(
        model=model, args=train.training_args(cfg, env.resolve(cfg), tmp_path), train_dataset=ds, data_collator=collator)
    check = check_training.grad_accum_check(trainer, model, [ds[i] for i in range(8)], collator, "cpu", 1e-3)
    assert check["status"] == "pass", check


def test_diagnose_mode_passes_grad_accum_and_pooling_for_packed_classification(tmp_path):
    """mode=diagnose as a user runs it (the token counter on): every check runs on packed batches."""
    rep = run(compose(*QUICK, "mode=diagnose", "padding=packed", f"batch.tokens={BUDGET}"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    status = {c["check"]: c["status"] for c in rep["diagnostics"]}
    assert status["train.grad_accum_equivalence"] == "pass" and status["model.pooling"] == "pass"


# -- end to end ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", ["classification", "causal_lm"])
def test_packed_training_runs_at_one_shape_with_little_padding(task, tmp_path):
    rep = run(compose(*QUICK, f"task={task}", "padding=packed", f"batch.tokens={BUDGET}"), tmp_path)
    assert rep["status"] == "ok", rep["error"]
    assert rep["throughput"]["pad_fraction"] < 0.2  # only the packs' tails
    assert rep["shapes"]["distinct_in_window"] == 1  # every micro-batch BUDGET tokens
    assert rep["tokens"]["all"] == BUDGET * rep["step_time_s"]["n"]
    assert math.isfinite(rep["loss"]["final"])


# -- config errors ---------------------------------------------------------------------------------------
# The packing refusals (batch.tokens without packed, a budget under max_length, packed seq2seq) are in
# tests/test_config.py's table with every other bad value; the command line's one-line exit 2 is tested there.
@pytest.mark.skipif(torch.cuda.is_available(), reason="varlen is valid on a GPU")
def test_varlen_on_the_cpu_is_one_line_and_exit_2(tmp_path):
    message = "config error: attention=varlen: varlen is PyTorch's flash kernel for CUDA GPUs"
    proc = cli("attention=varlen", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr[-2000:]


@pytest.mark.skipif(importlib.util.find_spec("torch.nn.attention.varlen") is None, reason="torch without varlen")
def test_varlen_is_refused_for_seq2seq_even_on_a_gpu():
    with pytest.raises(ConfigError, match="not seq2seq"):
        validate(compose("attention=varlen", "model=tiny-bart", "task=seq2seq"), cuda_available=True)


@pytest.mark.parametrize("graphs", [False, True])
def test_cuda_graph_runs_mark_each_micro_batch_and_eval_batch_as_a_new_step(graphs, tmp_path, monkeypatch):
    """CUDA graphs (compile_mode=reduce-overhead) overwrite their outputs on the next replay: each training micro-batch
    and each eval batch tells torch's cudagraph trees a new step begins (torch's own advice for the error it raises
    otherwise); without graphs nothing is called."""
    import torch

    marks = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    cfg, model = _model("padding=packed", f"batch.tokens={BUDGET}", "batch=4", "batch.grad_accum=2", "trainer.max_steps=2")
    conf = models.hf_config(cfg)
    ds = sources.synthetic(cfg, conf, 16, 0)
    trainer = train.trainer_class("classification", packed=True, cuda_graphs=graphs)(
        model=model, args=train.training_args(cfg, env.resolve(cfg), tmp_path), train_dataset=ds,
        eval_dataset=ds.select(range(4)), data_collator=collate.collator_for(cfg, conf))
    trainer.train()
    assert len(marks) == (2 * 2 if graphs else 0)  # 2 steps x grad_accum 2
    trainer.evaluate()
    assert len(marks) == (2 * 2 + 1 if graphs else 0)  # 4 eval rows: one batch


def test_cuda_graphs_are_asked_for_by_the_compile_modes_that_capture_them():
    from types import SimpleNamespace as NS

    from src.config.training import uses_cuda_graphs

    assert uses_cuda_graphs(NS(torch_compile=True, compile_mode="reduce-overhead"))
    assert uses_cuda_graphs(NS(torch_compile=True, compile_mode="max-autotune"))
    assert not uses_cuda_graphs(NS(torch_compile=True, compile_mode="max-autotune-no-cudagraphs"))
    assert not uses_cuda_graphs(NS(torch_compile=False, compile_mode="reduce-overhead"))
