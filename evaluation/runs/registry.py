"""Names of streams and models -> constructors (lazy imports), and the experiment configs."""

from __future__ import annotations

import importlib
import inspect
import numbers
import tomllib
from importlib import resources
from pathlib import Path

__all__ = [
    "ABLATION_SUFFIX",
    "MODELS",
    "PRESETS",
    "STREAMS",
    "config_path",
    "load_config",
    "make_model",
    "make_stream",
    "masked_stream",
    "split_ablation",
]

#: Stream name -> what it is. `led` and `waveform` are the drifting streams of the paper.
STREAMS = {
    "led": "the paper's drifting LED stream (24 attributes, 10 classes)",
    "waveform": "the paper's drifting, normalised Waveform stream (40 attributes, 3 classes)",
    "led-stationary": "MOA's LEDGeneratorDrift -n 10 -d 4: 24 attributes, no drift over time",
    "waveform-stationary": "MOA's WaveformGeneratorDrift -n -d 10, normalised: no drift over time",
}

#: Model name -> (class in `river_dhbm`, fixed constructor arguments).
MODELS = {
    "dhbm-mf": ("DHBM", {"estimator": "mf"}),
    "dhbm-sap": ("DHBM", {"estimator": "sap"}),
    "dhda": ("DHDA", {}),
    "pl-mlp": ("PseudoLabelMLP", {}),
    "sben": ("SBEN", {}),
    "hsda": ("HSDA", {}),
}

RIVER_PREFIX = "river:"
MOA_PREFIX = "moa:"  # MOA's learners through capymoa (`evaluation.runs.moa_peers`)

#: `<model>/labeled-only`: the same model with every learning from unlabeled rows turned off
#: (constructor parameter `learn_unlabeled=False`), the ablation that measures their gain.
ABLATION_SUFFIX = "/labeled-only"
ABLATION_PARAMS = {"learn_unlabeled": False}


def split_ablation(name: str) -> tuple[str, bool]:
    """`("dhbm-mf", True)` for `"dhbm-mf/labeled-only"`, `(name, False)` otherwise."""
    if name.endswith(ABLATION_SUFFIX):
        return name[: -len(ABLATION_SUFFIX)], True
    return name, False

#: Where this project's models take their settings from: the paper's literal online settings
#: or the class defaults (the settings that learn best).
PRESETS = ("paper", "default")


def check_preset(preset: str) -> str:
    if preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}. Known presets: {', '.join(PRESETS)}")
    return preset


def check_stream_name(name: str) -> str:
    if name not in STREAMS:
        raise ValueError(f"Unknown stream {name!r}. Known streams: {', '.join(STREAMS)}")
    return name


def make_stream(name: str, seed: int):
    """The unmasked stream `name`, seeded (a Java int, MOA's `-i` option)."""
    check_stream_name(name)
    import streams

    if name in ("led", "waveform"):
        return streams.paper_stream(name, seed)
    if name == "led-stationary":  # the stationary streams the models' learning targets use
        return streams.LEDDrift(seed=seed, noise_percentage=10, n_drift_features=4)
    return streams.NormalisationFilter(
        streams.WaveformDrift(seed=seed, has_noise=True, n_drift_features=10)
    )


def masked_stream(
    name: str, seed: int, label_ratio: float, label_batch: int | None, mask_seed: int,
    delay: int = 0, warm_up: int = 0,
):
    """The stream `name` behind a `streams.LabelMask`."""
    import streams

    return streams.LabelMask(
        make_stream(name, seed), label_ratio=label_ratio, batch_size=label_batch, seed=mask_seed,
        delay=delay, warm_up=warm_up,
    )


def _river_class(name: str):
    dotted = name[len(RIVER_PREFIX):]
    module_name, _, class_name = dotted.rpartition(".")
    if not module_name or not class_name:
        raise ValueError(
            f"Invalid model {name!r}. Expected river:<module>.<Class>, "
            "e.g. river:tree.HoeffdingTreeClassifier"
        )
    try:
        module = importlib.import_module(f"river.{module_name}")
        cls = getattr(module, class_name)
    except (ImportError, AttributeError):
        raise ValueError(f"Unknown model {name!r}: river.{dotted} does not exist") from None
    from river import base

    if not (inspect.isclass(cls) and issubclass(cls, base.Classifier)):
        raise ValueError(f"Invalid model {name!r}: river.{dotted} is not a classifier")
    return cls


