"""Peak GPU memory of a training step, predicted before the first step. One concern, kept whole at ~490 lines:
the copies' build, their probe and the sum are read together, and the planner (src/plan/predict.py) and the
tests patch its functions by this module's name.

    peak = weights + AdamW's two moments + activations and grads as they overlap (peak_parts) + a workspace

Weights and trainable state are counted from the built model. Activations (with every transient of the backward:
the cross-entropy's fp32 logits and their gradient, a recomputed layer under checkpointing) are measured, not
guessed: small copies of the model with 1 and 2 decoder layers, built like the real one (same peft, dtypes,
attention, Liger, regional compile), run one forward and backward on the widest micro-batch the run will see,
made by the run's own collator. On a GPU the probe is the allocator's peak; on the CPU (tests) it is the bytes
autograd saves. The 2-layer minus the 1-layer figure is one layer; what remains of the 1-layer figure is
everything outside the layers. Both scale to the real depth exactly, at the real shape (probes at 1-4 layers on
an H100 fell on one line to the byte).

Two things the first probe taught (experiments/speed/memory_trace.py, what is alive at a run's peak):
- A process's first forward and backward allocate cuBLAS workspaces (one per thread, kept for good) and a compiled
  copy compiles: a warm-up probe goes first, and what it leaves allocated is the workspace. Without it the
  1-layer figure carried those ~60 MB and each layer came out short, 2 GB over 36 layers.
- The widest micro-batch carries padding like a real one: with a padding mask sdpa repeats K/V for GQA and takes
  the memory-efficient kernel; an all-full batch takes the cheaper maskless path (8% short at bs 32).

About 480 lines, as one concern: the peak's prediction, its probes (by layer, and a copy compiled whole for a
run compiled whole; their gradients read at two moments of the backward), its parts and the capacity it is judged by.
"""
from __future__ import annotations

import copy
import gc
import logging
import os

import torch

from . import memory_cache

log = logging.getLogger(__name__)


def layers_key(conf) -> str:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if hasattr(conf, key):
            return key
    raise ValueError(f"no layer count in {type(conf).__name__}")


def _autocast(amp: str, device: str):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
    return torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def forward_backward(model, inputs: dict, amp: str, device: str) -> None:
    """One forward and backward under the run's autocast: what the planner's copies time (src/plan/speed_model.py)
    and the budget probes (src/train/budget.py), here at the bottom where both can reach it."""
    with _autocast(amp, device):
        loss = model(**inputs).loss
    loss.float().backward()


def _saved_bytes(model, batch: dict, amp: str, device: str) -> dict:
    """CPU probe: bytes of the distinct storages autograd saves in one forward (parameters and buffers, such as
    an FP8 layer's transposed weight, are not activations). What is saved is all there is on the CPU: peak, kept
    and the last layer's moment are the one figure."""
    params = {p.untyped_storage().data_ptr() for p in (*model.parameters(), *model.buffers())}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), _autocast(amp, device):
        out = model(**batch)
    del out
    saved = sum(seen.values())
    # no backward runs here: the largest gradient stands in for those made before the last layer's input gradient
    return {"peak": saved, "kept": saved, "at_last_layer": saved, "first_grads": largest_gradient(model),
            "after_last_layer": 0}


def _watch_layer_inputs(model, watch: bool, on_grad) -> list:
    """Forward pre-hooks on the decoder layers putting `on_grad` on each layer input's gradient; the backward
    computes the last layer's first, when that layer's backward ends (_reading keeps the first call). No reference
    to an input is kept: one kept to the last layer's input held a [tokens, hidden] tensor autograd had not saved
    (the bf16 input a norm casts to fp32 first), in the 2-layer copy and not the 1-layer one (whose input, a frozen
    embedding's, needs no gradient), so a LoRA run's every layer came out one such tensor high: +2.6% at 36 layers
    (experiments/speed, the LoRA controls). Not on compiled layers (the hooks would run inside the graph)."""
    from .speed import decoder_layers

    def watch_input(module, args, kwargs):
        x = kwargs.get("hidden_states", args[0] if args else None)
        if isinstance(x, torch.Tensor) and x.requires_grad:
            x.register_hook(on_grad)

    return [m.register_forward_pre_hook(watch_input, with_kwargs=True) for m in decoder_layers(model)] if watch else []


