"""An import's files are built in a staging folder beside the gold file and moved into place only when the
import succeeds, so a failed import leaves the gold folder as it was.

    with ImportStaging(out) as staging:
        copy_into(staging.databases / "x.duckdb")
        ...
        staging.commit()   # each file moved over its final path (os.replace), the gold file last

Leaving the ``with`` block without ``commit`` (an error) removes the staging folder and the folders made for
it; the databases, the report and the gold file already under OUT's folder are untouched.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import TracebackType

import duckdb

from nl2sql_pipeline.dialect.sqlite_copy import COLUMNS_SUFFIX
from nl2sql_pipeline.gold.formats.model import BenchmarkImportError
from nl2sql_pipeline.paths import storage_root

DATABASES_FOLDER = "databases"
FAILED_REPORTS_FOLDER = "failed-imports"
"""Under the storage root: the report of an import that failed (OUT's folder stays as it was)."""


class ImportStaging:
    """A hidden folder in OUT's folder, holding ``databases/``, the report and the gold file until ``commit``."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.final_databases = self.out.parent / DATABASES_FOLDER
        if self.out.is_dir():
            raise BenchmarkImportError(f"--out {out}: is a folder (give the path of the .jsonl file to write)")
        self.made = self._make_folders()
        try:
            self.folder = Path(tempfile.mkdtemp(prefix=f".{self.out.stem}.import-", dir=self.out.parent))
        except OSError as exc:
            raise BenchmarkImportError(
                f"--out {out}: cannot write in {self.out.parent} ({exc.strerror or exc}); choose another --out"
            ) from exc
        self.databases = self.folder / DATABASES_FOLDER
        self.databases.mkdir()
        self.committed = False

    def _make_folders(self) -> list[Path]:
        """Create OUT's folder (and its parents); return those made, deepest first. Raises
        ``BenchmarkImportError`` naming what is in the way (a file where a folder should be)."""
        made = [p for p in (self.out.parent, *self.out.parent.parents) if not p.exists()]
        blocker = next(
            (
                p
                for p in (self.final_databases, self.out.parent, *self.out.parent.parents)
                if p.exists() and not p.is_dir()
            ),
            None,
        )
        try:
            if blocker is not None:
                raise NotADirectoryError(str(blocker))
            self.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            what = f"{blocker} is a file, not a folder" if blocker is not None else (exc.strerror or str(exc))
            raise BenchmarkImportError(
                f"--out {self.out}: cannot create the folder {self.final_databases} ({what}); "
                "choose another --out or move it"
            ) from exc
        return made

    def staged(self, final: Path) -> Path:
        """Where the file meant for ``final`` (under OUT's folder) is built."""
        return self.folder / Path(final).relative_to(self.out.parent)

    def commit(self) -> None:
        """Move every staged file over its final path (one ``os.replace`` each): the databases first (a database
        staged without its column file drops a stale one), then the report, the gold file last."""
        self.final_databases.mkdir(exist_ok=True)
        staged_files = sorted(self.databases.iterdir())
        names = {p.name for p in staged_files}
        for staged in staged_files:
            if staged.suffix == ".duckdb" and staged.stem + COLUMNS_SUFFIX not in names:
                (self.final_databases / (staged.stem + COLUMNS_SUFFIX)).unlink(missing_ok=True)
            staged.replace(self.final_databases / staged.name)
        for staged in sorted(self.folder.iterdir(), key=lambda p: p.name == self.out.name):
            if staged.is_file():
                staged.replace(self.out.parent / staged.name)
        self.committed = True

    def keep_failed(self, staged: Path) -> Path | None:
        """Move the staged file ``staged`` (a failed import's report) to the storage root; its new path."""
        if not staged.is_file():
            return None
        folder = storage_root() / FAILED_REPORTS_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(staged, folder / staged.name))

    def __enter__(self) -> ImportStaging:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if not self.committed:
            for folder in self.made:  # deepest first; only those this import made, and only when empty
                try:
                    folder.rmdir()
                except OSError:
                    break


def database_fingerprint(path: Path) -> tuple:
    """What a DuckDB file holds, comparable across copies (two copies of one SQLite file differ in bytes):
    its tables, columns, types, comments, constraints and views, and each table's row count and row hashes."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        where = "database_name = current_database()"
        columns = con.execute(
            "SELECT schema_name, table_name, column_index, column_name, data_type, is_nullable, comment "
            f"FROM duckdb_columns() WHERE {where} AND NOT internal ORDER BY ALL"
        ).fetchall()
        constraints = con.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_text "
            f"FROM duckdb_constraints() WHERE {where} ORDER BY ALL"
        ).fetchall()
        views = con.execute(
            f"SELECT schema_name, view_name, sql FROM duckdb_views() WHERE {where} AND NOT internal ORDER BY ALL"
        ).fetchall()
        tables = con.execute(
            f"SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE {where} ORDER BY ALL"
        ).fetchall()
        rows = []
        for schema, table, _ in tables:
            name = f'"{schema.replace(chr(34), chr(34) * 2)}"."{table.replace(chr(34), chr(34) * 2)}"'
            rows.append(con.execute(f"SELECT count(*), sum(hash(t)::HUGEINT) FROM {name} AS t").fetchall()[0])
    finally:
        con.close()
    return (columns, constraints, views, tables, rows)


def same_database(a: Path, b: Path) -> bool:
    """Whether the DuckDB files ``a`` and ``b`` hold the same schema and rows, and their column files (the
    SQLite types the dialect fixes read, ``<db>.columns.json``) agree."""
    columns_a, columns_b = (p.with_name(p.stem + COLUMNS_SUFFIX) for p in (Path(a), Path(b)))
    if columns_a.exists() != columns_b.exists():
        return False
    if columns_a.exists() and columns_a.read_bytes() != columns_b.read_bytes():
        return False
    return database_fingerprint(Path(a)) == database_fingerprint(Path(b))
