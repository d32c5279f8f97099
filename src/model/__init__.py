"""The model side: built from its architecture or real weights, with LoRA/QLoRA adapters (build), how it reads
padding-free batches (packed), its speed paths (speed: regional compile, Liger), the FLOPs a token costs
(flops) and the peak memory of a step, predicted before training (memory_model). Imports base, config,
machine and data."""
