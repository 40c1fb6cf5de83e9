"""The language model recipe's data, network and per-epoch evaluation (`recipes.
language_model` holds its options, trained-model object and command line): corpora ->
stateful windows or sentence batches (of each direction, for a biLM), the configured
`kerasrnn.models.LanguageModelBackbone` with its loss and optimizer, perplexity with
keras-hub's metric beside, and the callback that measures it after every epoch."""

import math
import os
import sys
import time

import keras
import numpy as np

from kerasrnn.data.language_model import backward_stream
from kerasrnn.models.language_model_backbone import DIRECTIONS
from recipes import common
from recipes.common import ConfigError, Option, RecipeError
from recipes.files import read_vocabulary
from recipes.training import learning_rate_schedule

__all__ = ["backward_stream"]

# The language model's `--vocabulary-file` (an option of recipes.language_model).
VOCABULARY_OPTION = dict(
    vocabulary_file=Option(
        None,
        "a vocabulary.txt to use instead of one built from `train_file` (e.g. a "
        "translator run's target_vocab.txt, for shallow fusion: recipes.translator_lm); "
        "null: built",
        group="data",
    )
)  # re-exported: `recipes.language_model.backward_stream`

# ------------------------------------------------------------------------------ data


def read_splits(config):
    """``{"train", "valid", "test"}``: the corpora's sentences as token lists (valid and
    test None when their file option is empty)."""
    from kerasrnn.data.language_model import read_corpus

    if config["level"] not in ("word", "char"):
        raise ConfigError(f"`level` must be 'word' or 'char', got {config['level']!r}.")
    read = lambda split: read_corpus(config[f"{split}_file"], config["level"], config["unk_token"])  # noqa: E731
    splits = {"train": read("train")}
    for split in ("valid", "test"):
        splits[split] = read(split) if config[f"{split}_file"] else None
    return splits


def load_data(config, vocabulary=None):
    """Reads the corpora and builds (or reuses) the vocabulary."""
    from kerasrnn.data.language_model import build_vocabulary

    splits = read_splits(config)
    if vocabulary is None:
        vocabulary = build_vocabulary(
            splits["train"], max_size=config["max_vocab"] or None, min_freq=config["min_freq"]
        )
    return splits, vocabulary


def batches(
    config, sentences, vocabulary, batch_size, shuffle=False, source=None, direction="forward"
):
    """`(inputs, targets)` numpy windows ("stream") or a padded dataset ("sentences").
    `source` (the file) names the data in errors (a window longer than the corpus).
    `direction="backward"`: the backward LM's data (`backward_stream`, or each sentence
    reversed, [START] w_n .. w_1 -> w_n .. w_1 [END])."""
    from kerasrnn.data import language_model as lm_data

    if direction == "backward" and config["batching"] == "sentences":
        sentences = [list(reversed(s)) for s in sentences]
    if config["batching"] == "stream":
        for key in ("batch_size", "steps"):
            if config[key] < 1:
                raise ConfigError(f"`{key}` must be a positive integer, got {config[key]!r}.")
        stream = lm_data.encode_stream(sentences, vocabulary)
        if direction == "backward":
            stream = backward_stream(stream)
        try:
            return lm_data.stream_windows(stream, batch_size, config["steps"])
        except ValueError as error:  # kerasrnn.data cannot raise the recipes' errors
            raise RecipeError(f"{source or 'the corpus'}: {error}") from None
    if config["batching"] == "sentences":
        limit = config["max_sentence_length"] or None
        return lm_data.sentence_dataset(
            sentences,
            vocabulary,
            batch_size,
            shuffle=shuffle,
            seed=config["seed"],
            max_length=limit,
        )
    raise ConfigError(f"`batching` must be 'stream' or 'sentences', got {config['batching']!r}.")


def directions_of(config):
    return DIRECTIONS if config["bidirectional"] else ("forward",)


def direction_batches(config, sentences, vocabulary, batch_size, shuffle=False, source=None):
    """``{direction: batches(...)}`` for the forward (and, bidirectional, backward) LM."""
    return {
        d: batches(config, sentences, vocabulary, batch_size, shuffle, source, d)
        for d in directions_of(config)
    }


