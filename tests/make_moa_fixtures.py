"""Write MOA's own output to tests/data/moa/ (run by hand: `python tests/make_moa_fixtures.py`).

Runs MOA (the moa.jar bundled by capymoa) on the local JVM through JPype and saves, per
stream configuration, the first instances as a compressed .npz (`X`, `y`, `cli`), plus
`java_random.npz` with java.util.Random draws and StrictMath.log values. Each fixture
stores its MOA CLI string; tests/test_streams_moa.py builds the same stream with this
package and checks that its `moa_cli()` is that string. Each fixture also holds 50
instances after MOA's `restart()` (taken after 7 instances).

"""

from __future__ import annotations

import pathlib

import numpy as np

DATA_DIR = pathlib.Path(__file__).parent / "data" / "moa"

LED_N = 3000  # LED values are bits: stored as uint8, tiny
WAVE_N = 1000  # Waveform values are full doubles: keep the files small


def _led(i, n=10, s=False, d=None):
    cls = "LEDGenerator" if d is None else "LEDGeneratorDrift"
    cli = f"generators.{cls} -i {i} -n {n}" + (" -s" if s else "")
    return cli if d is None else f"{cli} -d {d}"


def _wave(i, noise=False, d=None):
    cls = "WaveformGenerator" if d is None else "WaveformGeneratorDrift"
    cli = f"generators.{cls} -i {i}" + (" -n" if noise else "")
    return cli if d is None else f"{cli} -d {d}"


def _cds(s, d, p, w, r, a=None):
    alpha = "" if a is None else f" -a {a!r}"
    return f"ConceptDriftStream -s ({s}) -d ({d}) -p {p} -w {w}{alpha} -r {r}"


def _norm(s):
    return f"FilteredStream -s ({s}) -f NormalisationFilter"


# (fixture name, MOA CLI, number of instances)
CONFIGS = [
    ("led_default", _led(1), LED_N),
    ("led_neg_seed", _led(-7, n=25), LED_N),
    ("led_noise0_suppressed", _led(42, n=0, s=True), LED_N),
    ("led_noise100", _led(-2147483648, n=100), LED_N),
    ("leddrift_d4", _led(1, d=4), LED_N),
    ("leddrift_d7_neg", _led(-123456, n=10, d=7), LED_N),
    ("leddrift_d0_seed_max", _led(2147483647, n=50, d=0), LED_N),
    ("leddrift_suppressed_d3", _led(5, n=10, s=True, d=3), LED_N),
    ("wave_default", _wave(1), WAVE_N),
    ("wave_noise_neg", _wave(-99, noise=True), WAVE_N),
    ("wavedrift_d0", _wave(1, d=0), WAVE_N),
    ("wavedrift_noise_d10", _wave(1, noise=True, d=10), 1500),
    ("wavedrift_d40_neg", _wave(-2147483648, d=40), WAVE_N),
    ("wavedrift_noise_d21", _wave(77, noise=True, d=21), WAVE_N),
    (
        "cds_led",
        _cds(_led(1, d=0), _led(2, d=4), p=1000, w=500, r=1),
        LED_N,
    ),
    (
        "cds_led_chain_neg",
        _cds(_led(-1, d=4), _cds(_led(-2, d=0), _led(-3, d=4), 800, 100, -9), 700, 200, -8),
        LED_N,
    ),
    ("cds_led_sudden_alpha", _cds(_led(3), _led(4), p=1500, w=1000, r=5, a=90.0), LED_N),
    ("cds_led_alpha45", _cds(_led(3), _led(4, d=2), p=1500, w=1000, r=5, a=45.0), LED_N),
    (
        "cds_wave",
        _cds(_wave(1, True, 10), _wave(2, True, 10), p=500, w=100, r=3),
        WAVE_N,
    ),
    (
        "norm_wave",
        _norm(_wave(-5, noise=True)),
        WAVE_N,
    ),
    (
        "norm_cds_wave_chain",
        _norm(
            _cds(
                _wave(1, True, 10),
                _cds(_wave(2, True, 10), _wave(3, True, 10), 300, 50, 2),
                400,
                100,
                1,
            )
        ),
        WAVE_N,
    ),
    ("norm_led", _norm(_led(1, d=4)), LED_N),
]


def moa_stream(cli: str):
    """A prepared MOA `ExampleStream` for a CLI string (starts the JVM via capymoa)."""
    import capymoa  # noqa: F401  (starts the JVM with moa.jar)
    from moa.options import ClassOption
    from moa.streams import ExampleStream

    stream = ClassOption.cliStringToObject(cli, ExampleStream, None)
    stream.prepareForUse()
    return stream