def _reading(into: dict, read, grads):
    """A gradient hook that keeps read()'s value, and the bytes of the gradients the backward has made by then
    (grads()), at the first gradient it sees (a tensor hook must return None, or it would replace the gradient)."""

    def hook(grad):
        if "peak" not in into:
            into["peak"], into["grads"] = read(), grads()

    return hook


def _grad_bytes(model) -> int:
    return sum(p.grad.untyped_storage().nbytes() for p in model.parameters() if p.grad is not None)


def _peak_then_restart() -> int:
    """The allocator's peak so far, its count then restarted: what comes after is read on its own."""
    peak = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    return peak


def _peak_bytes(model, batch: dict, amp: str, device: str, watch_layers: bool = True) -> dict:
    """GPU probe over one forward and backward, above what was allocated before: the allocator's peak, less the
    gradients the backward leaves behind (the real run's are counted with the trainable state); `kept`, what is
    allocated once the forward has returned (what the backward needs, the checkpointed layer inputs among it); and
    `at_last_layer`, the peak up to the end of the last decoder layer's backward, when every layer's kept input
    is still alive (trace_activations says why it matters), less the gradients made by then; those are
    `first_grads` (the head's and that layer's: a real run of any depth has made the same ones by then); and
    `after_last_layer`, the peak of the rest of the backward less every gradient it leaves (the moment the embedding's
    gradient is made: the same at any depth). Without the hook (compiled layers) the figures after `kept` fall back
    to the peak's and the largest gradient."""
    at_last = {}
    handles = _watch_layer_inputs(model, watch_layers, _reading(at_last, _peak_then_restart, lambda: _grad_bytes(model)))
    gc.collect()  # an earlier copy's reference cycles, freed now rather than by a collection inside the window
    gc.disable()  # (one that frees an earlier copy mid-step lowers the peak by that copy: 4x off on an H200)
    try:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        with _autocast(amp, device):
            loss = model(**batch).loss
        kept = torch.cuda.memory_allocated() - before  # the allocator's counters are host-side: no sync
        loss.float().backward()
        torch.cuda.synchronize()
        after = torch.cuda.max_memory_allocated() - before
        peak = max(after, at_last.get("peak", 0) - before)
    finally:
        gc.enable()
        for h in handles:
            h.remove()
    grads = _grad_bytes(model)
    if "peak" in at_last:
        last, first = at_last["peak"] - before - at_last["grads"], at_last["grads"]
    else:
        last, first = peak - grads, max((p.grad.untyped_storage().nbytes() for p in model.parameters()
                                         if p.grad is not None), default=0)
    model.zero_grad(set_to_none=True)
    return {"peak": peak - grads, "kept": kept, "at_last_layer": last, "first_grads": first,
            "after_last_layer": after - grads}


