"""The ``nl2sql-eval`` process ends without the interpreter's teardown (``nl2sql_cli.main.console``): its exit
code, its whole output and its atexit hooks are those of an ordinary exit."""

from __future__ import annotations

import json
import subprocess
import sys

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
