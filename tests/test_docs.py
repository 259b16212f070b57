"""The documentation builds without a warning: a broken docstring reference, a missing page
or a dead link fails here (`mkdocs build --strict`, as `pip install -e ".[docs]"` runs it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="the docs extra is not installed")
pytest.importorskip("mkdocstrings", reason="the docs extra is not installed")


def test_docs_build_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text()
    assert "learn_arrays" in api  # the reference is generated from the docstrings
    dhbm = (tmp_path / "models" / "dhbm" / "index.html").read_text()
    assert "hidden_sizes" in dhbm and "Notes" in dhbm
    assert (tmp_path / "img" / "figure3-paper.png").stat().st_size > 0
    tracks = (tmp_path / "tracks" / "index.html").read_text()  # the tables, included
    assert "ImageSegments" in tracks and "--8&lt;--" not in tracks
    unresolved = [str(p.relative_to(tmp_path).parent) for p in tmp_path.rglob("*.html")
                  if "--8&lt;--" in p.read_text()]
    assert not unresolved, f"pages showing an inclusion instead of its table: {unresolved}"
    results = (tmp_path / "results" / "index.html").read_text()  # built from the suite's CSVs
    assert "0.658 ± 0.005" in results and "suite-tables" not in results
    import inspect

    import river_dhbm

    overview = (tmp_path / "models" / "index.html").read_text()  # today's defaults, read
    default = inspect.signature(river_dhbm.DHBM).parameters["hidden_sizes"].default
    assert f"<code>{default!r}</code>" in overview and "model-defaults" not in overview


def test_readme_keeps_the_two_set_up_commands_first():
    # the README's first two code blocks are the main job and the tests, in that order
    text = (ROOT / "README.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in text.split("```")[1::2]]
    assert blocks[0].strip() == "pip install -e . && python -m evaluation suite --quick --jobs 2"
    assert blocks[1].strip() == 'pip install -e ".[test]" && pytest'
    assert len(text.splitlines()) <= 150


STALE_NOTE = '!!! warning "Stale results"'


def _included_results():
    """(page, results directory) for every results file a docs page includes (`--8<--`)."""
    import re

    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        for path in re.findall(r'--8<-- "(evaluation/results/[^"]+)"', text):
            yield page, (ROOT / path).parent
        for directories in re.findall(r"<!-- suite-tables: ([^>]+?) -->", text):
            yield from ((page, ROOT / d) for d in directories.split())


@pytest.fixture(scope="module")
def behaviour():
    """Today's `behaviour_hash`, computed once for the module (a few seconds)."""
    from evaluation.runs.files import behaviour_hash

    return behaviour_hash()


def test_a_page_showing_results_of_older_code_says_so(behaviour):
    """A results directory records the hash of what the models and streams did when it ran
    (`settings.json`: `behaviour`); a page that includes its table while they behave otherwise
    today (or that predates the record) carries the stale note, and only then."""
    import json

    pages = {}
    for page, directory in _included_results():
        settings = directory / "settings.json"
        recorded = (json.loads(settings.read_text()).get("behaviour") if settings.exists()
                    else None)
        pages.setdefault(page, []).append(recorded == behaviour)
    assert pages  # the pages do include their tables
    for page, fresh in pages.items():
        marked = STALE_NOTE in page.read_text()
        assert marked == (not all(fresh)), (
            f"{page.relative_to(ROOT)}: " + ("remove the stale note: its results are today's"
                                             if marked else "its results predate today's "
                                             f"models or streams: re-run them or add {STALE_NOTE}"))


def test_results_record_the_code_and_behaviour_they_ran_with(tmp_path, behaviour):
    import json

    import pandas as pd

    from evaluation.runs.files import result_jobs, sources_hash

    for path, write in result_jobs(tmp_path, "x", pd.DataFrame({"a": [1]}), "| a |", {"k": 1}):
        write(path)
    record = json.loads((tmp_path / "settings.json").read_text())
    assert record == {"k": 1, "sources": sources_hash(), "behaviour": behaviour}


def test_the_sources_hash_sees_code_not_documentation():
    """A reworded docstring or comment leaves the recorded sources as they were (the tables
    stay today's); a changed line of code does not."""
    from evaluation.runs.files import _code

    base = 'def f(x):\n    """Twice x."""\n    return 2 * x  # doubled\n'
    assert _code(base) == _code(base.replace("Twice x.", "Two times x.").replace("# doubled", ""))
    assert _code(base) != _code(base.replace("2 * x", "3 * x"))


#: The README's headline: its rows' registry models and its columns' streams, in order.
HEADLINE_MODELS = {
    "`DHBM`": "dhbm-mf", "`DHBM`, labeled-only": "dhbm-mf/labeled-only", "`DHDA`": "dhda",
    "`DHDA`, labeled-only": "dhda/labeled-only", "`SBEN`": "sben", "`HSDA`": "hsda",
    "`PseudoLabelMLP`": "pl-mlp", "River `LogisticRegression`": "LogisticRegression",
    "River `GaussianNB`": "GaussianNB", "River `HoeffdingTree`": "HoeffdingTree",
    "River `KNN`": "KNN",
}
HEADLINE_STREAMS = {"MNIST": "mnist", "digits": "digits", "LED": "led", "Waveform": "waveform",
                    "Phishing": "phishing", "Bananas": "bananas", "SEA": "sea",
                    "clusters": "clusters", "across": "clusters-across"}


