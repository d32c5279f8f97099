"""Tokenisation cost of a corpus shaped like the account-tax texts (~535 characters a row, the report's
mean), through trainsweep's own loader (src/data/tokenize.py): num_proc 1 vs N, cold vs cached, and the fast
tokenizer's own threads on or off. Each variant runs in a fresh process with a fresh cache.

    python experiments/tokenization/bench.py [ROWS]      -> one JSON line per variant, then a table
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "outputs/cache/tokenization"
WORDS = ("거래처 법인카드 사용 내역 출장 숙박 택시비 주차비 식대 회식 소모품 복사용지 토너 통신비 인터넷 회선 요금 "
         "접대 선물 한정식 커피 간식 교통카드 항공권 렌터카 고속도로 통행료 청구 승인 결제 부가세 공급가액 합계 "
         "카드사 가맹점 서울 부산 제주 본사 지점 월분 정기 구독 수수료 이체 입금 출금 환불 취소").split()


def corpus(rows: int) -> Path:
    """`rows` texts of ~535 characters (words, amounts and dates), 280 labels; made once, cached."""
    path = CORPUS / f"corpus_{rows}.csv"
    if path.exists():
        return path
    import pandas as pd

    rng = np.random.default_rng(0)
    vocab = np.array(WORDS + [f"{a:,}원" for a in rng.integers(1000, 999999, 2000)] + [f"2025-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)])
    weights = np.where(np.arange(len(vocab)) < len(WORDS), 8.0, 1.0)
    picks = rng.choice(len(vocab), size=(rows, 120), p=weights / weights.sum())
    targets = np.clip(rng.normal(535, 40, rows), 300, 620).astype(int)
    texts = [" ".join(vocab[row])[:n] for row, n in zip(picks, targets)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"text": texts, "label": rng.integers(0, 280, rows)}).to_csv(path, index=False)
    return path


def variant(rows: int, num_proc: int, tokenizer_threads: bool) -> dict:
    """One fresh process: train (or reuse) the fallback tokenizer, tokenise cold, then again from cache."""
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if tokenizer_threads else "false"
    import resource

    from src.base import files as disk
    from src.data import tokenize
    from src.config.compose import compose

    path = corpus(rows)
    cfg = compose(["data=files", f"data.train_file={path}", "data.max_length=320", f"data.num_proc={num_proc}"])
    tokenizer = tokenize.train_tokenizer(cfg, 8000)  # cached under outputs/cache: the same for every variant
    with tempfile.TemporaryDirectory() as cache:
        disk.CACHE = Path(cache)
        _, _, cold = tokenize.tokenize_files(cfg, tokenizer)
        _, _, warm = tokenize.tokenize_files(cfg, tokenizer)
    return {"rows": rows, "num_proc": num_proc, "tokenizer_threads": tokenizer_threads,
            "cold_s": cold["tokenize"]["train"]["seconds"], "cached_s": warm["tokenize"]["train"]["seconds"],
            "cache_hit_second": warm["tokenize"]["train"]["cache_hit"], "cpu_count": os.cpu_count(),
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "variant":
        rows, num_proc, threads = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
        print(json.dumps(variant(rows, num_proc, threads)), flush=True)
        sys.exit(0)
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    t0 = time.perf_counter()
    corpus(rows)
    print(f"corpus: {rows} rows in {time.perf_counter() - t0:.1f} s", flush=True)
    results = []
    for num_proc, threads in [(1, True), (1, False), (os.cpu_count(), False), (os.cpu_count(), True)]:
        out = subprocess.run([sys.executable, __file__, "variant", str(rows), str(num_proc), "1" if threads else "0"],
                             cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr[-3000:])
        out = out.stdout.strip().splitlines()[-1]
        results.append(json.loads(out))
        print(out, flush=True)
    base = results[1]["cold_s"]  # one process, no tokenizer threads: the report's "before"
    print("\n| num_proc | tokenizer threads | cold s | rows/s | vs 1 process, no threads | cached s |\n|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['num_proc']} | {'on' if r['tokenizer_threads'] else 'off'} | {r['cold_s']:.1f} | "
              f"{r['rows'] / r['cold_s']:,.0f} | {base / r['cold_s']:.2f}x | {r['cached_s']:.2f} |")
