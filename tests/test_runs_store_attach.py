"""``runs.store`` reads and writes the baselines file through one in-memory DuckDB of the process (ATTACH, then
DETACH): the file is free for another process between two calls, and what is written is the same file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from eval_support import BASELINES_DAMAGE, damage_baselines

from nl2sql_pipeline.errors import StoredFileError
from nl2sql_pipeline.runs import RunVersions, list_runs, record_run, store

VERSIONS = RunVersions("m1", "g1", "s1", "p1", "c1", "h1")


def test_the_file_is_detached_after_each_call_and_readable_by_a_connection_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "baselines.duckdb"
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={"query_count": 3})
    assert [r["run_id"] for r in list_runs(db, "gold", "m")] == ["r1"]
    # another process may open it for writing now (DuckDB: one writer or several readers, across processes)
    script = (
        "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
        "print(con.execute('SELECT run_id, query_count FROM latest_runs').fetchall()); "
        'con.execute("UPDATE baseline_runs SET query_count = 4"); con.close()'
    )
    done = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "('r1', 3)" in done.stdout
    assert list_runs(db, "gold", "m")[0]["query_count"] == 4, "a write of another process is read back"
    attached = {
        row[0] for row in store._memory_connection().execute("SELECT database_name FROM duckdb_databases()").fetchall()
    }
    assert store._ATTACHED not in attached
    direct = duckdb.connect(str(db), read_only=True)
    try:
        assert direct.execute("SELECT count(*) FROM baseline_runs").fetchone() == (1,)
    finally:
        direct.close()


def test_a_failed_query_leaves_nothing_attached(tmp_path: Path) -> None:
    db = tmp_path / "baselines.duckdb"
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={})
    try:
        with store._attached(db, read_only=True) as con:
            con.execute("SELECT no_such_column FROM baseline_runs")
    except duckdb.Error:
        pass
    attached = {
        row[0] for row in store._memory_connection().execute("SELECT database_name FROM duckdb_databases()").fetchall()
    }
    assert store._ATTACHED not in attached
    assert [r["run_id"] for r in list_runs(db)] == ["r1"]


@pytest.mark.parametrize("how", BASELINES_DAMAGE)
def test_a_damaged_file_is_a_stored_file_error_naming_it_and_the_fix(tmp_path: Path, how: str) -> None:
    db = tmp_path / "baselines.duckdb"
    for index in range(40):  # past the first 20,000 bytes
        record_run(db, run_id=f"r{index}", gold_set="gold", model="m", versions=VERSIONS, scores={"query_count": 3})
    damage_baselines(db, how)
    damaged = db.read_bytes()
    for call in (
        lambda: list_runs(db),
        lambda: store.check_baselines(db),
        lambda: record_run(db, run_id="new", gold_set="gold", model="m", versions=VERSIONS, scores={}),
    ):
        with pytest.raises(StoredFileError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"stored file {db} (the baselines file of every recorded run) is unreadable: ")
        assert f"move it aside (mv {db} {db}.damaged)" in message and "\n" not in message
    assert db.read_bytes() == damaged, "a damaged file is never written over"
    attached = {
        row[0] for row in store._memory_connection().execute("SELECT database_name FROM duckdb_databases()").fetchall()
    }
    assert store._ATTACHED not in attached
    db.rename(db.with_name("baselines.duckdb.damaged"))  # the fix it names: the runs are recorded anew
    record_run(db, run_id="new", gold_set="gold", model="m", versions=VERSIONS, scores={})
    assert [r["run_id"] for r in list_runs(db)] == ["new"]


def test_an_empty_duckdb_file_has_no_runs_and_gets_its_tables_when_written(tmp_path: Path) -> None:
    db = tmp_path / "baselines.duckdb"
    duckdb.connect(str(db)).close()
    assert list_runs(db) == []
    store.check_baselines(db)
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={})
    assert [r["run_id"] for r in list_runs(db)] == ["r1"]
