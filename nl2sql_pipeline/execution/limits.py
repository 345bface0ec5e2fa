"""``SandboxLimits``: the bounds every sandboxed query runs under."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nl2sql_pipeline.execution.exceptions import SandboxLimitsError

MAX_ROW_CAP = 2**62
"""The largest row cap (DuckDB fetches ``row_cap + 1`` rows as a signed 64-bit count)."""

_SIZE = re.compile(r"^\s*(?P<number>\d+(\.\d+)?)\s*(%|B|K|KB|KIB|M|MB|MIB|G|GB|GIB|T|TB|TIB)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class SandboxLimits:
    """Wall-clock timeout, row cap, DuckDB memory limit, threads and spill space of one query.

    ``memory_limit`` bounds DuckDB's buffer manager only (a single huge scalar value can exceed it);
    ``max_temp_directory_size`` bounds the spill files under the storage root's scratch folder;
    ``max_result_bytes`` bounds the text, blobs and nested values of the rows fetched into Python (within
    the row cap), which DuckDB's memory limit does not cover.
    """

    timeout_s: float = 10.0
    row_cap: int = 10_000
    memory_limit: str = "512MB"
    threads: int = 1
    max_temp_directory_size: str = "1GB"
    max_result_bytes: int = 256 * 1024 * 1024

    def __post_init__(self) -> None:
        problems = []
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, (int, float))
            or not (math.isfinite(self.timeout_s) and self.timeout_s > 0)
        ):
            problems.append(f"timeout_s={self.timeout_s!r} must be a positive number of seconds")
        if isinstance(self.row_cap, bool) or not isinstance(self.row_cap, int) or self.row_cap < 0:
            problems.append(f"row_cap={self.row_cap!r} must be an integer >= 0")
        if isinstance(self.row_cap, int) and self.row_cap > MAX_ROW_CAP:
            problems.append(f"row_cap={self.row_cap!r} must be at most {MAX_ROW_CAP:,}")
        if (
            isinstance(self.max_result_bytes, bool)
            or not isinstance(self.max_result_bytes, int)
            or self.max_result_bytes < 1
        ):
            problems.append(f"max_result_bytes={self.max_result_bytes!r} must be a positive number of bytes")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            problems.append(f"threads={self.threads!r} must be an integer >= 1")
        for name in ("memory_limit", "max_temp_directory_size"):
            value = getattr(self, name)
            match = _SIZE.match(value) if isinstance(value, str) else None
            if match is None or float(match["number"]) <= 0:
                problems.append(f"{name}={value!r} must be a positive size such as '512MB', '1GB' or '50%'")
        if problems:
            raise SandboxLimitsError("invalid sandbox limits: " + "; ".join(problems))
