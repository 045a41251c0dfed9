"""``langmem-plus bench foundation``: the foundation's speed, each figure beside a reference.

- capture: fingerprint + tags per event (events/s) over realistic error texts;
- adversarial capture: the slowest 1 MB hostile text (quotes, dots, tracebacks, ...)
  beside a 1 MB plain text, as a ratio (catastrophic regex backtracking would show here);
- on-error retrieval at N lessons (p50, p95) and raw Chroma ``query(n_results=20)``
  on the same collection with the same query vectors, in the same run (ratio);
- ``import langmem_plus`` time beside ``python -c pass`` and the full facade import.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from langmem_plus._text import stable_id
from langmem_plus.records import Lesson, LessonScope

TEMPLATES = [
    "sqlite3.OperationalError: no such column: {w}",
    "sqlite3.OperationalError: no such table: {w}_{n}",
    'Traceback (most recent call last):\n  File "/srv/app/{w}.py", line {n}, in <module>\n    x = {w}\nNameError: name \'{w}\' is not defined',
    "error: unknown command '{w}' at stage {n}",
    "jq: error: {w}/{n} is not defined at <top-level>, line {n}:",
    "fatal: pathspec '{w}.txt' did not match any files",
    "KeyError: '{w}'",
    "TypeError: {w}() takes {n} positional arguments but {m} were given",
    "HTTP 429 Too Many Requests: rate limit exceeded for key {h}",
    "permission denied: /var/lib/{w}/{n}.db",
]
WORDS = ["age", "name", "salary", "orders", "city", "total", "user_id", "price", "qty", "region"]


def _texts(n: int, rng: random.Random) -> list[str]:
    return [
        rng.choice(TEMPLATES).format(
            w=rng.choice(WORDS) + str(rng.randint(0, 99)), n=rng.randint(1, 999), m=rng.randint(1, 9), h=f"{rng.getrandbits(48):x}"
        )
        for _ in range(n)
    ]


def bench_capture(n: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Events per second for fingerprint + fingerprint_id + extract_tags."""
    from langmem_plus.capture import extract_tags, fingerprint, fingerprint_id

    texts = _texts(n, random.Random(seed))
    started = time.perf_counter()
    for t in texts:
        fingerprint_id(fingerprint(t))
        extract_tags(t)
    secs = time.perf_counter() - started
    return {"events": n, "seconds": round(secs, 3), "events_per_s": round(n / secs, 1)}


