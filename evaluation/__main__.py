"""`python -m evaluation ...` (see `evaluation.cli`); the `river-dhbm` script calls `main`."""

from __future__ import annotations

import sys

from evaluation.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
