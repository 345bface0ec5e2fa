"""Storage faults are plain: an unreadable stored file, an unusable storage root (issue 20, item 2).

* A stored Parquet file cut in half (or not Parquet at all) is one line naming the file and its partition, exit 3,
  in ``report``, ``compare-runs`` and ``export``; a plain re-run treats it as missing and evaluates that partition
  again, the generation cache serving every answer (the scripted provider is not called again).
* A storage root that is a file, lies under a file, or cannot be written is one line naming it and the cause,
  exit 3, before any work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from eval_support import BASELINES_DAMAGE, World, damage_baselines, query_case, register_gold_set
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_cli import main as cli
from nl2sql_pipeline.errors import StorageRootError, StoredFileError
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import check_readable, read_parquet, readable
from nl2sql_pipeline.storage.root import check_root, check_writable

# one xdist worker runs the module: the evaluated template is built once, and cloned per test
pytestmark = pytest.mark.xdist_group("storage_faults")

GOLD = "faults-v1"
RIGHT = "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"
WRONG = "SELECT COUNT(*) + 1 AS n FROM anime WHERE format = 'TV'"
MODEL = "remote"


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ------------------------------------------------------------------------------------------------ the layer


def test_a_partition_file_says_whose_it_is():
    root = Path("/r/assets")
    latest = layout.partition_path(layout.CASE_VERDICTS, "g-v1", "m-1", root)
    assert layout.stored_partition(latest) == layout.StoredPartition("case_verdicts", "g-v1", "m-1")
    assert layout.stored_partition(layout.run_path(latest, "abc")).describe() == (
        "case_verdicts of gold set 'g-v1', model 'm-1', run abc"
    )
    gold = layout.stored_partition(layout.partition_path(layout.ORACLE_RESULTS, "g-v1", root=root))
    assert gold.describe() == "oracle_results of gold set 'g-v1'"
    assert "nl2sql-eval run --gold-set g-v1`" in gold.fix()
    assert layout.stored_partition(layout.partition_path("sample_database", root=root)).describe() == "sample_database"


def test_a_file_cut_in_half_or_not_parquet_is_a_stored_file_error_naming_it(tmp_path):
    path = layout.partition_path(layout.RUN_SCORES, "g-v1", "m-1", tmp_path)
    path.parent.mkdir(parents=True)
    pd.DataFrame({"a": range(50), "b": ["x"] * 50}).to_parquet(path)
    assert readable(path) and len(read_parquet(path)) == 50
    _cut_in_half(path)
    with pytest.raises(StoredFileError) as cut:
        read_parquet(path)
    assert cut.value.path == str(path) and cut.value.partition == "run_scores of gold set 'g-v1', model 'm-1'"
    assert "magic bytes" in cut.value.cause and "\n" not in str(cut.value)
    assert "nl2sql-eval run --gold-set g-v1 --model m-1" in str(cut.value)
    path.write_text("not parquet", encoding="utf-8")
    with pytest.raises(StoredFileError, match="run_scores of gold set 'g-v1', model 'm-1'"):
        check_readable(path)
    assert not readable(path)
    with pytest.raises(FileNotFoundError):  # a missing file stays missing: callers say what is missing
        read_parquet(path.with_name("model=other.parquet"))


# ------------------------------------------------------------------------------------------------ the root


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("command", [["run", "--model", "gold-echo"], ["db", "build"], ["report", "--model", "x"]])
def test_a_root_under_a_file_is_one_line_exit_3_before_any_work(tmp_path, monkeypatch, capsys, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way", encoding="utf-8")
    root = blocker / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    assert cli.main(command) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line == (
        f"error: storage root {root} is unusable: it lies under {blocker}, which is a file, not a folder; "
        "point NL2SQL_HOME at a folder you can write (or make this one writable)"
    )
    assert blocker.read_text(encoding="utf-8") == "in the way"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing was written anywhere


def test_a_root_that_is_a_file_is_one_line_exit_3(tmp_path, monkeypatch, capsys):
    root = tmp_path / "home"
    root.write_text("", encoding="utf-8")
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert cli.main(["run", "--model", "gold-echo"]) == 3
    assert f"storage root {root} is unusable: it is a file, not a folder" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "dagster_home").exists()


def test_a_dagster_home_under_a_file_is_named(tmp_path, monkeypatch):
    from resources.instance import ensure_instance_home

    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(blocker / "dagster_home"))
    with pytest.raises(StorageRootError, match=f"Dagster home {blocker / 'dagster_home'} is unusable: it lies under"):
        check_writable()
    with pytest.raises(StorageRootError, match="point DAGSTER_HOME at a folder you can write"):
        ensure_instance_home()


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes into a read-only folder: the path-under-a-file cases cover it"
)
def test_a_read_only_root_is_one_line_exit_3(tmp_path, monkeypatch, capsys):
    root = tmp_path / "home"
    (root / "dagster_home").mkdir(parents=True)
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    for folder in (root / "dagster_home", root):
        folder.chmod(0o555)
    try:
        assert cli.main(["run", "--model", "gold-echo"]) == 3
        line = _one_error_line(capsys.readouterr().err)
        assert line.startswith(f"error: storage root {root} is unusable: it is not writable (Permission denied)")
        check_root()  # reading commands may still read a read-only root
    finally:
        for folder in (root, root / "dagster_home"):
            folder.chmod(0o755)


def test_a_refused_write_in_the_root_is_one_line_exit_3_even_as_root(tmp_path, monkeypatch, capsys):
    """What a read-only root does to a non-root user, simulated where chmod does not stop root: the write probe
    is refused."""
    import nl2sql_pipeline.storage.root as storage_root

    root = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(storage_root.tempfile, "mkstemp", refused)
    assert cli.main(["run", "--model", "gold-echo"]) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line == (
        f"error: storage root {root} is unusable: it is not writable (Permission denied); "
        "point NL2SQL_HOME at a folder you can write (or make this one writable)"
    )
    assert sorted(p.name for p in root.iterdir()) == []  # nothing but the (empty) root was made


# ------------------------------------------------------------------------------------------------ stored runs


@pytest.fixture(scope="module")
def provider():
    """A scripted provider answering ``tv-1`` right and ``tv-2`` wrong (the model `remote` behind it)."""

    def answer(index: int, body: dict) -> Reply:
        return Reply.sql(WRONG if "q tv-2" in json.dumps(body) else RIGHT)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_PROVIDER_KEY", "k")
        server = FakeLLMServer(responder=answer).start()
        yield server
        server.stop()


@pytest.fixture(scope="module")
def evaluated_template(world_factory, provider):
    """A world where `remote` was evaluated once on the 2-case gold set (one right, one wrong)."""
    with world_factory() as world:
        register_gold_set(world.data, GOLD, [query_case("tv-1", RIGHT), query_case("tv-2", RIGHT)], description="f")
        models = world.data / "models.yml"
        models.write_text(
            models.read_text(encoding="utf-8").rstrip("\n")
            + f"\n  {MODEL}:\n    kind: litellm\n    model: openai/fake\n    api_base: {provider.api_base}\n"
            "    api_key_env: FAKE_PROVIDER_KEY\n    params: {temperature: 0}\n    retry: {max_retries: 0}\n",
            encoding="utf-8",
        )
        assert cli.main(["run", "--gold-set", GOLD, "--model", MODEL, "--quiet"]) == 0
        assert provider.hits == 2
    return world


@pytest.fixture
def evaluated(evaluated_template, clone_template) -> World:
    """This test's own copy of the evaluated world."""
    return clone_template(evaluated_template)


