"""Value parsers for the command line's flags (argparse `type=` functions), shared by every
subcommand: each raises `argparse.ArgumentTypeError` with what is wrong."""

from __future__ import annotations

import argparse
import tomllib

__all__ = ["EPILOG", "HelpFormatter", "OneLineParser", "assignment", "floats", "names",
           "non_negative_int", "positive_int", "ratio"]

#: The end of every command's help: where the words it uses are explained.
EPILOG = ("Words used here (prequential, faded error, label ratio, ablation, peer, cell, seed, "
          "...): docs/glossary.md. Seeds: in every command --seeds N runs N repetitions "
          "k = 0..N-1, repetition k seeded from --seed (default 0) and k (glossary: Seed).")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help, every option's default shown: the value (`(default: 1)`) unless the
    help already names it; for an option left unset by default (None), `unset`, what the
    command then does (e.g. "the config's value"); for a required option, that it is."""

    def __init__(self, prog, unset: str = "none", **kwargs):
        super().__init__(prog, **kwargs)
        self.unset = unset

    def _get_help_string(self, action):
        text = action.help or ""
        if action.required and action.option_strings:
            return text if "required" in text else f"{text} (required)"
        if (action.default is argparse.SUPPRESS or not action.option_strings
                or action.nargs == 0 or "(default" in text or "default:" in text
                or "(config:" in text):
            return text  # a flag (off by default), a positional, or a default already named
        if action.default is None or action.default == []:
            return f"{text} (default: {self.unset})"
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, `error: ...`, exit status 2 (a module's own
    command line; `python -m evaluation` raises instead, `cli.BadArguments`)."""

    def error(self, message):
        self.exit(2, f"error: {message}\n")


def _int(text: str, low: int, wanted: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An int >= 1 (`1_000_000` allowed)."""
    return _int(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An int >= 0."""
    return _int(text, 0, "0 or a positive integer")


def ratio(text: str) -> float:
    """A number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def names(text: str) -> list[str]:
    """Comma-separated names, blanks dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def floats(text: str) -> list[float]:
    """Comma-separated numbers."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def assignment(text: str) -> tuple[str, object]:
    """`key=value` with a TOML value (`0.05`, `[24, 24]`, `"sap"`); bare words are strings."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value
    return key.strip(), parsed
