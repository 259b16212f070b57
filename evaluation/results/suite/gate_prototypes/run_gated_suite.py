import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import gated  # noqa
from evaluation import registry, suite
registry.MODELS["gdhda"] = ("GatedDHDA", {}); registry.MODELS["gdhbm"] = ("GatedDHBM", {"estimator": "mf"})
streams, ratios, models, seeds, out = sys.argv[1].split(","), [float(r) for r in sys.argv[2].split(",")], suite.model_names(sys.argv[3]), range(1, int(sys.argv[4]) + 1), sys.argv[5]
runs = suite.run(streams, ratios, models, list(seeds), instances=10000, mnist="/work/shared/data/mnist", jobs=1, progress=False)
runs.to_csv(out, index=False)
import pandas as pd
p = runs.pivot_table(index=["stream", "label_ratio", "seed"], columns="model", values="accuracy")
base = [m for m in models if m.endswith("/labeled-only")][0]
for m in models:
    if m == base: continue
    d = (p[m] - p[base]).groupby(["label_ratio", "stream"])
    print(m, "minus", base)
    print((d.mean().round(3).astype(str) + " ± " + d.sem().round(3).astype(str)).unstack(0).to_string())
