"""Contextual word features for a recipe from a biLM run of `recipes.language_model`,
read from the run folder (its config.json and its preset), so that no recipe imports
another: the tagger's ``--contextual-lm RUN_DIR``."""

import os

from recipes.config import ConfigError
from recipes.files import read_json


def language_model_run_config(run_dir):
    """The stored config of the biLM run in `run_dir`, checked: a one-line
    `ConfigError` when `run_dir` is missing, is not a language-model run, its model is
    not a word-level bidirectional one with one width, or it has no best.keras."""
    if not os.path.isdir(run_dir):
        raise ConfigError(f"`contextual_lm`: no such run directory {run_dir!r}.")
    path = os.path.join(run_dir, "config.json")
    config = read_json(path) if os.path.exists(path) else {}
    if not {"steps", "level", "batching", "bidirectional", "units", "embedding_dim"} <= set(
        config
    ) or not os.path.exists(os.path.join(run_dir, "vocabulary.txt")):
        raise ConfigError(
            f"`contextual_lm`: {run_dir!r} is not a language-model run "
            "(no config.json and vocabulary.txt of recipes.language_model)."
        )
    if not config["bidirectional"]:
        raise ConfigError(
            f"`contextual_lm`: the language model in {run_dir!r} is not "
            "bidirectional; train one with --bidirectional true."
        )
    if config["level"] != "word":
        raise ConfigError(
            f"`contextual_lm`: the language model in {run_dir!r} is "
            f"{config['level']}-level; contextual word features need a "
            "word-level biLM."
        )
    if (config["embedding_dim"] or config["units"]) != config["units"]:
        raise ConfigError(
            f"`contextual_lm`: the biLM in {run_dir!r} has embedding_dim "
            f"{config['embedding_dim']} != units {config['units']}; its "
            "layers' features must have one width to be mixed."
        )
    if not os.path.exists(os.path.join(run_dir, "best.keras")):
        raise ConfigError(f"`contextual_lm`: {run_dir!r} has no best.keras; train it first.")
    return {**config, "output_dir": run_dir}


def contextual_features(run_dir, **kwargs):
    """`kerasrnn.layers.BiLMFeatures` of the biLM trained in `run_dir` (its best
    weights; `kwargs` go to the layer, e.g. ``trainable``, ``name``), and its
    vocabulary (see `language_model_run_config` for the errors)."""
    from kerasrnn.layers import BiLMFeatures
    from kerasrnn.models import LanguageModel

    language_model_run_config(run_dir)
    task = LanguageModel.from_preset(run_dir, compile=False)
    preprocessor = task.preprocessor
    try:
        features = BiLMFeatures.from_model(task.backbone, preprocessor.boundary_id, **kwargs)
    except ValueError as error:
        raise ConfigError(f"`contextual_lm`: {run_dir!r}: {error}") from None
    return features, preprocessor.vocabulary