def check_model_name(name: str) -> str:
    base_name, ablation = split_ablation(name)
    if ablation and base_name not in MODELS:  # River's peers learn the labeled rows only
        raise ValueError(
            f"Invalid model {name!r}: {ABLATION_SUFFIX} applies to this project's models "
            f"({', '.join(MODELS)})"
        )
    if base_name.startswith(RIVER_PREFIX):
        _river_class(base_name)
    elif base_name.startswith(MOA_PREFIX):
        from .moa_peers import check_name

        check_name(base_name)
    elif base_name not in MODELS:
        raise ValueError(
            f"Unknown model {name!r}. Known models: {', '.join(MODELS)} (each also as "
            f"<model>{ABLATION_SUFFIX}), river:<module>.<Class> or moa:<learner>"
        )
    return name


def missing_peers(names) -> tuple[list[str], str | None]:
    """The MOA peers among `names` that cannot run here (capymoa missing) and one line
    saying so and how to install it (None when every name can run)."""
    moa = [n for n in names if n.startswith(MOA_PREFIX)]
    if not moa:
        return [], None
    from .moa_peers import INSTALL_HINT, available

    reason = available()
    if reason is None:
        return [], None
    return moa, f"skipping {', '.join(moa)}: capymoa is not available ({reason}); {INSTALL_HINT}"


def _accepts(cls, param: str) -> bool:
    try:
        return param in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def make_model(
    name: str,
    n_features: int,
    n_classes: int,
    seed: int | None = None,
    params: dict | None = None,
    batch_size: int = 20,
    preset: str = "paper",
):
    """A fresh model called `name`.

    This project's models start from `preset`: the paper's literal online settings
    (`"paper"`, `Class.paper()`, with the paper's complete-representation architecture: four
    hidden layers as wide as the input) or the class defaults (`"default"`, what learns best,
    their own architecture), the evaluation's mini-batch size, and `params` on top. A
    `river:<module>.<Class>` model gets `params` (and `seed` when it takes one); a binary River
    classifier is wrapped in `multiclass.OneVsRestClassifier`. A `moa:<learner>` model is
    MOA's learner through capymoa (`evaluation.runs.moa_peers`). `<model>/labeled-only` is
    `<model>` with `learn_unlabeled=False` on top of everything else.
    """
    check_model_name(name)
    check_preset(preset)
    name, ablation = split_ablation(name)
    _check_count("n_classes", n_classes, name)  # None: unknown, the models find them online
    if preset == "paper" and not name.startswith((RIVER_PREFIX, MOA_PREFIX)):
        _check_count("n_features", n_features, name, required=True)  # sizes the hidden layers
    params = dict(params or {}) | (ABLATION_PARAMS if ablation else {})
    if name.startswith(MOA_PREFIX):
        from . import moa_peers

        return moa_peers.make(name, n_features, n_classes, seed, params)
    if name.startswith(RIVER_PREFIX):
        cls = _river_class(name)
        if seed is not None and _accepts(cls, "seed"):
            params.setdefault("seed", seed)
        model = _construct(name, cls, params)
        if not model._multiclass:
            from river import multiclass

            model = multiclass.OneVsRestClassifier(model)
        return model
    class_name, fixed = MODELS[name]
    try:
        cls = getattr(importlib.import_module("river_dhbm"), class_name)
    except (ImportError, AttributeError):
        raise ValueError(f"Model {name!r} is not available: river_dhbm.{class_name} is missing")
    settings = {"batch_size": batch_size, "seed": seed}
    if preset == "paper":  # the paper's complete representation; the defaults keep their own
        settings["hidden_sizes"] = (n_features,) * 4
    settings.update(fixed)
    settings.update(params)
    if "hidden_sizes" in settings:
        settings["hidden_sizes"] = tuple(settings["hidden_sizes"])
    return _construct(name, cls.paper if preset == "paper" else cls, settings)


def _check_count(what: str, value, name: str, required: bool = False) -> None:
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"Invalid {what} ({value!r}) for model {name!r}. Must be an int >= 1"
            + ("" if required else " or None (unknown)")
        )


def _construct(name, factory, params):
    try:
        return factory(**params)
    except TypeError as e:  # an unknown keyword
        raise ValueError(f"Invalid parameters for model {name!r}: {e}") from None


# ---------------------------------------------------------------------------------- configs


def config_path(name: str) -> Path:
    """The path of a bundled config (`evaluation/configs/<name>.toml`) or of a file."""
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        return path
    bundled = resources.files("evaluation.configs").joinpath(f"{name}.toml")
    if bundled.is_file():
        return Path(str(bundled))
    raise ValueError(f"No config {name!r}: neither a file nor a bundled config")


def load_config(name: str) -> dict:
    """Read a config (TOML), normalising `stream` to `streams` and `model` to `models`."""
    path = config_path(name)
    try:
        with open(path, "rb") as f:
            config = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"Invalid config {str(path)!r}: {e}") from None
    if "stream" in config:
        config["streams"] = [config.pop("stream")]
    if "model" in config and isinstance(config["model"], str):
        config["models"] = [config.pop("model")]
    config.setdefault("params", {})
    config["_path"] = str(path)
    return config
