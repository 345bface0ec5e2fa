"""The reference system as a JSON-lines process: one request per stdin line, one response per stdout line.

    python -m nl2sql_pipeline.reference_system.command

Registered as ``kind: command`` with ``command: ["{python}", -m, nl2sql_pipeline.reference_system.command]``. It exits
when stdin closes. Logs go to stderr (stdout is the protocol).
"""

from __future__ import annotations

import json
import logging
import sys

from nl2sql_pipeline.reference_system.service import answer_json


def serve(stdin=sys.stdin, stdout=sys.stdout) -> int:
    """Answer every request line until stdin closes; returns the exit code."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            reply = {"contract": "nl2sql-system/1", "error": {"message": f"request is not JSON: {exc}", "status": 400}}
        else:
            reply = (
                answer_json(data)
                if isinstance(data, dict)
                else {
                    "contract": "nl2sql-system/1",
                    "error": {"message": "request must be a JSON object", "status": 400},
                }
            )
        stdout.write(json.dumps(reply, ensure_ascii=False, default=str) + "\n")
        stdout.flush()
    return 0


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    return serve()


if __name__ == "__main__":
    sys.exit(main())
