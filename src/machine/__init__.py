"""What this machine is and does for a run: the device chosen, the autocast and attention that `auto`
became, torch's global settings (TF32, cuDNN, allocator), and what the report says about it (env). Imports
base and config."""