def _file(asset: str, world: World, model: str | None = MODEL) -> Path:
    path = layout.partition_path(asset, GOLD, model, world.home / "assets")
    assert path.exists()
    return Path(path)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "command",
    [
        ["report", "--model", MODEL, "--gold-set", GOLD],
        ["compare-runs", "--model", MODEL, "--model", MODEL, "--gold-set", GOLD],
        ["export", "--out", "OUT"],
        ["export", "--duckdb", "OUT/views.duckdb"],
    ],
)
def test_a_verdicts_file_cut_in_half_is_named_with_its_partition_exit_3(evaluated, tmp_path, capsys, command):
    path = _file(layout.CASE_VERDICTS, evaluated)
    _cut_in_half(path)
    assert cli.main([arg.replace("OUT", str(tmp_path / "out")) for arg in command]) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(
        f"error: stored file {path} (case_verdicts of gold set '{GOLD}', model '{MODEL}') is unreadable: "
    )
    assert "magic bytes" in line and f"nl2sql-eval run --gold-set {GOLD} --model {MODEL}" in line


@pytest.mark.e2e
def test_a_scores_file_that_is_not_parquet_is_named(evaluated, capsys):
    path = _file(layout.RUN_SCORES, evaluated)
    path.write_text("hello", encoding="utf-8")
    assert cli.main(["report", "--model", MODEL, "--gold-set", GOLD]) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert f"stored file {path} (run_scores of gold set '{GOLD}', model '{MODEL}') is unreadable" in line