def training_data(config, per_direction):
    """What `fit` takes: the forward data, or for a biLM both directions as dicts
    (windows, or a zipped dataset of such pairs)."""
    if not config["bidirectional"]:
        return per_direction["forward"]
    forward, backward = per_direction["forward"], per_direction["backward"]
    if isinstance(forward, tuple):
        return tuple({"forward": f, "backward": b} for f, b in zip(forward, backward))
    import tensorflow as tf

    return tf.data.Dataset.zip((forward, backward)).map(
        lambda f, b: ({"forward": f[0], "backward": b[0]}, {"forward": f[1], "backward": b[1]})
    )


# ----------------------------------------------------------------------------- model


def make_loss(config):
    """The training loss: the token cross-entropy averaged over the real (not padding)
    targets of the batch; with `loss_reduction="sum_over_time"` multiplied by the window
    length, the paper's loss (summed over the unrolled steps, averaged over the batch)
    whose gradient scale lr=1 SGD and clipping at 5 assume."""
    from keras import ops

    from kerasrnn.data import PAD_ID
    from kerasrnn.models.language_model import token_nll

    if config["loss_reduction"] not in ("sum_over_time", "mean"):
        raise ConfigError(
            f"`loss_reduction` must be 'sum_over_time' or 'mean', got {config['loss_reduction']!r}."
        )
    sum_over_time = config["loss_reduction"] == "sum_over_time"

    def token_crossentropy_loss(y_true, logits):
        loss = token_nll(y_true, logits)  # 0 on padding
        # Keras averages over every position: weigh the real ones so that the mean is
        # theirs, whatever a batch of sentences holds of padding
        real = ops.cast(ops.not_equal(y_true, PAD_ID), loss.dtype)
        loss = loss * ops.cast(ops.size(real), loss.dtype) / ops.maximum(ops.sum(real), 1.0)
        return loss * ops.cast(ops.shape(loss)[1], loss.dtype) if sum_over_time else loss

    return token_crossentropy_loss


def build_model(config, vocab_size, batch_size=None, stateful=False):
    """The network, a `kerasrnn.models.LanguageModelBackbone`; `stateful` keeps each
    RNN's state across calls (batch size fixed to `batch_size`). Every variant has the
    same weights, in the same order."""
    from kerasrnn.models import LanguageModelBackbone, LanguageModelRegularization

    keys = ("dropout", "locked_dropout", "embedding_dropout", "weight_drop", "ar_alpha")
    scale = config["init_scale"]
    # one seed per weight matrix, counted from seed * 1000 (the backbone's copies)
    init = keras.initializers.RandomUniform(-scale, scale, seed=config["seed"] * 1000)
    options = {"unroll": config["unroll"], "stateful": stateful, "batch_size": batch_size}
    try:
        return LanguageModelBackbone(
            vocab_size,
            config["units"],
            config["num_layers"],
            common.make_cell(config["cell"], config["units"], **config["cell_options"]),
            config["embedding_dim"] or None,
            config["tie_embeddings"],
            LanguageModelRegularization(
                *(config[k] for k in keys), tar_beta=config["tar_beta"], seed=config["seed"]
            ),
            init if scale else None,
            config["bidirectional"],
            rnn_options=options,
        )
    except ValueError as error:
        raise ConfigError(str(error)) from None


def direction_model(model, direction):
    """One direction of a biLM (`model` itself for a forward-only LM): token ids ->
    logits, sharing the biLM's layers (and their states)."""
    if not isinstance(model.input, dict):
        return model
    return keras.Model(model.input[direction], model.output[direction], name=f"{direction}_lm")


def rnn_layers(model):
    """The forward LM's recurrent layers, in order."""
    return model.rnn_layers()


