"""Run every benchmark in this folder (``make bench``); each prints its own figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = {"bench_public_like.py": ["--scale", "--rounds", "3"]}
"""Extra arguments per script: issue 21's linearity target (1,000 -> 10,000 cases) is one of the targets that
``bench_public_like.py`` exits 0 only when they hold, and each of its timed commands keeps the best of 3 runs (a
single run of a 2-second command moves by 0.3-0.5 s on a shared machine; about 8 minutes in all)."""


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.name} ===", flush=True)
        if subprocess.call([sys.executable, str(script), *ARGS.get(script.name, [])]) != 0:
            failed.append(script.name)
    if failed:
        print(f"\nFAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
