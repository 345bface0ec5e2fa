"""A case database whose content changed makes its gold version be prepared again, and its models evaluated
again: the oracle, the preflight and the variants are never held against rows the database no longer has."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from eval_support import World, register_gold_set

from nl2sql_cli.exit_codes import EXIT_OK
from nl2sql_cli.main import main

CASES = [
    {
        "id": f"shop-{i}",
        "domain": "shop",
        "category": "aggregation",
        "question": question,
        "database": "shop",
        "expected_sql": sql,
    }
    for i, (question, sql) in enumerate(
        [
            ("How many items are there?", "SELECT count(*) AS n FROM items"),
            ("What do all items cost together?", "SELECT sum(price) AS total FROM items"),
            ("What is the dearest item?", "SELECT name FROM items ORDER BY price DESC, name LIMIT 1"),
        ],
        start=1,
    )
]


def _write_shop(path: Path, rows: list[tuple[int, str, float]]) -> None:
    """(Re)write the shop database with ``rows`` as its items: built beside it, then moved onto it (as an import
    or a build replaces a file). The runs here are in this process: its pooled sandboxes are closed first, as
    before any write in a process that evaluated (``release_sandboxes``), since DuckDB would hand a new
    connection the instance still open on the old file."""
    from nl2sql_pipeline.execution import release_sandboxes

    release_sandboxes()
    built = path.with_name(f"new-{path.name}")
    built.unlink(missing_ok=True)
    with duckdb.connect(str(built)) as con:
        con.execute("CREATE TABLE items (item_id INTEGER PRIMARY KEY, name VARCHAR, price DOUBLE)")
        con.executemany("INSERT INTO items VALUES (?, ?, ?)", rows)
    os.replace(built, path)


def _oracle_values(gold: str) -> dict[str, list]:
    from nl2sql_pipeline.results.frames import oracle_rows_from_frame
    from nl2sql_pipeline.storage import layout
    from nl2sql_pipeline.storage.parquet import read_parquet

    rows = oracle_rows_from_frame(read_parquet(layout.partition_path(layout.ORACLE_RESULTS, gold)))
    return {row.case_id: [list(r) for r in row.result.rows] for row in rows}


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_a_rewritten_database_is_prepared_and_evaluated_again(
    eval_world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.duckdb"
    _write_shop(database, [(1, "pen", 2.0), (2, "desk", 150.0), (3, "ink", 9.5)])
    assert main(["db", "register", "shop", str(database)]) == EXIT_OK
    register_gold_set(eval_world.data, "shop-v1", CASES)
    capsys.readouterr()

    def run(*extra: str) -> tuple[dict, str]:
        code = main(["run", "--gold-set", "shop-v1", "--model", "gold-echo", "--json", *extra])
        out, err = capsys.readouterr()
        assert code == EXIT_OK, err
        return json.loads(out), err

    first, _ = run()
    assert first["runs"][0]["scores"]["semantic_correctness_rate"] == 1.0
    assert _oracle_values("shop-v1")["shop-1"] == [[3]]

    # the same file re-written with other rows (the same names: the prompt's sampled values, so the run's
    # versions, stay the same): the stored oracle no longer holds
    _write_shop(database, [(1, "pen", 2.0), (2, "desk", 40.0), (3, "ink", 9.5), (4, "pen", 80.0)])
    second, err = run()
    scores = second["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == 1.0, scores["outcome_counts"]
    assert second["reused"] == {}
    assert "a case database changed" in second["re_evaluated"]["gold-echo"]
    assert "RE-EVALUATED gold-echo: a case database changed" in err
    assert _oracle_values("shop-v1") == {"shop-1": [[4]], "shop-2": [[131.5]], "shop-3": [["pen"]]}

    third, err = run()  # nothing changed since: the run stands
    assert third["reused"] == {"gold-echo": scores["run_id"]}
    assert "REUSED gold-echo" in err

    # --force evaluates the model again; the gold version is prepared again for the new rows as well
    _write_shop(database, [(1, "pen", 2.0), (2, "desk", 300.0)])
    forced, _ = run("--force")
    assert forced["runs"][0]["scores"]["semantic_correctness_rate"] == 1.0
    assert _oracle_values("shop-v1")["shop-3"] == [["desk"]]
