"""ULMFiT's transfer (Howard & Ruder 2018) for the sentence recipes: ``--pretrained-lm
RUN_DIR`` gives the encoder the LM's vocabulary, shapes and weights, after an optional
fine-tuning of the LM on the training texts; the slanted triangular schedule,
discriminative rates and gradual unfreezing work without one too. No recipe imports
another: the LM is read from its run folder, and fine-tuned by the language-model
recipe in a child process."""

import math
import os
import subprocess
import sys

from recipes import vectors
from recipes.config import ConfigError, Option
from recipes.files import read_json
from recipes.skeleton import Recipe

TRANSFER_OPTIONS = {
    "pretrained_lm": Option(None, "a word LM's run folder: the encoder starts from it; null: off"),
    "lm_finetune_epochs": Option(0, "with `pretrained_lm`: epochs of LM fine-tuning first; 0: off"),
    "lm_extend_vocabulary": Option(
        0, "with lm_finetune_epochs: words seen this often join; 0: off"
    ),
    "lr_schedule": Option(
        "constant",
        "the rate: constant or ULMFiT's slanted triangle",
        ("constant", "slanted_triangular"),
    ),
    "discriminative_decay": Option(
        1.0, "a layer group's rate: the one above's / this (ULMFiT: 2.6)"
    ),
    "gradual_unfreezing": Option(
        False, "train the head first, then unfreeze a layer group an epoch"
    ),
}

# The LM's options that fix the shapes of the transferred layers.
ARCHITECTURE = ("cell", "cell_options", "units", "num_layers")


def lm_config(run_dir):
    """The stored config of the language-model run in `run_dir` (its config.json)."""
    path = os.path.join(run_dir, "config.json")
    config = read_json(path) if os.path.exists(path) else {}
    if not {"level", "cell", "units", "num_layers", "embedding_dim"} <= set(config):
        raise ConfigError(
            f"`pretrained_lm`: no language-model config.json in {run_dir}; give the "
            "output_dir of a `language_model train` run."
        )
    if not os.path.exists(os.path.join(run_dir, "best.keras")):
        raise ConfigError(f"`pretrained_lm`: {run_dir} has no best.keras; train it first.")
    return config


def adopt_lm(config):
    """`config` with the encoder shapes of its ``pretrained_lm`` (one direction)."""
    if not config.get("pretrained_lm"):
        if config.get("lm_finetune_epochs"):
            raise ConfigError("`lm_finetune_epochs` needs `pretrained_lm` (the LM to fine-tune).")
        return config
    if config.get("lm_extend_vocabulary") and not config.get("lm_finetune_epochs"):
        raise ConfigError(
            "`lm_extend_vocabulary` needs `lm_finetune_epochs` (the new words' rows are "
            "learned in the LM fine-tuning)."
        )
    lm = lm_config(config["pretrained_lm"])
    if lm["level"] != "word":
        raise ConfigError(
            f"`pretrained_lm` {config['pretrained_lm']} is a {lm['level']}-level LM; "
            "transfer needs a word-level one (level: word)."
        )
    if config.get("embeddings"):
        raise ConfigError(
            "`embeddings` and `pretrained_lm` both initialise the embedding; set one of them."
        )
    adopted = dict(config)
    adopted.update({key: lm[key] for key in ARCHITECTURE})
    adopted["embedding_dim"] = lm["embedding_dim"] or lm["units"]
    adopted["bidirectional"] = False
    return adopted


