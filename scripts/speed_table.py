"""The speed rows of a GPU call: one line per labelled report in REPORTS.jsonl (scripts/collect.py's format),
with the plain-Trainer anchors of ANCHORS.jsonl for the ratios.
    python scripts/speed_table.py REPORTS.jsonl [ANCHORS.jsonl]"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
anchors = {}
if len(sys.argv) > 2:
    for line in open(sys.argv[2]):
        if line.startswith('{"name"'):
            a = json.loads(line)
            anchors[a["name"]] = a["real_tok_per_s"]
best_plain = max(anchors.values()) if anchors else None
print("| run | real tok/s | x best plain | MFU | step s (n) | GPU busy | peak GB | predicted GB | to first step s | graphs (in window) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, tok in anchors.items():
    print(f"| plain Trainer {name} | {tok:,.0f} | {tok / best_plain:.2f} | | | | | | | |")
for r in rows:
    th, fl, st = r.get("throughput") or {}, r.get("flops") or {}, r.get("step_time_s") or {}
    mem, pred, comp = r.get("memory_gb") or {}, r.get("memory_predicted_gb") or {}, r.get("compile") or {}
    tok = th.get("real_tokens_per_s")
    if r["status"] != "ok" or not tok:
        print(f"| {r['label']} | {r['status']}: {(r.get('error') or '')[:80]} | | | | | | | | |")
        continue
    f = lambda x, s: "-" if x is None else format(x, s)  # noqa: E731
    print(f"| {r['label']} | {tok:,.0f} | {f(tok / best_plain if best_plain else None, '.2f')} | {f(fl.get('mfu'), '.1%')} | "
          f"{f(st.get('mean'), '.3f')} ({st.get('n')}) | {f(r.get('gpu_busy_fraction'), '.0%')} | {f(mem.get('peak_allocated'), '.1f')} | "
          f"{f(pred.get('peak_allocated'), '.1f')} | {f(comp.get('to_first_step_s'), '.0f')} | {comp.get('graphs')} ({comp.get('graphs_in_window')}) |")
