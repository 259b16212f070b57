"""`python -m evaluation ...` and the `river-dhbm` console script (see `evaluation.cli`)."""

from __future__ import annotations

import sys

from evaluation import cli

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """The `river-dhbm` console script: the command line under its own name."""
    return cli.main(argv, prog="river-dhbm")


if __name__ == "__main__":
    sys.exit(cli.main(prog="python -m evaluation"))