def finetune_lm(config, train_tokens, valid_tokens=None):
    """ULMFiT's second stage: ``language_model train --init-from`` the pretrained LM on
    `train_tokens` for ``lm_finetune_epochs`` (Adam), into ``<output_dir>/lm_finetune``;
    a finished stage of the same settings is reused. Returns the LM's run folder and
    its results (None when the stage is off)."""
    source = config["pretrained_lm"]
    epochs = config["lm_finetune_epochs"]
    if not epochs:
        return source, None
    run = os.path.join(config["output_dir"], "lm_finetune")
    finished = os.path.join(run, "results.json")
    if os.path.exists(finished) and os.path.exists(os.path.join(run, "config.json")):
        # a resumed or continued classifier run: the stage is done (same LM, epochs)
        done = read_json(os.path.join(run, "config.json"))
        same = (source, epochs, config["lm_extend_vocabulary"])
        if (done.get("init_from"), done.get("epochs"), done.get("extend_vocabulary", 0)) == same:
            return run, read_json(finished)
    # the texts beside the run, not in it: train refuses a folder holding other files
    texts = os.path.join(config["output_dir"], "lm_finetune_data")
    os.makedirs(texts, exist_ok=True)
    files = {}
    for name, sentences in (("train", train_tokens), ("valid", valid_tokens or [])):
        files[name] = os.path.join(texts, f"{name}.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.write("".join(" ".join(s) + "\n" for s in sentences if s))
    flags = {
        "output_dir": run,
        "init_from": source,
        "extend_vocabulary": config["lm_extend_vocabulary"],
        "train_file": files["train"],
        "valid_file": files["valid"] if valid_tokens else "",
        "test_file": "",
        "epochs": epochs,
        "optimizer": "adam",
        "learning_rate": config["learning_rate"],
        "lr_decay_after": epochs,
        "loss_reduction": "mean",
        "clipnorm": config["clipnorm"],
        "patience": 0,
        "time_budget": 0.0,
        "averaging": "none",
        "strategy": "default",
        "verbose": config["verbose"],
        "seed": config["seed"],
    }
    command = [sys.executable, "-m", "recipes.language_model", "train"]
    for key, value in flags.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise ConfigError(
            f"`lm_finetune_epochs`: the LM fine-tuning in {run} failed (exit "
            f"{done.returncode}; its error is above)."
        )
    return run, read_json(os.path.join(run, "results.json"))


def summary(lm_dir, lm_results):
    """The transfer's part of results.json: the LM's run and the fine-tuning's curve."""
    if lm_dir is None:
        return {}
    out = {"pretrained_lm_weights": lm_dir}
    if lm_results:
        rows = lm_results.get("epochs") or []
        out["lm_finetune"] = {
            "epochs": len(rows),
            "seconds": lm_results.get("wall_seconds"),
            "perplexity": [row.get("perplexity") for row in rows],
            "valid_perplexity": [row.get("valid_perplexity") for row in rows],
        }
    return out


def lm_vocabulary(run_dir):
    """The vocabulary of the language model trained in `run_dir` (its preset)."""
    return _language_model(run_dir).preprocessor.vocabulary


def copy_lm_weights(model, run_dir):
    """`kerasrnn.models.copy_language_model` of the LM in `run_dir` into `model`."""
    from kerasrnn.models import copy_language_model

    try:
        return copy_language_model(model, _language_model(run_dir))
    except ValueError as error:
        raise ConfigError(f"`pretrained_lm` {run_dir}: {error}") from None


def _language_model(run_dir):
    from kerasrnn.models import LanguageModel

    lm_config(run_dir)  # a one-line error for a folder that is no LM run
    return LanguageModel.from_preset(run_dir, compile=False)


def uses_fine_tuning(config):
    return (
        config.get("lr_schedule", "constant") != "constant"
        or config.get("discriminative_decay", 1.0) != 1.0
        or bool(config.get("gradual_unfreezing"))
    )


def optimizer(config, model, train_examples):
    """Adam (`recipes.training.optimizer`), or with the fine-tuning options a
    `DiscriminativeAdam` over the `layer_groups` at the configured schedule."""
    from kerasrnn.callbacks import DiscriminativeAdam, SlantedTriangular, discriminative_factors
    from kerasrnn.models import layer_groups
    from recipes.training import learning_rate_schedule
    from recipes.training import optimizer as plain_optimizer

    if not uses_fine_tuning(config):
        return plain_optimizer(config)
    rate = learning_rate_schedule(config)
    if config["lr_schedule"] == "slanted_triangular":
        steps = config["epochs"] * math.ceil(train_examples / config["batch_size"])
        rate = SlantedTriangular(config["learning_rate"], max(steps, 1), cut_frac=0.1, ratio=32)
    factors = {}
    if config["discriminative_decay"] != 1.0:
        factors = discriminative_factors(layer_groups(model), config["discriminative_decay"])
    return DiscriminativeAdam(rate, factors=factors, clipnorm=config["clipnorm"] or None)


def fit_callbacks(config, model):
    """`GradualUnfreezing` of the `layer_groups` (a frozen embedding left out)."""
    from kerasrnn.callbacks import GradualUnfreezing
    from kerasrnn.models import layer_groups

    if not config.get("gradual_unfreezing"):
        return []
    groups = layer_groups(model)
    if config.get("freeze_embeddings"):
        groups = groups[1:]
    return [GradualUnfreezing(groups)]


class SentenceRecipe(Recipe):
    """A sentence recipe (the classifier, the pair model): its vocabulary and encoder
    may start from a pretrained LM (`pretrained_lm`) or word vectors (`embeddings`),
    and it fine-tunes with `TRANSFER_OPTIONS`."""

    def train(self, config, splits=None, callbacks=(), continue_run=False):
        return super().train(adopt_lm(config), splits, callbacks, continue_run)

    def vocabulary(self, config, tokens, valid_tokens):
        """``(vocabulary, parts, info)``: the LM's vocabulary (after its fine-tuning) or
        one of `tokens`, extended by the word vectors (also in vocab.txt); what
        `start` needs; the transfer's part of results.json."""
        from kerasrnn.data import Vocabulary

        lm_dir, lm_results = None, None
        if config["pretrained_lm"]:
            lm_dir, lm_results = finetune_lm(config, tokens, valid_tokens)
            vocab = lm_vocabulary(lm_dir)
        else:
            vocab = Vocabulary.build(tokens, config["max_vocab"], config["min_freq"])
        pretrained = vectors.load(config, vocab, lowercase=config["lowercase"])
        vocab = pretrained.vocabulary if pretrained else vocab  # with `embeddings_extend`
        vocab.save(os.path.join(config["output_dir"], "vocab.txt"))
        info = {**vectors.info({"embeddings": pretrained}), **summary(lm_dir, lm_results)}
        return vocab, {"vectors": pretrained, "lm_dir": lm_dir}, info

    def start(self, model, config, parts, train_examples):
        """`model` with the pretrained weights `parts` name, compiled with the
        fine-tuning optimizer (its default loss and metrics)."""
        vectors.apply(model, config, {"embedding": parts["vectors"]})
        if parts["lm_dir"]:
            copy_lm_weights(model, parts["lm_dir"])
        parts["fit_callbacks"] = fit_callbacks(config, model)
        model.compile(optimizer(config, model, train_examples))
        return model

    def fit_callbacks(self, config, prepared):
        return prepared.model.get("fit_callbacks", [])
