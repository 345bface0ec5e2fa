"""The ``nl2sql-eval`` process ends without the interpreter's teardown (``nl2sql_cli.main.console``): its exit
code, its whole output and its atexit hooks are those of an ordinary exit."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from nl2sql_cli.main import main


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nl2sql_cli.main", *args], capture_output=True, text=True)


def test_the_process_keeps_its_exit_code_and_its_whole_output(capsys) -> None:
    assert main(["models", "list", "--json"]) == 0
    in_process = json.loads(capsys.readouterr().out)

    done = _cli("models", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == in_process, "stdout flushed to the last byte before the process ends"

    bad = _cli("run", "--gold-set", "no-such-set", "--model", "gold-echo")
    assert bad.returncode == 2
    assert "unknown gold set 'no-such-set'" in bad.stderr


def test_atexit_hooks_still_run() -> None:
    code = (
        "import atexit, sys\n"
        "from nl2sql_cli import main as cli\n"
        "atexit.register(lambda: print('hook ran', file=sys.stderr))\n"
        "sys.argv = ['nl2sql-eval', 'models', 'list', '--json']\n"
        "cli.console()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0
    assert "hook ran" in done.stderr and json.loads(done.stdout)


def _with_reader_gone(*args: str) -> subprocess.CompletedProcess[str]:
    """The command with its standard output a pipe whose reader has already left (``... | head -1`` once head
    is done): every write to it fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "nl2sql_cli.main", *args], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "command",
    [("compare-runs", "--list"), ("models", "list"), ("report",)],  # report alone: its error on stdout, exit 2
)
def test_a_reader_that_left_is_no_traceback_and_the_exit_code_stands(isolated_home, command) -> None:
    done = _with_reader_gone(*command)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == _cli(*command).returncode  # the command's own code (0 listed, 2 bad arguments)


def test_the_commands_keep_running_after_their_reader_left(monkeypatch, capsys) -> None:
    class GonePipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", GonePipe())
    assert main(["models", "list", "--json"]) == 0
    assert main(["run", "--gold-set", "no-such-set", "--model", "gold-echo"]) == 2