@pytest.mark.e2e
def test_a_plain_rerun_evaluates_an_unreadable_partition_again_from_the_cache(evaluated, provider, capsys):
    capsys.readouterr()
    path = _file(layout.CASE_VERDICTS, evaluated)
    _cut_in_half(path)
    hits = provider.hits
    assert cli.main(["run", "--gold-set", GOLD, "--model", MODEL, "--json", "--quiet"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert provider.hits == hits  # nothing paid twice: the generation cache served both answers
    assert result["reused"] == {}
    assert result["re_evaluated"][MODEL].startswith(f"stored file {path} (case_verdicts of gold set '{GOLD}'")
    assert f"RE-EVALUATED {MODEL}: stored file {path}" in captured.err and "Traceback" not in captured.err
    scores = result["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == 0.5 and scores["query_count"] == 2
    assert readable(path)
    assert cli.main(["report", "--model", MODEL, "--gold-set", GOLD]) == 0
    capsys.readouterr()
    # and now nothing changed: the next plain run reuses the recovered run
    assert cli.main(["run", "--gold-set", GOLD, "--model", MODEL, "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["reused"] == {MODEL: scores["run_id"]}


@pytest.mark.e2e
def test_a_plain_rerun_prepares_a_gold_version_whose_oracle_file_is_cut_again(evaluated, provider, tmp_path, capsys):
    oracle = _file(layout.ORACLE_RESULTS, evaluated, model=None)
    _cut_in_half(oracle)
    page = tmp_path / "report.html"
    assert cli.main(["report", "--model", MODEL, "--gold-set", GOLD, "--html", str(page)]) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert f"stored file {oracle} (oracle_results of gold set '{GOLD}') is unreadable" in line
    assert f"`nl2sql-eval run --gold-set {GOLD}` prepares the gold version again" in line
    hits = provider.hits
    assert cli.main(["run", "--gold-set", GOLD, "--model", MODEL, "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert provider.hits == hits
    assert list(result["reused"]) == [MODEL]  # the model's own partition was readable: its run stands
    assert readable(oracle)
    assert cli.main(["report", "--model", MODEL, "--gold-set", GOLD, "--html", str(page)]) == 0
    assert page.exists()


# ------------------------------------------------------------------------------------------------ the baselines file


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (lock files aside) with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file() and not path.name.endswith(".lock")
    }


@pytest.mark.e2e
@pytest.mark.parametrize("how", BASELINES_DAMAGE)
def test_a_damaged_baselines_file_is_one_line_exit_3_and_run_writes_nothing(evaluated, capsys, how):
    import duckdb

    db = evaluated.home / "baselines.duckdb"
    direct = duckdb.connect(str(db), read_only=True)
    try:
        (run_id,) = direct.execute("SELECT run_id FROM baseline_runs").fetchone()
    finally:
        direct.close()
    damage_baselines(db, how)
    capsys.readouterr()
    before = _tree(evaluated.home)
    for command in (
        ["run", "--gold-set", GOLD, "--model", MODEL, "--quiet"],
        ["run", "--gold-set", GOLD, "--model", MODEL, "--quiet", "--force"],
        ["compare-runs", "--list"],
        ["report", str(run_id)],
    ):
        assert cli.main(command) == 3, command
        line = _one_error_line(capsys.readouterr().err)
        assert line.startswith(f"error: stored file {db} (the baselines file of every recorded run) is unreadable: ")
        assert f"move it aside (mv {db} {db}.damaged)" in line
    assert _tree(evaluated.home) == before, "run stopped before writing anything"


# ------------------------------------------------------------------------------------------------ the Dagster files


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("parts", "how", "whose"),
    [
        (("history", "runs.db"), "random bytes", "run storage"),
        (("history", "runs", "index.db"), "random bytes", "event log index"),
        (("history", "runs", "index.db"), "cut short", "event log index"),
        (("schedules", "schedules.db"), "a folder", "schedule storage"),
    ],
)
def test_a_damaged_dagster_sqlite_file_is_one_line_naming_it_exit_3(evaluated, capsys, parts, how, whose):
    path = evaluated.dagster_home.joinpath(*parts)
    for sidecar in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        sidecar.unlink(missing_ok=True)  # what a checkpointed instance leaves: the file alone
    if how == "random bytes":
        path.write_bytes(os.urandom(5000))
    elif how == "cut short":
        size = path.stat().st_size
        assert size > 8192
        with path.open("r+b") as handle:
            handle.truncate(size // 2)
    else:
        path.unlink()
        path.mkdir()
    capsys.readouterr()
    assert cli.main(["run", "--gold-set", GOLD, "--model", MODEL, "--force", "--quiet"]) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: stored file {path} (the Dagster instance's {whose}) is unreadable: ")
    assert "move it aside together with its -wal and -shm files: Dagster starts a new one" in line


# ------------------------------------------------------------------------------------------------ unusable paths

READING_COMMANDS = [["report", "--model", "gold-echo"], ["compare-runs", "--list"], ["export", "--out", "OUT"]]
UNCREATABLE = Path("/proc/nl2sql-no-such-root")  # procfs refuses a new folder, even to root


def _cli(command: list[str], tmp_path: Path) -> int:
    return cli.main([arg.replace("OUT", str(tmp_path / "out")) for arg in command])


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc (a folder nothing can be made in)")
@pytest.mark.parametrize("command", READING_COMMANDS)
def test_a_root_that_cannot_be_created_is_one_line_exit_3_for_reading_commands(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setenv("NL2SQL_HOME", str(UNCREATABLE))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert _cli(command, tmp_path) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: storage root {UNCREATABLE} is unusable: it does not exist and cannot be created")
    assert "point NL2SQL_HOME at a folder you can write" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("command", "code", "said"),
    [
        (["report", "--model", "gold-echo"], 2, "no stored results for model 'gold-echo'"),
        (["report", "abc123"], 2, "no run 'abc123' in the baselines file"),
        (["compare-runs", "--list"], 0, "no recorded runs"),
        (["export", "--out", "OUT"], 2, "no stored verdicts under"),
    ],
)
def test_reading_commands_do_not_create_a_missing_root(tmp_path, monkeypatch, capsys, command, code, said):
    root = tmp_path / "not-yet" / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    assert _cli(command, tmp_path) == code
    captured = capsys.readouterr()
    assert said in captured.out + captured.err and "Traceback" not in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing was created"


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc (a folder nothing can be made in)")
@pytest.mark.parametrize("url", [str(UNCREATABLE), UNCREATABLE.as_uri(), "FILE/assets", "FILE"])
@pytest.mark.parametrize("command", [["run", "--model", "gold-echo", "--quiet"], ["report", "--model", "gold-echo"]])
def test_an_unusable_assets_location_is_one_line_exit_3(tmp_path, monkeypatch, capsys, url, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way", encoding="utf-8")
    url = url.replace("FILE", str(blocker))
    where = Path(url.removeprefix("file://"))
    root = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    monkeypatch.setenv("NL2SQL_ASSETS_URL", url)
    assert cli.main(command) == 3
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: assets location (NL2SQL_ASSETS_URL) {where} is unusable: ")
    assert line.endswith("point NL2SQL_ASSETS_URL at a folder you can write (or unset it: <storage root>/assets)")
    assert not (root / "assets").exists()


@pytest.mark.parametrize(
    ("command", "named", "cause"),
    [
        (
            ["report", "--model", "gold-echo", "--html", "PROC/x.html"],
            "--html PROC/x.html",
            "PROC_PARENT is not writable",
        ),
        (
            ["report", "--model", "gold-echo", "--html", "TEXT/x.html"],
            "--html TEXT/x.html",
            "TEXT is a file, not a folder",
        ),
        (["report", "--model", "gold-echo", "--html", "DIR"], "--html DIR", "it is a folder"),
        (
            ["compare-runs", "--model", "a", "--model", "b", "--html", "PROC/x.html"],
            "--html PROC/x.html",
            "not writable",
        ),
        (["export", "--out", "PROC/xx"], "--out PROC/xx", "PROC_PARENT is not writable"),
        (["export", "--out", "TEXT"], "--out TEXT", "it is a file, not a folder"),
        (["export", "--duckdb", "PROC/x.duckdb"], "--duckdb PROC/x.duckdb", "PROC_PARENT is not writable"),
        (["export", "--duckdb", "TEXT"], "--duckdb TEXT", "it is not a DuckDB database"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_one_line_exit_2_before_any_work(
    tmp_path, monkeypatch, capsys, command, named, cause
):
    if not Path("/proc/self").exists() and any("PROC" in arg for arg in command):
        pytest.skip("needs Linux's /proc (a folder nothing can be made in)")
    text = tmp_path / "notes.txt"
    text.write_text("keep me", encoding="utf-8")
    (tmp_path / "a-folder").mkdir()
    values = {"PROC_PARENT": str(UNCREATABLE.parent), "PROC": str(UNCREATABLE), "TEXT": str(text)}
    values["DIR"] = str(tmp_path / "a-folder")

    def filled(arg: str) -> str:
        for key, value in values.items():
            arg = arg.replace(key, value)
        return arg

    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster_home"))
    assert cli.main([filled(arg) for arg in command]) == 2
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert line.startswith(f"error: {filled(named)} cannot be written: ") and filled(cause) in line
    assert captured.out == "", "checked before any work"
    assert text.read_text(encoding="utf-8") == "keep me"
