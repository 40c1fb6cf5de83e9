"""Contextual word features for a recipe from a biLM run of `recipes.language_model`,
read from the run's files only (config.json, vocabulary.txt, best.keras), so that no
recipe imports another: the tagger's ``--contextual-lm RUN_DIR``."""

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


def boundary_id(config):
    """The token that preceded every sentence in the biLM's training: `[END]` in a
    stream (the previous sentence's end), `[START]` for per-sentence batches."""
    from kerasrnn.data.vocabulary import END_ID, START_ID

    return START_ID if config["batching"] == "sentences" else END_ID


def contextual_features(run_dir, **kwargs):
    """`kerasrnn.layers.BiLMFeatures` of the biLM trained in `run_dir` (its best
    weights; `kwargs` go to the layer, e.g. ``trainable``, ``name``), and its
    vocabulary (see `language_model_run_config` for the errors)."""
    import keras
    import keras_hub  # noqa: F401 (a tied biLM embedding is keras-hub's)

    from kerasrnn.data.vocabulary import Vocabulary
    from kerasrnn.layers import BiLMFeatures

    config = language_model_run_config(run_dir)
    model = keras.saving.load_model(os.path.join(run_dir, "best.keras"), compile=False)
    vocabulary = Vocabulary.load(os.path.join(run_dir, "vocabulary.txt"))
    try:
        features = BiLMFeatures.from_model(model, boundary_id(config), **kwargs)
    except ValueError as error:
        raise ConfigError(f"`contextual_lm`: {run_dir!r}: {error}") from None
    return features, vocabulary
