"""The `river-dhbm` console script names itself in its usage and help; `python -m evaluation`
keeps its own name; only the chosen subcommand's flags are built."""

from __future__ import annotations

import pathlib
import tomllib

import pytest

from evaluation import cli
from evaluation.__main__ import main

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_script_entry_is_main():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["river-dhbm"] == "evaluation.__main__:main"


@pytest.mark.parametrize("argv", [["--help"], ["bench", "--help"], ["suite", "-h"]])
def test_the_script_names_itself(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    usage = capsys.readouterr().out.splitlines()[0]
    assert usage.startswith(f"usage: river-dhbm {' '.join(a for a in argv[:-1])}".rstrip())
    assert "python -m evaluation" not in usage


def test_python_m_keeps_its_name(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m evaluation [-h] COMMAND")


def test_only_the_chosen_subcommand_gets_its_flags():
    parser = cli.build_parser(["suite", "--quick"], prog="river-dhbm")
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sub.choices["suite"]._option_string_actions.get("--quick") is not None
    assert "--quick" not in sub.choices["reproduce"]._option_string_actions
    assert sub.choices["reproduce"].prog == "river-dhbm reproduce"
    every = next(a for a in cli.build_parser()._actions if a.dest == "command")
    assert all(len(p._actions) > 1 for p in every.choices.values())  # argv None: all built


def test_bad_arguments_stay_one_line(capsys):
    assert main(["nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument COMMAND: invalid choice: 'nope'")
    assert err.count("\n") == 1
