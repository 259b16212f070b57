"""`python -m streams`: the head of one of the paper's drifting streams and its MOA command line."""

from __future__ import annotations

import argparse
import itertools
import sys

from streams.presets import paper_stream


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as every command of the project
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"Invalid n ({text!r}). Must be an int >= 1")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m streams",
        description="Print the first instances of a drifting stream of the paper's online "
        "experiment (streams.paper_stream), then the MOA command line that gives the same "
        "instances.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--stream", choices=("led", "waveform"), default="led",
                        help="the stream")
    parser.add_argument("--n", type=_count, default=10, help="instances to print")
    parser.add_argument("--seed", type=int, default=1, help="the stream's seed")
    args = parser.parse_args(argv)
    stream = paper_stream(args.stream, seed=args.seed)
    print(f"First {args.n} instances of paper_stream({args.stream!r}, seed={args.seed}) "
          f"({stream.n_features} attributes, class last):")
    for x, y in itertools.islice(stream, args.n):
        print(" ".join(f"{v:g}" for v in x.values()), "|", y)
    print("\nThe same stream in MOA (moa.jar, e.g. the one bundled by capymoa):")
    print(stream.moa_cli())
    return 0


if __name__ == "__main__":
    sys.exit(main())