def compile_model(model, config):
    import keras_hub

    clip = config["clipnorm"] or None
    optimizers = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam}
    if config["optimizer"] not in optimizers:
        raise ConfigError(f"`optimizer` must be 'sgd' or 'adam', got {config['optimizer']!r}.")
    optimizer = optimizers[config["optimizer"]](
        learning_rate_schedule(config), global_clipnorm=clip
    )

    def metric():
        return keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0, name="perplexity")

    loss, loss_weights, metrics = make_loss(config), None, [metric()]
    if config["bidirectional"]:  # the mean of the two directions' losses
        loss = {d: make_loss(config) for d in DIRECTIONS}
        loss_weights, metrics = {d: 0.5 for d in DIRECTIONS}, {d: [metric()] for d in DIRECTIONS}
    # XLA cannot reach the replicas' variable copies on other devices (TensorFlow's known
    # issue "tf.Variable on a different device"): a multi-device strategy trains without.
    jit = False if multi_device() else config["jit_compile"]
    model.compile(optimizer, loss, loss_weights=loss_weights, metrics=metrics, jit_compile=jit)
    return model


def multi_device():
    import tensorflow as tf

    return tf.distribute.get_strategy().num_replicas_in_sync > 1


def learning_rate(config, epoch):
    """The rate of (0-based) `epoch`: lr * lr_decay ** max(0, epoch + 1 - lr_decay_after)."""
    return config["learning_rate"] * config["lr_decay"] ** max(
        0, epoch + 1 - config["lr_decay_after"]
    )


# ------------------------------------------------------------------------ evaluation


def perplexity(model, data, config):
    """`kerasrnn.models.language_model.perplexity` of `model` on `data` (what `batches`
    returns), with keras-hub's `Perplexity` metric fed the same batches
    (``keras_hub_perplexity``). A stateful model is reset first and carries its state
    through the stream."""
    import keras_hub

    from kerasrnn.models.language_model import perplexity as lm_perplexity

    for layer in model.layers:
        if getattr(layer, "stateful", False):
            layer.reset_state()
    metric = keras_hub.metrics.Perplexity(
        from_logits=True, mask_token_id=0, name="keras_hub_perplexity"
    )
    x, y = data if isinstance(data, tuple) else (data, None)
    size = model.inputs[0].shape[0] or config["batch_size"]
    return lm_perplexity(model, x, y, size, [metric])


def direction_perplexity(model, per_direction, config):
    """`perplexity` on ``{direction: data}``; for a biLM each direction's under its
    name, and together (nll the mean over both directions' tokens, as the loss)."""
    if not isinstance(model.input, dict):
        return perplexity(model, per_direction["forward"], config)
    results = {
        d: perplexity(direction_model(model, d), per_direction[d], config) for d in DIRECTIONS
    }
    tokens = sum(r["tokens"] for r in results.values())
    nll = sum(r["nll"] * r["tokens"] for r in results.values()) / max(tokens, 1)
    return dict(
        results, nll=nll, tokens=tokens, perplexity=math.exp(nll), bits_per_token=nll / math.log(2)
    )


class EpochEvaluation(keras.callbacks.Callback):
    """Resets the RNN states at every epoch start (stream mode: each epoch reads the
    stream from its beginning) and, after every epoch, measures the perplexity of each
    split in `splits` with `eval_model` (given the current weights), into the logs as
    `<split>_perplexity` (which the best-model checkpoint monitors), with the epoch's
    `learning_rate`, `train_perplexity`, `train_seconds` (the training pass only) and
    `eval_seconds` (the evaluation that follows); prints one line per epoch on stderr.
    `common.EpochLog` keeps the rows."""

    def __init__(self, config, eval_model, splits):
        super().__init__()
        self.config, self.eval_model, self.splits = config, eval_model, splits
        self.started = None

    def on_epoch_begin(self, epoch, logs=None):
        self.started = time.time()
        for layer in self.model.layers:
            if getattr(layer, "stateful", False):
                layer.reset_state()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        row = {"learning_rate": learning_rate(self.config, epoch)}
        if self.config["time_budget"]:  # the schedule's rate at the epoch's end
            rate = self.model.optimizer.learning_rate
            row["learning_rate"] = float(keras.ops.convert_to_numpy(rate))
        if self.config["bidirectional"]:
            # Keras' metric of each output; together: exp of the mean log perplexity
            nan = float("nan")
            both = [float(logs.get(f"{d}_perplexity", nan)) for d in DIRECTIONS]
            row["train_perplexity"] = math.exp(sum(math.log(p) for p in both) / 2)
            row.update({f"train_{d}_perplexity": p for d, p in zip(DIRECTIONS, both)})
        else:
            row["train_perplexity"] = float(logs.get("perplexity", float("nan")))
        row["train_seconds"] = time.time() - self.started
        evaluation_started = time.time()
        self.eval_model.set_weights(self.model.get_weights())
        for split, data in self.splits.items():
            result = direction_perplexity(self.eval_model, data, self.config)
            row[f"{split}_perplexity"] = result["perplexity"]
            if self.config["bidirectional"]:
                for d in DIRECTIONS:
                    row[f"{split}_{d}_perplexity"] = result[d]["perplexity"]
        row["eval_seconds"] = time.time() - evaluation_started
        logs.update(row)
        print(
            f"epoch={epoch + 1} "
            + " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            ),
            file=sys.stderr,
            flush=True,
        )


