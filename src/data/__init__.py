"""The data side of a run, in the order a run goes through it (prepare does it in one pass): rows from a source
(sources: synthetic, or files checked once; formats: instruction and chat rows), tokenised (tokenize), packed
into fixed token budgets (packing) and collated into batches (collate). Imports base, config and machine."""