def adversarial_texts(size: int = 1 << 20) -> dict[str, str]:
    """Hostile error texts of about ``size`` characters, by name: each stresses one pattern of capture."""
    return {
        "long-line": "x" * size + "\nKeyError: 'k'",
        "dots": "a." * (size // 2),
        "slashes": "a/" * (size // 2),
        "quotes": "'" * size,
        "dq": '"a' * (size // 2),
        "dashes": "a-" * (size // 2),
        "nouns": "column " * (size // 7),
        "colon-nouns": "no such column: " * (size // 16),
        "digits": "9" * size,
        "errors": "error: " * (size // 7),
        "newlines": "\n" * size,
        "tb-files": 'File "x", line 1\n' * (size // 18),
        "escaped-quotes": '"\\' * (size // 2),
        "curly-quotes": "\u2018" * size,
        "punctuation": ",:" * (size // 2),
        "counts": "1 " * (size // 2),
    }


def bench_adversarial(size: int = 1 << 20, repeats: int = 3) -> dict[str, Any]:
    """Fingerprint + tags on each hostile text (best of ``repeats``), beside a plain text of the same size."""
    from langmem_plus.capture import extract_tags, fingerprint

    def best_ms(text: str) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            fingerprint(text)
            extract_tags(text)
            times.append(time.perf_counter() - started)
        return min(times) * 1000

    plain = best_ms("plain words " * (size // 12))
    per_text = {name: best_ms(text) for name, text in adversarial_texts(size).items()}
    worst = max(per_text, key=per_text.__getitem__)
    return {
        "chars": size,
        "plain_ms": round(plain, 2),
        "worst": worst,
        "worst_ms": round(per_text[worst], 2),
        "worst_ratio": round(per_text[worst] / plain, 2) if plain else float("inf"),
    }


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def synthetic_lessons(n: int, namespace: tuple[str, ...], seed: int = 0) -> list[Lesson]:
    """``n`` plausible lessons over a few tools, fingerprints and tags."""
    rng = random.Random(seed)
    tags = ["unknown_command", "column_reference", "sort_direction", "operator_mismatch", "path_quote", "arity_mismatch"]
    out = []
    for i in range(n):
        tool = f"tool{i % 7}"
        wrong, correct = f"{rng.choice(WORDS)}{i % 50}", f"{rng.choice(WORDS)}_{i % 50}"
        fp = f"error: unknown command <str> near {wrong} in {tool}"
        out.append(
            Lesson(
                id=stable_id("les", *namespace, str(i)),
                namespace=namespace,
                rule_text=f"WRONG: {wrong} -> CORRECT: {correct}",
                wrong=wrong,
                correct=correct,
                triggers=[f"fp{i % (n // 2 or 1)}"],
                fingerprints=[fp],
                tags=[rng.choice(tags)],
                scope=LessonScope(level="domain", tool=tool, domain="bench"),
                status=rng.choice(["candidate", "promoted"]),
            )
        )
    return out


def bench_retrieval(n_lessons: int = 1000, queries: int = 200, seed: int = 0) -> dict[str, Any]:
    """On-error retrieval latency at ``n_lessons`` beside raw Chroma query on the same collection."""
    from langmem_plus.memory import LearningMemory
    from langmem_plus.retrieval.retrievers import event_from_text

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        mem = LearningMemory.open(tmp, namespace=("bench", "foundation"))
        t0 = time.perf_counter()
        lessons = synthetic_lessons(n_lessons, mem.namespace, seed)
        mem.add_lessons(lessons)
        write_s = time.perf_counter() - t0
        texts = _texts(queries, rng)
        events = []
        for t in texts:
            ev = event_from_text(mem, t, tool=f"tool{rng.randint(0, 6)}")
            hit = rng.choice(lessons)  # half the queries hit an exact trigger
            events.append(ev.model_copy(update={"fingerprint_id": hit.triggers[0]}) if rng.random() < 0.5 else ev)
        mem.retrieve_on_error(events[0])  # warm caches (lesson vectors) once, as a long-lived agent would
        ours, raw = [], []
        col = mem.store.raw_collection("lessons")
        for ev in events:
            s = time.perf_counter()
            mem.retrieve_on_error(ev)
            ours.append((time.perf_counter() - s) * 1000)
            vec = mem.store.embed_query(ev.fingerprint + "\n" + ev.error_text)
            s = time.perf_counter()
            col.query(query_embeddings=[vec], n_results=20)
            raw.append((time.perf_counter() - s) * 1000)
        mem.close()
    p50, raw50 = statistics.median(ours), statistics.median(raw)
    return {
        "lessons": n_lessons,
        "write_s": round(write_s, 2),
        "ours_p50_ms": round(p50, 2),
        "ours_p95_ms": round(_pct(ours, 0.95), 2),
        "raw_chroma_p50_ms": round(raw50, 2),
        "raw_chroma_p95_ms": round(_pct(raw, 0.95), 2),
        "ratio_p50": round(p50 / raw50, 2) if raw50 else None,
    }


def _import_ms(code: str, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", f"import time; s=time.perf_counter(); {code}; print(time.perf_counter()-s)"],
            capture_output=True,
            text=True,
            check=True,
        )
        best = min(best, float(out.stdout.strip()) * 1000)
    return round(best, 1)


def bench_import() -> dict[str, float]:
    """Best-of-5 import times in fresh interpreters, with references."""
    return {
        "import_langmem_plus_ms": _import_ms("import langmem_plus"),
        "import_learning_memory_ms": _import_ms("from langmem_plus import LearningMemory"),
        "import_chromadb_ms": _import_ms("import chromadb"),
        "import_json_ms": _import_ms("import json"),
    }


BENCH_NAME = "foundation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench foundation``."""
    parser.add_argument("--lessons", type=int, default=1000, help="lessons in the retrieval store (default 1000)")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench foundation``."""
    return main(json_out=args.json, lessons=args.lessons, seed=args.seed)


def main(*, json_out: bool = False, lessons: int = 1000, seed: int = 0) -> int:
    """Run all foundation benchmarks and print them."""
    results = {
        "capture": bench_capture(seed=seed),
        "adversarial_capture": bench_adversarial(),
        "retrieval": bench_retrieval(lessons, seed=seed),
        "import": bench_import(),
    }
    if json_out:
        print(json.dumps(results))
    else:
        for section, figures in results.items():
            print(f"{section}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


__all__ = ["BENCH_NAME", "add_arguments", "adversarial_texts", "bench_adversarial", "bench_capture", "bench_import", "bench_retrieval", "main", "run", "synthetic_lessons"]