def test_the_readmes_headline_is_the_suites_results():
    """GitHub shows the README without the docs' inclusions, so its tables are typed: every
    cell must be the mean of the runs of the three commands docs/results.md gives."""
    import pandas as pd

    results = ROOT / "evaluation" / "results"
    runs = pd.concat(pd.read_csv(results / name / "suite.csv")
                     for name in ("suite-safety", "suite-peers", "suite-safety-mnist"))
    mean = runs.dropna(subset=["accuracy"]).groupby(
        ["model", "stream", "label_ratio"]).accuracy.mean()
    text = (ROOT / "README.md").read_text()
    checked = 0
    for ratio in (0.1, 0.01):
        table = text.split(f"**{ratio * 100:g} % labels**", 1)[1].strip().split("\n\n", 1)[0]
        header, _, *rows = table.splitlines()
        streams = [HEADLINE_STREAMS[c.strip()] for c in header.strip("|").split("|")[1:]]
        for row in rows:
            label, *cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
            for stream, cell in zip(streams, cells, strict=True):
                expected = mean.get((HEADLINE_MODELS[label], stream, ratio))
                wanted = "" if expected is None else f"{expected:.3f}"
                assert cell == wanted, (label, stream, ratio)
                checked += bool(cell)
    assert checked > 150


def test_the_readmes_figure_3_is_the_reproduce_runs_summary():
    """The README's Figure 3 figures are typed too: each must be the final faded error (mean
    ± standard error, %) that `reproduce` wrote to evaluation/results/paper/summary.csv."""
    import pandas as pd

    summary = pd.read_csv(ROOT / "evaluation" / "results" / "paper" / "summary.csv")
    final = {(r.model, r.stream): (f"{100 * r.final_faded_error:.2f}",
                                   f"{100 * r.final_faded_error_se:.2f}")
             for r in summary.itertuples()}
    text = " ".join((ROOT / "README.md").read_text().split())

    def both(model, with_se):
        (w, w_se), (led, led_se) = final[model, "waveform"], final[model, "led"]
        return f"{w} ± {w_se} / {led} ± {led_se} %" if with_se else f"{w} / {led} %"

    assert set(summary.trials) == {10} and "Final faded error, 10 trials" in text
    (w, w_se), (led, led_se) = final["dhbm-mf", "waveform"], final["dhbm-mf", "led"]
    assert f"DHBM-MF {w} ± {w_se} % (Waveform) and {led} ± {led_se} % (LED)" in text
    assert f"DHDA {both('dhda', True)}" in text
    assert f"pseudo-labeled MLP ({both('pl-mlp', False)})" in text
    assert f"does not learn ({both('dhbm-sap', False)})" in text


def test_the_mnist_page_includes_both_of_its_tables():
    """The page's tables are its point: both files `mnist.table` writes are included."""
    text = (ROOT / "docs" / "mnist.md").read_text()
    for table in sorted((ROOT / "evaluation" / "results" / "mnist-tables").glob("*.md")):
        assert f'--8<-- "evaluation/results/mnist-tables/{table.name}"' in text, table.name


def _shown_commands():
    """`(page, argv)` of every `python -m evaluation ...` line in the README's and the docs'
    code blocks that writes under `evaluation/results/` (continuation lines joined)."""
    import re
    import shlex

    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                line = line.split(" #")[0].strip()
                if line.startswith("python -m evaluation") and "--out evaluation/results/" in line:
                    yield page, shlex.split(line)


def test_a_shown_command_is_the_one_its_results_record():
    """Where a results directory records the command line that wrote it, the docs show that
    command, every flag included (in any order): the command reproduces what the page shows."""
    import collections
    import json
    import shlex

    checked = 0
    for page, argv in _shown_commands():
        out = ROOT / argv[argv.index("--out") + 1]
        settings = (out.parent if out.suffix else out) / "settings.json"  # bench: a report file
        assert settings.exists(), (page.name, str(out))
        record = json.loads(settings.read_text())
        recorded = next((c for c in (record.get("command_line"), record.get("command"))
                         if isinstance(c, str) and c.startswith("python -m evaluation")), None)
        if recorded is None:  # MNIST's and `run`'s records keep their settings, not a line
            continue
        shown, kept = collections.Counter(argv), collections.Counter(shlex.split(recorded))
        assert shown == kept, (page.name, str(out), "shown only:", list((shown - kept).elements()),
                               "recorded only:", list((kept - shown).elements()))
        checked += 1
    assert checked >= 15  # the suite's, the tracks', the drift page's and the benchmarks' runs