def moa_instances(stream, n: int):
    """The next `n` instances of a MOA stream as `(X float64 [n, d], y int64 [n])`."""
    rows, labels = [], []
    for _ in range(n):
        inst = stream.nextInstance().getData()
        values = np.array(inst.toDoubleArray(), dtype=np.float64)
        c = inst.classIndex()
        rows.append(np.delete(values, c))
        labels.append(int(inst.classValue()))
    return np.array(rows), np.array(labels, dtype=np.int64)


def paper_clis():
    from streams import paper_stream

    return {name: paper_stream(name, seed=1).moa_cli() for name in ("led", "waveform")}


def java_random_values():
    """Draws of java.util.Random and StrictMath.log values, from the JVM."""
    import capymoa  # noqa: F401
    import jpype

    Random = jpype.JClass("java.util.Random")
    StrictMath = jpype.JClass("java.lang.StrictMath")
    out = {}
    seeds = np.array([1, -1, 0, 42, -2147483648, 2147483647, 123456789], dtype=np.int64)
    bounds = np.array([0, 2, 3, 10, 21, 40, 100, 2**30 + 1, 2**31 - 1], dtype=np.int64)
    out["seeds"], out["bounds"] = seeds, bounds
    n = 500
    ints = np.empty((len(seeds), len(bounds), n), dtype=np.int64)
    doubles = np.empty((len(seeds), n))
    gaussians = np.empty((len(seeds), n + 1))
    for a, seed in enumerate(seeds):
        for b, bound in enumerate(bounds):
            r = Random(int(seed))
            ints[a, b] = [r.nextInt() if bound == 0 else r.nextInt(int(bound)) for _ in range(n)]
        r = Random(int(seed))
        doubles[a] = [r.nextDouble() for _ in range(n)]
        r = Random(int(seed))
        # an odd count leaves a cached Gaussian behind: the test checks the next one too
        gaussians[a] = [r.nextGaussian() for _ in range(n + 1)]
    out["ints"], out["doubles"], out["gaussians"] = ints, doubles, gaussians
    # log inputs: the nextGaussian range (0, 1), where glibc and fdlibm often disagree,
    # and a sweep over every binade, subnormals and special values
    rng = np.random.default_rng(2016)
    unit = rng.random(40_000)
    wide = np.exp2(rng.uniform(-1074, 1024, 9_000)) * rng.uniform(0.5, 1.0, 9_000)
    special = np.array(
        [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e-310, 2.2250738585072014e-308,
         1.0, 2.0, 0.5, 1.0 + 2**-52, 1.0 - 2**-53, np.e, 1.7976931348623157e308]
    )
    near_one = 1.0 + rng.uniform(-2**-19, 2**-19, 984)
    x = np.concatenate([unit, wide, special, near_one])
    out["log_x"] = x
    out["log_y"] = np.array([StrictMath.log(float(v)) for v in x])
    return out


def main():
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for name, cli, n in CONFIGS:
        X, y = moa_instances(moa_stream(cli), n)
        # a restarted MOA stream: iterating a stream of this package again must match it
        stream = moa_stream(cli)
        moa_instances(stream, 7)
        stream.restart()
        X_restart, y_restart = moa_instances(stream, 50)
        is_bits = bool(np.all((X == 0) | (X == 1)))
        np.savez_compressed(
            DATA_DIR / f"{name}.npz",
            X=X.astype(np.uint8) if is_bits else X,
            y=y.astype(np.int8),
            X_restart=X_restart,
            y_restart=y_restart.astype(np.int8),
            cli=np.array(cli),
        )
        print(f"{name}: {X.shape} {cli}")
    for name, cli in paper_clis().items():
        X, y = moa_instances(moa_stream(cli), 1000)
        X = X.astype(np.uint8) if name == "led" else X
        np.savez_compressed(
            DATA_DIR / f"paper_{name}.npz", X=X, y=y.astype(np.int8), cli=np.array(cli)
        )
        print(f"paper_{name}: {X.shape} {cli}")
    np.savez_compressed(DATA_DIR / "java_random.npz", **java_random_values())
    total = sum(p.stat().st_size for p in DATA_DIR.glob("*.npz"))
    print(f"total {total / 1e6:.2f} MB in {DATA_DIR}")


if __name__ == "__main__":
    main()