# -------------------------------------------------------------------- run preparation


def prepare_data(config, splits):
    """The vocabulary (vocabulary.txt; `init_from`'s when given) and the training
    windows or batches."""
    from kerasrnn.data.language_model import build_vocabulary
    from kerasrnn.data.vocabulary import SPECIAL_TOKENS, Vocabulary

    if config["vocabulary_file"]:  # e.g. a translator's target vocabulary (fusion)
        if config["init_from"]:
            raise ConfigError("`vocabulary_file` and `init_from` exclude each other: choose one.")
        vocabulary = read_vocabulary(config["vocabulary_file"])
    elif config["init_from"]:
        vocabulary = Vocabulary.load(os.path.join(config["init_from"], "vocabulary.txt"))
        if config["extend_vocabulary"]:
            frequent = Vocabulary.build(splits["train"], min_freq=config["extend_vocabulary"])
            new = [t for t in frequent.tokens[len(SPECIAL_TOKENS) :] if t not in vocabulary]
            vocabulary = Vocabulary(vocabulary.tokens + new)
    else:
        vocabulary = build_vocabulary(
            splits["train"], max_size=config["max_vocab"] or None, min_freq=config["min_freq"]
        )
    vocabulary.save(os.path.join(config["output_dir"], "vocabulary.txt"))
    batch = config["batch_size"]
    train_data = direction_batches(
        config, splits["train"], vocabulary, batch, shuffle=True, source=config["train_file"]
    )
    eval_splits = {"valid": splits["valid"]} if splits.get("valid") else {}
    if config["evaluate_test_each_epoch"] and splits.get("test"):
        eval_splits["test"] = splits["test"]
    eval_data = {
        k: direction_batches(config, v, vocabulary, batch, source=config[f"{k}_file"])
        for k, v in eval_splits.items()
    }
    if config["batching"] == "stream":  # predicted tokens (of each direction)
        tokens = int((train_data["forward"][1] != 0).sum())
    else:
        tokens = sum(len(s) + 1 for s in splits["train"])
    return common.Prepared(
        training_data(config, train_data),
        None,
        {"vocabulary": vocabulary, "eval_data": eval_data, "tokens": tokens},
        {"vocabulary_size": len(vocabulary)},
    )


def extended_weights(weights, shapes, start_size, start_dir):
    """The weights of an LM started from `weights` (a vocabulary of `start_size`) for a
    model of weight `shapes`: each array as it is, or, where the vocabulary grew
    (`extend_vocabulary`), with the new words' rows (the embedding's rows, the output
    layer's columns and biases) set to the mean of the start's. Raises a `ConfigError`
    for any other difference."""
    error = ConfigError(
        f"`init_from` {start_dir}: its weights do not fit this model (the regularisers "
        "that wrap layers, weight_drop / embedding_dropout / tie_embeddings, must match)."
    )
    if len(weights) != len(shapes):
        raise error
    fitted = []
    for weight, shape in zip(weights, shapes):
        differ = [axis for axis, (a, b) in enumerate(zip(weight.shape, shape)) if a != b]
        if len(weight.shape) != len(shape) or len(differ) > 1:
            raise error
        if differ:
            axis = differ[0]
            if weight.shape[axis] != start_size or shape[axis] < start_size:
                raise error
            mean = weight.mean(axis=axis, keepdims=True)
            rows = np.repeat(mean, shape[axis] - start_size, axis=axis)
            weight = np.concatenate([weight, rows], axis=axis)
        fitted.append(weight)
    return fitted


