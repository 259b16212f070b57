"""`python -m streams`: the head of the paper's drifting LED stream and its MOA command line."""

from __future__ import annotations

import itertools

from streams.presets import paper_stream


def main(n: int = 10, seed: int = 1) -> None:
    stream = paper_stream("led", seed=seed)
    print(f"First {n} instances of paper_stream('led', seed={seed}) (24 attributes, class last):")
    for x, y in itertools.islice(stream, n):
        print(" ".join(str(int(v)) for v in x.values()), "|", y)
    print("\nThe same stream in MOA (moa.jar, e.g. the one bundled by capymoa):")
    print(stream.moa_cli())


if __name__ == "__main__":
    main()
