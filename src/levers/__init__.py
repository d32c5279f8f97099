"""trainsweep's speed levers on a user's own Trainer (`trainsweep.speedup(trainer)`): which levers fit the script
and why the others don't (apply; what it did: outcome), the rows read as the script's collator would score them (rows), and the A/B that
proves in the same process what the levers buy and turns back any that lose (verify)."""