# ------------------------------------------------------------------------ generation

# The configuration keys of each `--method`'s kerasrnn.decoding strategy (an option
# table: `kerasrnn.decoding.get` makes the strategy).
STRATEGY_OPTIONS = {
    "greedy": lambda config: {},
    "sample": lambda config: dict(
        temperature=config["temperature"],
        top_k=config["top_k"] or None,
        top_p=config["top_p"] or None,
        seed=config["seed"],
    ),
    "beam": lambda config: dict(
        beam_size=config["beam_size"],
        n_best=1,
        scorer={"length_normalization": config["length_normalization"] or None},
    ),
}


def decoding_strategy(config):
    """The configured `kerasrnn.decoding` strategy (`--method` and its options)."""
    from kerasrnn import decoding

    method = config["method"]
    if method not in STRATEGY_OPTIONS:
        raise ConfigError(f"`method` must be 'greedy', 'sample' or 'beam', got {method!r}.")
    return type(decoding.get(method)).from_config(STRATEGY_OPTIONS[method](config))


def first_token(config):
    """What precedes a prompt: the sentence boundary the model was trained on, `[END]`
    in a stream (the previous sentence's end), `[START]` for per-sentence batches."""
    from kerasrnn.data.vocabulary import END_ID, START_ID

    return START_ID if config["batching"] == "sentences" else END_ID


# ------------------------------------------------------------------ embedding export


def export_embeddings(config, path, load):
    """Writes the trained input embedding of the word-level LM run in
    ``config["output_dir"]`` as a word2vec / fastText ``.vec`` text file
    (`kerasrnn.data.vectors.write_vectors`): a ``count dim`` header, then one line per
    regular word of its vocabulary, most frequent first (the special tokens are left
    out), which every recipe's ``--embeddings`` reads. ``load(config)`` reads the run
    (the recipe's ``LanguageModel.from_run``, passed in: this module does not import
    the recipe)."""
    from kerasrnn.data.vectors import write_vectors
    from kerasrnn.data.vocabulary import SPECIAL_TOKENS

    if config["level"] != "word":
        raise ConfigError(
            f"export-embeddings needs a word-level LM; the run in {config['output_dir']} "
            f"is {config['level']}-level (its tokens are not words)."
        )
    trained = load(config)
    matrix = keras.ops.convert_to_numpy(trained.model.get_layer("embedding").embeddings)
    words = trained.vocabulary.tokens[len(SPECIAL_TOKENS) :]
    write_vectors(path, words, matrix[len(SPECIAL_TOKENS) :])
    return {"vectors": os.fspath(path), "words": len(words), "dim": int(matrix.shape[1])}


def export_embeddings_command(recipe, load):
    """The ``export-embeddings [RUN] OUT.vec`` command of the LM recipe (`extra_commands`);
    ``load(config)`` reads a run's trained model."""

    def arguments(parser):
        parser.add_argument(
            "run", nargs="?", metavar="RUN", help="the LM's run folder (default: --output-dir)"
        )
        parser.add_argument("out", metavar="OUT.vec", help="the .vec file to write")

    def run(config, args):
        if args.run:
            config = dict(config, output_dir=args.run)
        return export_embeddings(recipe.stored(config, args), args.out, load)

    return {
        "export-embeddings": (
            "write the trained input embedding as a word2vec / fastText .vec text file "
            "(every recipe's --embeddings reads it)",
            arguments,
            run,
            recipe.options_of("export-embeddings"),
        )
    }
