"""No-op re-runs (issue 10): ``nl2sql-eval run`` of two models x 120 cases, first run vs nothing changed.

Runs the CLI as a user would, in a fresh storage root: the first run (sample database, gold preparation,
both models), a re-run with nothing changed (target <= 2 s wall: the stored scores are printed, no stage
runs), a forced re-run (``--force``: both models again, warm generation cache, the gold version already
prepared), and a changed run setting (``--repeat 2``) on the prepared gold version (only the model stages). Exit 1 when the no-op re-run misses its target.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 2.0
CMD = [
    sys.executable,
    "-m",
    "nl2sql_cli.main",
    "run",
    "--gold-set",
    "multidomain-v1",
    "--model",
    "gold-echo",
    "--model",
    "sql-mutant",
]


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[2:])} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return elapsed, done.stderr


def main() -> int:
    home = tempfile.mkdtemp(prefix="bench-rerun-")
    env = {
        **os.environ,
        "NL2SQL_HOME": home,
        "DAGSTER_HOME": os.path.join(home, "dagster_home"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    first, _ = timed(CMD, env)
    noop = []
    for _ in range(3):
        seconds, err = timed(CMD, env)
        assert err.count("REUSED") == 2, err
        noop.append(seconds)
    forced, _ = timed([*CMD, "--force"], env)
    third, _ = timed(CMD[:6] + ["--model", "gold-echo", "--repeat", "2"], env)
    best = min(noop)
    print(f"two models x 120 cases (multidomain-v1), nl2sql-eval run as a subprocess, storage root {home}")
    print(f"  first run (sample db, gold preparation, both models)   {first:6.2f} s")
    print(
        f"  no-op re-run, nothing changed (best of 3)              {best:6.2f} s  (runs: "
        f"{', '.join(f'{s:.2f}' for s in noop)}; target <= {TARGET_S:.1f} s)"
    )
    print(f"  --force re-run (both models again, warm generation cache) {forced:6.2f} s")
    print(f"  a changed run config (--repeat 2) on the prepared gold  {third:6.2f} s  (gold stage skipped)")
    return 0 if best <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
