"""Run a Python script with sqlglot's pure-Python modules even where ``sqlglotc`` is installed.

    python benchmarks/pure_sqlglot.py SCRIPT [ARGS...]

``sqlglotc`` ships no module of its own: it puts compiled ``.so`` files beside sqlglot's ``.py`` files,
and Python's import system prefers an extension module to a source file of the same name. sqlglot
offers no switch to turn that off, so this launcher puts a finder first on ``sys.meta_path`` that
loads every ``sqlglot`` module from its source (or bytecode) file, then runs SCRIPT as ``__main__``.
``bench_before_after.py`` uses it to measure the base revision as it ran before ``sqlglotc`` was a
dependency.
"""

from __future__ import annotations

import importlib.machinery
import runpy
import sys


class PurePythonSqlglotFinder:
    """Finds ``sqlglot`` and its submodules among source files only (no compiled extension)."""

    _loaders = (
        (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        """The source-file spec of a sqlglot module; None for every other module."""
        if fullname != "sqlglot" and not fullname.startswith("sqlglot."):
            return None
        for entry in path if path is not None else sys.path:
            spec = importlib.machinery.FileFinder(entry or ".", *cls._loaders).find_spec(fullname, target)
            if spec is not None:
                return spec
        return None


def install() -> None:
    """Put the finder first, before any sqlglot module is imported."""
    if any(name == "sqlglot" or name.startswith("sqlglot.") for name in sys.modules):
        raise RuntimeError("sqlglot is already imported: install the finder before the first import")
    sys.meta_path.insert(0, PurePythonSqlglotFinder)


def main() -> None:
    """Install the finder and run ``sys.argv[1]`` with the remaining arguments."""
    if len(sys.argv) < 2:
        raise SystemExit("usage: python benchmarks/pure_sqlglot.py SCRIPT [ARGS...]")
    install()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