def widest_batch(cfg, conf, collator, lengths: dict, device: str) -> dict:
    """The largest micro-batch the run can see, made by the run's collator from random rows: the activation
    peak follows it. A token budget is filled with rows of the longest length."""
    p, d = cfg.padding, cfg.data
    packed = p.strategy == "packed" and cfg.batch.tokens
    longest = min(d.max_length, int(lengths["max"]))
    count = -(-cfg.batch.tokens // longest) if packed else cfg.batch.size
    gen = torch.Generator().manual_seed(0)
    rows = []
    for i in range(count):
        if packed:
            n = min(longest, cfg.batch.tokens - i * longest)
        else:  # one row a token short: a real batch carries padding, so attention gets a mask (see the docstring)
            n = max(1, longest - (i == count - 1 and count > 1))
        ids = torch.randint(3, min(conf.vocab_size, 1000), (n,), generator=gen).tolist()
        row = {"input_ids": ids, "length": n}
        if cfg.task.name == "classification":
            row["labels"] = i % conf.num_labels
        elif cfg.task.name == "seq2seq":
            row["labels"] = ids[: d.max_target_length]
        rows.append(row)
    items = [{"pack": rows}] if p.strategy == "packed" and cfg.batch.tokens else rows
    from ..data.collate import to_device

    return to_device(collator(items), device)


def build_copy(cfg, res, conf, layers: int):
    """A copy of the model with `layers` decoder layers, built like the run (peft, 4-bit layers included, Liger,
    checkpointing, regional compile), random weights, in train mode. The 4-bit layers are the run's because
    bitsandbytes' Linear4bit returns its input's dtype: behind a LayerNorm (fp32 under CUDA autocast) a GPT-NeoX
    layer hands on fp32, where a bf16 LoRA copy would stay bf16."""
    from . import build, speed

    small = copy.deepcopy(cfg)
    small.model.pretrained = False  # weight values don't change what is kept
    if cfg.peft.method == "qlora" and res.device != "cuda":
        small.peft.method = "lora"  # bitsandbytes' 4-bit layers are for GPUs: on the CPU (tests) traced in bf16
    small.model.init.hidden_norm = None
    small.model.init.head_init = "default"
    c = copy.deepcopy(conf)
    setattr(c, layers_key(conf), layers)
    if hasattr(c, "decoder_layers"):  # encoder-decoder: both stacks
        c.encoder_layers = c.decoder_layers = layers
    if getattr(c, "layer_types", None):
        c.layer_types = [c.layer_types[i % len(c.layer_types)] for i in range(layers)]  # deeper than a 1-layer model too
    model = build.build_model(small, res, c)
    model.train()
    tr = cfg.trainer
    if tr.use_liger_kernel:
        from transformers.integrations.liger import apply_liger_kernel

        apply_liger_kernel(model, speed.liger_kernels(cfg.task.name) or {})
    if tr.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if getattr(model, "enable_input_require_grads", None):
            model.enable_input_require_grads()
    if tr.torch_compile and tr.compile_scope == "regional":
        speed.compile_regions(model, tr)
    elif tr.torch_compile and speed.decoder_layers(model):
        # compile_scope=model: a whole-model compile keeps about what a regional one keeps per layer (an H200's
        # whole-model CUDA graphs at 2k packs peaked 0.35-2.1% over these copies' prediction at 36-4 layers, where
        # eager copies read 9-18% over and copies compiled whole more still; experiments/speed, the memory model
        # on whole-model graphs). So these compile by layer, without CUDA graphs (a layer's graph can't be
        # replayed per layer). What a whole-model graph holds beyond them does not grow with depth (5-7.5% of the
        # peak at 8k packs on 4 layers): trace_activations measures it on a 2-layer copy compiled whole
        by_layer = copy.deepcopy(tr)
        by_layer.compile_mode = None
        # (compile_one_graph stays as configured: the copies' first layer then computes an input gradient the
        # run's does not, a hidden state's worth at most, as calls 2-3 measured them)
        speed.compile_regions(model, by_layer)
    return model


def activation_bytes(cfg, res, model, batch: dict) -> dict:
    """Activation bytes (peak, kept and at_last_layer: see _peak_bytes) of one forward and backward of a copy:
    the allocator's figures on a GPU, the bytes autograd saves on the CPU."""
    if res.device != "cuda":
        return _saved_bytes(model, batch, res.amp, res.device)
    return _peak_bytes(model, batch, res.amp, res.device, watch_layers=not cfg.trainer.torch_compile)


def interpolate(lo: dict, hi: dict, rows_lo: int, rows_hi: int, rows: int) -> dict:
    """activation_bytes at `rows` rows from its figures at fewer and more rows of the same shape: activations
    grow with the rows of a batch in a straight line (every kernel's output is rows x the same row)."""
    w = (rows - rows_lo) / (rows_hi - rows_lo)
    return {k: lo[k] + (hi[k] - lo[k]) * w for k in lo}


def probe_copy(cfg, res, conf, batch: dict, layers: int) -> dict:
    """activation_bytes of a fresh `layers`-layer copy (build_copy)."""
    return activation_bytes(cfg, res, build_copy(cfg, res, conf, layers), batch)


def at_depth(one: dict, two: dict, layers: int) -> tuple[float, float]:
    """(per_layer, outside) activation bytes at the real depth from the 1- and 2-layer copies' figures: the
    larger of two lines (trace_activations says why)."""
    peak_slope = two["peak"] - one["peak"]
    kept_slope = max(peak_slope, two["kept"] - one["kept"])
    lines = [(peak_slope, one["peak"] - peak_slope), (kept_slope, two["at_last_layer"] - 2 * kept_slope)]
    return max(lines, key=lambda line: line[0] * layers + line[1])


def whole_model_compiled(cfg, res) -> bool:
    """A run compiled whole (compile_scope=model, its layers inlined) on a GPU: traced by layer, then checked
    against a 2-layer copy compiled whole (trace_activations)."""
    tr = cfg.trainer
    return res.device == "cuda" and bool(tr.torch_compile) and tr.compile_scope == "model" and \
        not getattr(tr, "compile_layers_once", False)


def probe_whole_copy(cfg, res, conf, batch: dict, layers: int) -> dict:
    """activation_bytes of a `layers`-layer copy compiled whole, without CUDA graphs, on its second step: the first
    compiles it, and inductor's autotuning allocates buffers no training step holds."""
    eager = copy.deepcopy(cfg)
    eager.trainer.torch_compile = False  # built without the by-layer regions: they would nest in the whole graph
    model = torch.compile(build_copy(eager, res, conf, layers), backend=cfg.trainer.compile_backend)
    forward_backward(model, batch, res.amp, res.device)
    model.zero_grad(set_to_none=True)
    return activation_bytes(cfg, res, model, batch)


def trace_activations(cfg, res, conf, batch: dict) -> dict:
    """Activation bytes per layer and outside the layers at the real depth, from 1- and 2-layer copies on
    `batch`, and the workspace a first step leaves allocated (GPU).

    The peak is the largest of each layer's backward: that layer's recomputed internals plus the inputs still
    kept for the layers before it. Two lines through the copies give it at depth:
    - the peak's own line (2-layer minus 1-layer peak per layer), right where every layer's backward costs alike;
    - the last layer's line: its moment at 2 layers plus what the forward keeps per layer. Where the first
      layer's backward costs more than the others (GPT-NeoX under QLoRA; likely its bf16 input from the
      embedding, fp32 after it), the peak sits there in both copies and its line is flat: Polyglot-Ko-12.8B's
      peak came out flat over 1-4 layers on an H200, then grew by one fp32 hidden state per layer (40 layers:
      2.5x the flat line's activations).
    The larger of the two at the real depth is the prediction."""
    # warm-up: cuBLAS workspaces and compiled graphs are not activations
    workspace = first_step_workspace(res.device, lambda: probe_copy(cfg, res, conf, batch, 1))
    one, two = (probe_copy(cfg, res, conf, batch, layers) for layers in (1, 2))
    layers = getattr(conf, layers_key(conf))
    per_layer, outside = at_depth(one, two, layers)
    if whole_model_compiled(cfg, res) and layers >= 2:
        # a graph of the whole model holds a part the copies compiled by layer don't, the same at every depth past
        # one layer: at 8k packs on an H100, 41.1 KB a token at 2, 8 and 36 layers with CUDA graphs, 45.2 at 2
        # without (experiments/speed, whole-model compile's memory). A 2-layer copy compiled whole holds it: what
        # it peaks at beyond two of the copies' layers is what lies outside the layers
        try:
            whole = probe_whole_copy(cfg, res, conf, batch, 2)
            outside = max(outside, whole["peak"] - 2 * per_layer)
        except Exception as exc:  # the by-layer copies' prediction stands, short by that part: said, not fatal
            log.warning("memory model: the 2-layer copy compiled whole failed (%s: %s); the prediction may be low "
                        "by what a whole-model graph holds", type(exc).__name__, str(exc)[:200])
    # the copies' own figures go into the report: a later rule can be checked on a run's stored parts
    return {"per_layer": per_layer, "outside": outside, "layers": layers, "workspace": workspace,
            "copies": {"1": one, "2": two}}


def first_step_workspace(device: str, warm) -> int:
    """Bytes a process's first forward and backward leaves allocated for good (cuBLAS's workspaces, a compiled
    copy's graphs): what is allocated after `warm()` (that first step, on a copy) beyond before it and beyond
    whatever `warm` keeps alive itself. 0 off a GPU, where `warm` still runs. The run's prediction and the
    planner's (src/plan/predict.py) both measure it here, so their totals agree."""
    if device != "cuda":
        warm()
        return 0
    gc.collect()  # garbage from before (a previous run's model in the same process) is not freed inside the diff
    before = torch.cuda.memory_allocated()
    warm()
    gc.collect()  # the copy's reference cycles: only what outlives the copy is workspace
    return max(0, torch.cuda.memory_allocated() - before)


def peak_parts(fixed: dict, activations: float, workspace: float, grad_accum: int = 1, first_grads: float = 0,
               largest_grad: float = 0, after_last_layer: float = 0, kept: float = 0) -> dict:
    """The predicted peak's parts in GB (their sum is the peak, the run's and the planner's): weights and state
    (`fixed`, bytes), activations, workspace, and how the gradients overlap the activations.

    `activations` is the copies' figure without the gradients they had made (trace_activations); what a real step
    holds of the gradients beside them depends on where in the step its peak falls:
    - grad_accum 1: the backward starts with no gradients, makes them layer by layer as it frees the activations,
      and the optimizer step holds them all. Alive at any moment, the activations left and the gradients made
      fall on a line between two ends: the backward's start (the activations, and `first_grads`: those the copies
      had made by the end of the last layer's backward, the head's and that layer's, the same at any depth) and
      its end (every gradient, and `after_last_layer`: what the copies held beyond theirs after the last layer,
      such as a tied embedding's two halves before they are summed). The peak is the larger end.
    - grad_accum > 1: the first micro-batch's gradients stay while the next ones' backward adds into them. Each new
      gradient is made whole before it is added and freed: the largest (a full fine-tune's embedding, made at the
      backward's end, beyond what the copies held there) is the activations' rival at that moment. So is the
      forward's end (`kept`: all it saved, the head's among it, beside every gradient): `activations` less the
      gradients the copies had made by the last layer's backward reads below it where a full fine-tune frees the
      head's activations before then (a 7-layer bf16 run at grad_accum 3 on an H100 peaked 2.0% over the rule
      without it, its trace holding the kept line's activations at the peak; experiments/speed, full fine-tunes).
    An earlier rule (read off full fine-tunes on an H200, on copies that subtracted every gradient they had made,
    also those made after the moment they read) missed two of eight held-out rows on an H100 by 2.5-3.1%; this one,
    held out on an H100 where every micro-batch was the widest, was -0.8% to +0.1% off (experiments/speed, full
    fine-tunes)."""
    parts = {**fixed, "activations": activations, "workspace": workspace}
    grads = fixed.get("grads")
    if grads is not None:
        end = max(0, after_last_layer)
        at_peak = grads + max(activations, kept, end + largest_grad) if grad_accum > 1 else \
            max(activations + first_grads, grads + end)
        parts["gradient_overlap"] = at_peak - grads - activations
    return {k: v / 2**30 for k, v in parts.items()}


def copy_gradients(one: dict, two: dict, largest: float, layers: int, shard: int = 1) -> dict:
    """peak_parts' gradient arguments from the 1- and 2-layer copies' figures (activation_bytes) and the run's
    largest gradient (bytes, already its rank's share): under FSDP each rank holds 1/shard. A figure the copy did
    not read stands on the largest gradient; `kept` at depth is the line through the copies' (0 without them)."""
    first = two.get("first_grads")
    kept = one["kept"] + (layers - 1) * (two["kept"] - one["kept"]) if "kept" in one and "kept" in two else 0
    return {"first_grads": largest if first is None else first / shard, "largest_grad": largest,
            "after_last_layer": two.get("after_last_layer", 0) / shard, "kept": kept}


def largest_gradient(model) -> int:
    """Bytes of the largest trainable parameter's gradient (a full fine-tune's embedding; LoRA's head)."""
    return max((p.numel() * p.element_size() for p in model.parameters() if p.requires_grad), default=0)


def weights_and_state(model) -> dict:
    """Bytes of every parameter and buffer, and of the trainable ones' gradients and AdamW moments (torch's
    AdamW keeps both moments in the parameter's dtype)."""
    weights = sum(p.untyped_storage().nbytes() for p in model.parameters()) + \
        sum(b.untyped_storage().nbytes() for b in model.buffers())
    trainable = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return {"weights": weights, "grads": trainable, "optimizer": 2 * trainable}


# The allocator reserves more than it hands out, and near a cap that decides whether a job fits. Under a 24 GB cap
# on an H200 (expandable segments on, env=tuned), QLoRA jobs reserved 1.05-1.39x their peak allocated; Llama-3.2-3B
# jobs predicted at 20.6 and 21.6 GB ran out of memory with about 4 GB reserved but unallocated (the 21.6 GB one ran
# on a second try).
RESERVED_OVER_ALLOCATED = 1.18  # the typical ratio there: a warning, not a refusal


def capacity_gb(cfg, device: str) -> float | None:
    """What this process may use: the card's memory, or gpu.memory_cap_gb below it; None off a GPU."""
    if device != "cuda":
        return None
    card = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**30
    return min(card, cfg.gpu.memory_cap_gb or card)


def capacity_warning(peak_gb: float, capacity_gb: float | None, alloc_conf: str | None) -> str | None:
    """What a predicted peak means for this process's capacity, or None where it fits with room."""
    if not capacity_gb:
        return None
    if peak_gb > capacity_gb:
        return (f"predicted peak {peak_gb:.1f} GB exceeds the {capacity_gb:.1f} GB this process may use: expect OOM "
                "(smaller batch.size, gradient checkpointing, or peft=qlora)")
    if peak_gb * RESERVED_OVER_ALLOCATED > capacity_gb:
        expandable = "expandable_segments:true" in (alloc_conf or "").replace(" ", "").lower()
        also = "" if expandable else ", env.alloc_conf=expandable_segments:True"
        return (f"predicted peak {peak_gb:.1f} GB of {capacity_gb:.1f} GB: the allocator reserves ~"
                f"{RESERVED_OVER_ALLOCATED:.1f}x what it hands out, so this may run out of memory (smaller "
                f"batch.size or gradient checkpointing{also})")
    return None


def before_training(cfg, res, conf, model, collator, lengths: dict) -> dict | None:
    """The prediction a GPU run reports (measure.predict_memory). A model the trace can't handle costs a
    warning, never the run, and the report says why it has no prediction ({"not_measured": reason})."""
    if res.device != "cuda" or not cfg.measure.predict_memory:
        return None
    try:
        return predict(cfg, res, conf, model, widest_batch(cfg, conf, collator, lengths, res.device))
    except Exception as exc:
        log.warning("memory prediction skipped: %s: %s", type(exc).__name__, exc)
        return {"not_measured": f"could not check: {type(exc).__name__}: {str(exc)[:200]}"}
    finally:
        torch.cuda.reset_peak_memory_stats()  # the traced copies are not the run's peak


def predict(cfg, res, conf, model, batch: dict) -> dict:
    """Predicted peak allocated memory (GB) for micro-batches like `batch` (the widest the run sees)."""
    acts, reused = memory_cache.remembered(memory_cache.key(cfg, res, conf, batch),
                                           lambda: trace_activations(cfg, res, conf, batch))
    fixed = weights_and_state(model)
    layers = acts["layers"]
    if res.distributed == "fsdp":  # each rank holds 1/N of the state, plus about one gathered layer at a time
        fixed = {k: v / res.world_size + (v / layers if k == "weights" else 0) for k, v in fixed.items()}
    activations = acts["per_layer"] * layers + acts["outside"]
    if cfg.trainer.gradient_checkpointing and cfg.trainer.checkpoint_every > 1:
        # checkpoint_every=k keeps layers 0, k, 2k, ... checkpointed (src/train/trainer.py's PartialCheckpointing); the rest keep
        # everything, as a copy without checkpointing measures
        full = copy.deepcopy(cfg)
        full.trainer.gradient_checkpointing = False
        kept_full = layers - -(-layers // cfg.trainer.checkpoint_every)
        full_acts, _ = memory_cache.remembered(memory_cache.key(full, res, conf, batch),
                                               lambda: trace_activations(full, res, conf, batch))
        activations += (full_acts["per_layer"] - acts["per_layer"]) * kept_full
    shard = res.world_size if res.distributed == "fsdp" else 1
    largest = largest_gradient(model) / shard
    copies = acts.get("copies", {})
    gb = peak_parts(fixed, activations, acts["workspace"], cfg.batch.grad_accum,
                    **copy_gradients(copies.get("1", {}), copies.get("2", {}), largest, layers, shard))
    capacity = capacity_gb(cfg, res.device)
    warning = capacity_warning(sum(gb.values()), capacity, os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    if warning:
        log.warning(warning)
    tokens = int(batch["input_ids"].numel())
    out = {"peak_allocated": sum(gb.values()), "parts": gb, "widest_tokens": tokens,
           "activation_bytes_per_token": activations / tokens, "largest_grad_gb": largest / 2**30}
    if "copies" in acts:
        out["copies_gb"] = {n: {k: v / 2**30 for k, v in fig.items()} for n, fig in acts["copies"].items()}
    if warning:
        out["warning"] = warning
    if reused is not None:  # the copies were not built: an earlier run of these shapes traced them
        out["trace_from"] = str(reused)
    if cfg.trainer.torch_compile and getattr(cfg.trainer, "compile_layers_once", False):
        # the layers' nested compile region keeps more than the copies (compiled by layer) show: on an H100 at 8
        # layers, 2k packs, the classifier peaked 27% over this figure with CUDA graphs and without, while inlined
        # layers came within 2.1%; copies compiled whole with the same regions, 3 and 4 layers deep, predicted the
        # same (experiments/speed). Not traced further: a classifier's figure is a lower bound, a causal LM's
        # (whose copies also hold the fp32 logits a whole graph may not) neither bound
        log.warning("trainer.compile_layers_once: the memory model's copies miss what the layers' nested compile "
                    "region keeps; read the predicted peak as low (27% under the peak at 8 layers on an H100)")
        if cfg.task.name == "classification":
            out["bound"] = "lower"
    elif cfg.trainer.torch_compile and cfg.trainer.compile_scope == "model" and cfg.task.name != "classification":
        # the copies' head and loss run eager: a whole-model graph can fuse the loss over the vocabulary and never
        # hold the fp32 logits (a 4-layer causal LM at 2,560 tokens peaked 16% under this figure on an H100), so
        # this is an upper bound there; a classifier's head is a few KB a row
        out["bound"] = "upper"
    return out
