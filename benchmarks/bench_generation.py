"""Benchmark of candidate generation through litellm's real HTTP path against a scripted local server.

Run: ``.venv/bin/python benchmarks/bench_generation.py [--cases N] [--concurrency C] [--reply-ms MS]``.

1. Throughput: N cases (120) with ``max_concurrency`` C (8), the server answering each call in
   ``--reply-ms`` (200 ms). The ideal is N x reply / C (3.0 s); the run must finish within 1.2x of it.
   The server runs in a process of its own (as a provider would: its CPU is not the client's) and
   keeps connections alive (HTTP/1.1), as providers do.
   litellm's per-process costs (its import, and the lazy schema building of its first call, which
   ``generation.client.warm_up`` does without any network) are paid before the clock starts, as
   they are once per process whatever the number of runs; everything else is timed, the creation
   of the HTTP clients by the first calls included. ``--repeat`` passes run (each against a new
   server process, so each creates its own HTTP clients); all are printed and the fastest is judged,
   as ``timeit`` keeps the fastest run (the machine may be shared).
2. Pacing: two processes generate at the same time against one provider key sharing one limit of
   ``--limit`` requests per ``--window`` seconds (10 per 6 s: the 60-per-minute limit with the window
   scaled down ten times to keep the benchmark short). The server records when each request arrives;
   the largest number of arrivals inside any sliding window is printed and must not exceed the limit.

Exits 1 when a figure misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fake_llm_server import FakeLLMServer, Reply  # noqa: E402  # importable only once tests/ is on sys.path

import nl2sql_pipeline  # noqa: E402,F401  # after the sys.path setup; sets the local litellm price map before litellm loads

SETUP = textwrap.dedent(
    """
    from types import MappingProxyType
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.generation import generate_candidates
    from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext
    from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices

    def setup(api_base, n_cases, concurrency, prefix="c"):
        spec = ModelSpec(slug="bench", kind="litellm", model="openai/bench", api_base=api_base,
                         params=MappingProxyType({"temperature": 0, "max_tokens": 256}), prices=Prices(0.15, 0.6),
                         limits=Limits(max_concurrency=concurrency))
        cases = [case_from_dict({"id": f"{prefix}{i:04d}", "domain": "d", "category": "single_table",
                                 "question": f"How many rows does table {i} hold?", "database": "db",
                                 "expected_sql": f"SELECT {i}"}) for i in range(n_cases)]
        context = PromptContext({"db": DatabasePromptText("CREATE TABLE t (x INT);", "", "2026-06-30")})
        return spec, cases, context
    """
)
PACING_WORKER = SETUP + textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from nl2sql_pipeline.generation.limiter import SharedRateLimiter
    api_base, state_dir, n_cases, limit, window, prefix = sys.argv[1:7]
    spec, cases, context = setup(api_base, int(n_cases), 8, prefix)
    limiter = SharedRateLimiter("openai@" + api_base, requests_per_window=int(limit), tokens_per_window=None,
                                window_s=float(window), state_dir=Path(state_dir))
    records = generate_candidates(cases, spec, cache=None, context=context, limiter=limiter)
    assert all(r.error_class is None for r in records), [r.error_message for r in records if r.error_class]
    """
)


def max_in_window(times: list[float], window: float) -> int:
    """The largest number of ``times`` inside any half-open window of ``window`` seconds."""
    ordered = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(ordered):
        while ordered[start] <= t - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def serve(delay_s: float) -> int:
    """``--serve``: run the scripted server in this process until stdin closes, then print its hit count."""
    with FakeLLMServer(default=Reply.sql("SELECT 1", delay_s=delay_s), keep_alive=True) as server:
        print(server.api_base, flush=True)
        sys.stdin.read()
        print(server.hits, flush=True)
    return 0


def throughput(n_cases: int, concurrency: int, reply_s: float) -> tuple[float, float]:
    """(elapsed, ideal) seconds of one run of ``n_cases`` against a server process."""
    namespace: dict = {}
    exec(SETUP, namespace)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(reply_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        api_base = server.stdout.readline().strip()
        spec, cases, context = namespace["setup"](api_base, n_cases, concurrency)
        from nl2sql_pipeline.generation.client import warm_up

        warm_up(spec)
        started = time.perf_counter()
        records = namespace["generate_candidates"](cases, spec, cache=None, context=context)
        elapsed = time.perf_counter() - started
        server.stdin.close()
        hits = int(server.stdout.readline())
    finally:
        server.wait(timeout=30)
    assert hits == n_cases and all(r.error_class is None for r in records), (hits, records[:1])
    return elapsed, n_cases * reply_s / concurrency


def pacing(per_process: int, limit: int, window: float) -> tuple[int, int, float]:
    """(largest window count, requests, seconds) of two processes sharing one limit."""
    with tempfile.TemporaryDirectory() as state, FakeLLMServer(default=Reply.sql("SELECT 1")) as server:
        env = {**os.environ, "NL2SQL_HOME": state, "PYTHONPATH": str(ROOT)}
        started = time.perf_counter()
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    PACING_WORKER,
                    server.api_base,
                    state,
                    str(per_process),
                    str(limit),
                    str(window),
                    prefix,
                ],
                cwd=ROOT,
                env=env,
            )
            for prefix in ("a", "b")
        ]
        if any(worker.wait(timeout=600) != 0 for worker in workers):
            raise SystemExit("a pacing worker failed")
        arrivals = server.arrival_times()
        return max_in_window(arrivals, window), len(arrivals), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run both parts, print the figures; 0 when both meet their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--reply-ms", type=float, default=200.0)
    parser.add_argument("--limit", type=int, default=10, help="requests per window (default 10)")
    parser.add_argument("--window", type=float, default=6.0, help="window in seconds (default 6: 60/min scaled 1:10)")
    parser.add_argument("--per-process", type=int, default=15, help="requests of each of the two pacing processes")
    parser.add_argument("--repeat", type=int, default=3, help="throughput passes; the fastest is judged (default 3)")
    parser.add_argument("--serve", type=float, metavar="DELAY_S", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)

    passes = [throughput(args.cases, args.concurrency, args.reply_ms / 1000.0) for _ in range(max(1, args.repeat))]
    elapsed, ideal = min(passes)
    ratio = elapsed / ideal
    print(
        f"throughput: {args.cases} cases, concurrency {args.concurrency}, replies of {args.reply_ms:.0f} ms: "
        f"{elapsed:.2f} s (ideal {ideal:.2f} s, ratio {ratio:.2f}, target <= 1.20; "
        f"passes {', '.join(f'{p[0]:.2f}' for p in passes)} s)"
    )
    largest, requests, seconds = pacing(args.per_process, args.limit, args.window)
    print(
        f"pacing: 2 processes x {args.per_process} requests under one limit of {args.limit} per {args.window:g} s "
        f"(60/min scaled 1:{60 / args.window:g}): largest window held {largest} (limit {args.limit}), "
        f"{requests} requests in {seconds:.1f} s"
    )
    print(
        json.dumps(
            {
                "throughput_s": round(elapsed, 3),
                "ideal_s": ideal,
                "ratio": round(ratio, 3),
                "largest_window": largest,
                "limit": args.limit,
                "window_s": args.window,
            }
        )
    )
    ok = ratio <= 1.2 and largest <= args.limit and requests == 2 * args.per_process
    if not ok:
        print("FAILED: a figure missed its target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
