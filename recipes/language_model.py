"""Recurrent language model: word or character level, stateful truncated BPTT or padded
sentences, perplexity, generation and SavedModel export.

    embedding -> dropout -> [RNN(cell) -> dropout] x num_layers -> softmax over the vocabulary

(dropout on the non-recurrent connections only, Zaremba et al. 2014; optionally the
output layer reuses the embedding matrix, Press & Wolf 2017). Trained on shifted targets
with masked cross-entropy, by SGD with the paper's schedule (lr constant for
`lr_decay_after` epochs, then multiplied by `lr_decay` every epoch) or Adam, gradients
clipped by global norm.

With ``--bidirectional true`` a biLM (Peters et al. 2018): a forward and a backward LM
over the shared embedding and output layer, separate recurrent stacks; the backward one
reads the text reversed and predicts the previous token (`backward_stream` states the
exact layout). The loss is the mean of the two; perplexity is reported per direction and
together. `generate` and `export` use the forward LM. `kerasrnn.layers.BiLMFeatures` gives
a trained biLM's per-layer contextual features (the tagger's ``--contextual-lm``, read
from the run's files by `recipes.contextual`).

Command line::

    python -m recipes.language_model train    --output-dir runs/ptb [--config FILE] [--flags]
    python -m recipes.language_model evaluate --output-dir runs/ptb [--split test]
    python -m recipes.language_model generate --output-dir runs/ptb --prompt "the market" \
        [--method greedy|sample|beam] [--temperature 0.8] [--top-k 40] [--top-p 0.9]
    python -m recipes.language_model export   --output-dir runs/ptb --export-dir runs/ptb/saved

Ready configs (run from the repository root; the data paths are relative to it):
`recipes/configs/zaremba_small.yaml` and `recipes/configs/zaremba_medium.yaml`, Zaremba et
al.'s "small" (CPU) and "medium" (GPU) Penn Treebank models, e.g.
``python -m recipes.language_model train --config recipes/configs/zaremba_small.yaml``.

Perplexity is exp(mean negative log-likelihood per token) over the whole stream, every
`[END]` (`<eos>`) counted; at character level bits per character = mean NLL / ln 2.
"""

import itertools
import math
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from recipes import common  # noqa: E402
from recipes.common import ConfigError, Option, RecipeError  # noqa: E402
from recipes.config import count_or_zero  # noqa: E402
from recipes.training import learning_rate_schedule  # noqa: E402

PTB = "corpus:ptb"  # kerasrnn.datasets: $KERASRNN_DATA/ptb, the cache, or a download

OPTIONS = dict(
    common.COMMON_OPTIONS,
    output_dir=Option("runs/language_model", common.COMMON_OPTIONS["output_dir"].help),
    # data
    train_file=Option(
        f"{PTB}/ptb.train.txt",
        "training text, one sentence per line "
        "(plain or gzip; corpus:NAME/FILE: a kerasrnn.datasets corpus)",
    ),
    valid_file=Option(f"{PTB}/ptb.valid.txt", "validation text; empty: none"),
    test_file=Option(f"{PTB}/ptb.test.txt", "test text; empty: none"),
    level=Option("word", "tokens: whitespace-separated words or characters", ("word", "char")),
    unk_token=Option("<unk>", "the corpus' own rare-word marker, read as [UNK]"),
    max_vocab=Option(0, "vocabulary size at most; 0: every training token (with min_freq)"),
    min_freq=Option(1, "tokens seen fewer times in training are [UNK]"),
    batching=Option(
        "stream",
        "stream: the corpus as one stream in stateful truncated-"
        "BPTT windows; sentences: padded sentence batches",
        ("stream", "sentences"),
    ),
    batch_size=Option(20, common.COMMON_OPTIONS["batch_size"].help),
    steps=Option(20, "unrolled steps per window (stream)"),
    max_sentence_length=Option(0, "cut longer sentences (sentences); 0: no limit"),
    # model (Zaremba et al.'s "small" configuration by default)
    bidirectional=Option(
        False,
        "train a biLM: a forward and a backward LM (the backward "
        "reads the text reversed and predicts the previous token) with "
        "shared embedding and output layers; loss = the mean of the two; "
        "generate/export use the forward LM only",
    ),
    **common.cell_options("lstm"),
    units=Option(200, "cell units per layer"),
    num_layers=Option(2, "stacked recurrent layers"),
    embedding_dim=Option(0, "embedding width; 0: the same as units"),
    dropout=Option(0.0, "dropout rate on the non-recurrent connections"),
    tie_embeddings=Option(
        False, "the output layer reuses the embedding matrix (needs embedding_dim == units)"
    ),
    # AWD-LSTM's regularisers (Merity et al. 2018; kerasrnn.layers), all off by default
    weight_drop=Option(
        0.0, "DropConnect rate on each layer's recurrent kernel (WeightDrop; AWD-LSTM: 0.5)"
    ),
    embedding_dropout=Option(
        0.0, "whole-word dropout rate on the embedding rows (EmbeddingDropout; AWD-LSTM: 0.1)"
    ),
    locked_dropout=Option(
        0.0,
        "locked (variational) dropout rate, one mask per sequence shared over time "
        "(SpatialDropout1D), on the embeddings and after each layer, beside `dropout`",
    ),
    ar_alpha=Option(0.0, "AR: weight of the mean squared last-layer output (AWD-LSTM: 2)"),
    tar_beta=Option(0.0, "TAR: weight of the mean squared step-to-step change of it (AWD-LSTM: 1)"),
    init_scale=Option(0.1, "weights uniform in [-s, s]; 0: Keras' initializers"),
    unroll=Option(False, "unroll the RNN time loop (short windows only)"),
    jit_compile=Option(
        True,
        "compile the training step with XLA (on a 2-core CPU it "
        "measured 1.2-1.3x faster for the small LSTM: bench/README.md)",
    ),
    # training
    optimizer=Option("sgd", "the training optimizer: SGD or Adam", ("sgd", "adam")),
    learning_rate=Option(1.0, common.COMMON_OPTIONS["learning_rate"].help),
    lr_decay=Option(
        0.5,
        "after `lr_decay_after` epochs the rate is multiplied by this every epoch "
        "(not with a `time_budget`, whose schedule sets the rate)",
    ),
    lr_decay_after=Option(4, "epochs at the initial rate before decaying"),
    clipnorm=Option(5.0, "clip the global gradient norm to this; 0 disables clipping"),
    loss_reduction=Option(
        "sum_over_time",
        "sum_over_time: the paper's loss (summed over "
        "the unrolled steps, averaged over the batch); mean: per token",
        ("sum_over_time", "mean"),
    ),
    epochs=Option(13, common.COMMON_OPTIONS["epochs"].help),
    patience=Option(0, common.COMMON_OPTIONS["patience"].help),
    evaluate_test_each_epoch=Option(False, "also measure the test perplexity after every epoch"),
    init_from=Option(
        None,
        "run folder of a trained LM to start from (its vocabulary, architecture and best "
        "weights; e.g. fine-tuning it on new text, ULMFiT's second stage); null: "
        "random weights and a vocabulary of `train_file`",
    ),
    extend_vocabulary=Option(
        0,
        "with `init_from`: the words of `train_file` seen at least this many times that "
        "its vocabulary lacks join it, their embedding and output rows starting at the "
        "mean of its rows (ULMFiT's target vocabulary); 0: its vocabulary as it is",
        check=count_or_zero("0: off"),
    ),
    # generation and export
    prompt=Option("", "generate: the prompt when none is given as an argument"),
    method=Option(
        "greedy",
        "generate / export decoding (export: greedy or beam)",
        ("greedy", "sample", "beam"),
    ),
    gen_length=Option(30, "tokens generated at most"),
    temperature=Option(1.0, "sampling: divide the logits by this (< 1 sharper, > 1 flatter)"),
    top_k=Option(0, "sampling: only the k most likely tokens; 0: all"),
    top_p=Option(0.0, "sampling: the smallest set of tokens with this much probability; 0: all"),
    beam_size=Option(5, "beam width of beam search"),
    length_normalization=Option(
        "average", "beam search length normalisation", (None, "average", "gnmt")
    ),
)
DEFAULTS = common.defaults_of(OPTIONS)


# ------------------------------------------------------------------------------ data


def read_splits(config):
    """``{"train", "valid", "test"}``: the corpora's sentences as token lists (valid and
    test None when their file option is empty)."""
    from kerasrnn.data.language_model import read_corpus

    if config["level"] not in ("word", "char"):
        raise ConfigError(f"`level` must be 'word' or 'char', got {config['level']!r}.")
    splits = {"train": read_corpus(config["train_file"], config["level"], config["unk_token"])}
    for split in ("valid", "test"):
        splits[split] = None
        if config[f"{split}_file"]:
            splits[split] = read_corpus(
                config[f"{split}_file"], config["level"], config["unk_token"]
            )
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


def backward_stream(stream):
    """The stream the backward LM reads, for `stream_windows`.

    The forward LM has inputs x = [END] + S[:-1] and targets y = S (S ends with
    [END]). The backward LM reads the same tokens right to left and predicts the
    previous one: its inputs are reverse(y) and its targets reverse(x), so that at
    every reversed position the target is the token just before (in reading order,
    just after) the last one read. `stream_windows` builds x from y as [END] + y[:-1],
    so its stream here is reverse([END] + S[:-1]): since reverse(S) starts with S's
    final [END], that gives exactly inputs reverse(S), targets reverse(x). Every
    sentence w_1 .. w_n thus reads as [END] w_n .. w_1 -> w_n .. w_1 [END], the mirror
    of the forward [END] w_1 .. w_n -> w_1 .. w_n [END]; both directions predict the
    same number of tokens."""
    from kerasrnn.data.vocabulary import END_ID

    stream = np.asarray(stream, "int32")
    return np.concatenate([[END_ID], stream[:-1]]).astype("int32")[::-1].copy()


def batches(
    config, sentences, vocabulary, batch_size, shuffle=False, source=None, direction="forward"
):
    """`(inputs, targets)` numpy windows ("stream") or a padded dataset ("sentences").
    `source` (the file) names the data in errors: a `batch_size x steps` window longer
    than the corpus is a `RecipeError`, which the command line reports in one line.
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
        return lm_data.sentence_dataset(
            sentences,
            vocabulary,
            batch_size,
            shuffle=shuffle,
            seed=config["seed"],
            max_length=config["max_sentence_length"] or None,
        )
    raise ConfigError(f"`batching` must be 'stream' or 'sentences', got {config['batching']!r}.")


DIRECTIONS = ("forward", "backward")


def directions_of(config):
    return DIRECTIONS if config["bidirectional"] else ("forward",)


def direction_batches(config, sentences, vocabulary, batch_size, shuffle=False, source=None):
    """``{direction: batches(...)}`` for the forward (and, bidirectional, backward) LM."""
    return {
        d: batches(config, sentences, vocabulary, batch_size, shuffle, source, d)
        for d in directions_of(config)
    }


def training_data(config, per_direction):
    """What `fit` takes: the forward data as it is, or for a biLM the two directions
    as dicts, ``({"forward": x, "backward": x_b}, {"forward": y, "backward": y_b})``
    (windows) or a zipped dataset of such pairs (sentences)."""
    if not config["bidirectional"]:
        return per_direction["forward"]
    forward, backward = per_direction["forward"], per_direction["backward"]
    if isinstance(forward, tuple):
        return (
            {"forward": forward[0], "backward": backward[0]},
            {"forward": forward[1], "backward": backward[1]},
        )
    import tensorflow as tf

    return tf.data.Dataset.zip((forward, backward)).map(
        lambda f, b: ({"forward": f[0], "backward": b[0]}, {"forward": f[1], "backward": b[1]})
    )


# ----------------------------------------------------------------------------- model


def token_crossentropy(y_true, logits):
    """Cross-entropy of every token, 0 where the target is [PAD] (id 0)."""
    from keras import ops

    y_true = ops.cast(y_true, "int32")
    nll = keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True)
    return nll * ops.cast(ops.not_equal(y_true, 0), nll.dtype)


def make_loss(config):
    """The training loss. Keras averages it over the real (unmasked) tokens; with
    `loss_reduction="sum_over_time"` it is multiplied by the window length, which gives
    the paper's loss (summed over the unrolled steps, averaged over the batch) whose
    gradient scale lr=1 SGD and clipping at 5 assume."""
    if config["loss_reduction"] not in ("sum_over_time", "mean"):
        raise ConfigError(
            f"`loss_reduction` must be 'sum_over_time' or 'mean', got {config['loss_reduction']!r}."
        )
    sum_over_time = config["loss_reduction"] == "sum_over_time"

    def token_crossentropy_loss(y_true, logits):
        from keras import ops

        loss = token_crossentropy(y_true, logits)
        if sum_over_time:
            loss = loss * ops.cast(ops.shape(loss)[1], loss.dtype)
        return loss

    return token_crossentropy_loss


def build_model(config, vocab_size, batch_size=None, stateful=False):
    """The language model; `stateful` keeps each RNN's state across calls (batch size
    fixed to `batch_size`). Every variant has the same weights, in the same order."""
    import keras
    import keras_hub

    from kerasrnn.layers import ActivationRegularization, EmbeddingDropout, WeightDrop

    units, scale = config["units"], config["init_scale"]
    emb_dim = config["embedding_dim"] or units
    # one seed per weight matrix: a seeded Keras initializer draws the same values at
    # every call, which made every kernel, recurrent kernel and layer start identical
    seeds = itertools.count(config["seed"] * 1000)
    init = (
        (lambda: keras.initializers.RandomUniform(-scale, scale, seed=next(seeds)))
        if scale
        else None
    )
    if config["tie_embeddings"] and emb_dim != units:
        raise ConfigError(
            f"`tie_embeddings` needs embedding_dim == units, got embedding_dim={emb_dim}, "
            f"units={units}."
        )

    def cell_options():
        options = dict(config["cell_options"])
        if scale:
            options.setdefault("kernel_initializer", init())
            options.setdefault("recurrent_initializer", init())
            if config["cell"] in ("lstm", "layer_norm_lstm"):
                options.setdefault("unit_forget_bias", False)
        return options

    embedding_options = dict(
        mask_zero=True, embeddings_initializer=init() if scale else "uniform", name="embedding"
    )
    if config["tie_embeddings"]:
        if config["embedding_dropout"]:
            raise ConfigError(
                "`embedding_dropout` does not work with `tie_embeddings` (the tied output "
                "layer would share the dropped rows); set one of them off."
            )
        embedding = keras_hub.layers.ReversibleEmbedding(
            vocab_size, emb_dim, tie_weights=True, **embedding_options
        )
    elif config["embedding_dropout"]:
        embedding = EmbeddingDropout(
            vocab_size,
            emb_dim,
            rate=config["embedding_dropout"],
            seed=config["seed"],
            **embedding_options,
        )
    else:
        embedding = keras.layers.Embedding(vocab_size, emb_dim, **embedding_options)
    output = None
    if not config["tie_embeddings"]:
        output = keras.layers.Dense(
            vocab_size,
            kernel_initializer=init() if scale else "glorot_uniform",
            name="logits",
        )

    def dropouts(x, name):
        # plain dropout, then locked dropout (one mask per sequence, over time)
        x = keras.layers.Dropout(config["dropout"], name=name)(x)
        if config["locked_dropout"]:
            x = keras.layers.SpatialDropout1D(
                config["locked_dropout"], name=name.replace("dropout", "locked_dropout")
            )(x)
        return x

    def language_model(inputs, prefix):
        # one direction: the shared embedding, its own recurrent stack, the shared output
        x = dropouts(embedding(inputs), f"{prefix}dropout_in")
        last = config["num_layers"] - 1
        for i in range(config["num_layers"]):
            cell = common.make_cell(config["cell"], units, **cell_options())
            if config["weight_drop"]:
                cell = WeightDrop(cell, config["weight_drop"], seed=config["seed"] + i)
            x = keras.layers.RNN(
                cell,
                return_sequences=True,
                stateful=stateful,
                unroll=config["unroll"],
                name=f"{prefix}rnn_{i}",
            )(x)
            if i == last and config["tar_beta"]:  # TAR on the undropped output, as AWD
                x = ActivationRegularization(beta=config["tar_beta"], name=f"{prefix}tar")(x)
            x = dropouts(x, f"{prefix}dropout_{i}")
        if config["ar_alpha"]:  # AR on the dropped output, as AWD-LSTM
            x = ActivationRegularization(alpha=config["ar_alpha"], name=f"{prefix}ar")(x)
        return embedding(x, reverse=True) if output is None else output(x)

    if not config["bidirectional"]:
        inputs = keras.Input(batch_shape=(batch_size, None), dtype="int32", name="tokens")
        return keras.Model(inputs, language_model(inputs, ""), name="language_model")
    inputs, backward = (
        keras.Input(batch_shape=(batch_size, None), dtype="int32", name=d) for d in DIRECTIONS
    )
    forward_logits = language_model(inputs, "")
    backward_logits = language_model(backward, "backward_")
    return keras.Model(
        {"forward": inputs, "backward": backward},
        {"forward": forward_logits, "backward": backward_logits},
        name="bidirectional_language_model",
    )


def direction_model(model, direction):
    """One direction of a biLM (`model` itself for a forward-only LM): token ids ->
    logits, sharing the biLM's layers (and their states)."""
    if not isinstance(model.input, dict):
        return model
    return keras.Model(
        model.input[direction], model.output[direction], name=f"{direction}_language_model"
    )


def all_rnn_layers(model):
    return [layer for layer in model.layers if layer.name.startswith(("rnn_", "backward_rnn_"))]


def rnn_layers(model):
    """The forward LM's recurrent layers, in order."""
    return [layer for layer in model.layers if layer.name.startswith("rnn_")]


def compile_model(model, config):
    import keras
    import keras_hub

    clip = config["clipnorm"] or None
    if config["optimizer"] == "sgd":
        optimizer = keras.optimizers.SGD(learning_rate_schedule(config), global_clipnorm=clip)
    elif config["optimizer"] == "adam":
        optimizer = keras.optimizers.Adam(learning_rate_schedule(config), global_clipnorm=clip)
    else:
        raise ConfigError(f"`optimizer` must be 'sgd' or 'adam', got {config['optimizer']!r}.")

    def perplexity_metric():
        return keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0, name="perplexity")

    if config["bidirectional"]:
        # the mean of the two directions' losses; metrics forward_/backward_perplexity
        loss = {d: make_loss(config) for d in DIRECTIONS}
        loss_weights = {d: 0.5 for d in DIRECTIONS}
        metrics = {d: [perplexity_metric()] for d in DIRECTIONS}
    else:
        loss, loss_weights, metrics = make_loss(config), None, [perplexity_metric()]
    model.compile(
        optimizer=optimizer,
        loss=loss,
        loss_weights=loss_weights,
        metrics=metrics,
        # XLA cannot reach the replicas' variable copies on other devices (TensorFlow's
        # known issue "tf.Variable on a different device"), so a multi-device strategy
        # trains without it.
        jit_compile=False if multi_device() else config["jit_compile"],
    )
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
    """Perplexity of `model` on `data` (what `batches` returns), two ways:

    * directly: exp(sum of token NLLs / number of real target tokens);
    * keras-hub's `Perplexity` metric fed the same batches.

    A stateful model is reset first and carries its state through the stream.
    Returns a dict: nll (mean per token), tokens, perplexity, keras_hub_perplexity, and
    bits_per_token = nll / ln 2 (bits per character at character level).
    """
    import keras_hub
    from keras import ops

    for layer in all_rnn_layers(model):
        if layer.stateful:
            layer.reset_state()
    metric = keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0)
    if isinstance(data, tuple):
        inputs, targets = data
        size = model.inputs[0].shape[0] or config["batch_size"]
        pairs = ((inputs[i : i + size], targets[i : i + size]) for i in range(0, len(inputs), size))
    else:
        pairs = ((x.numpy(), y.numpy()) for x, y in data)
    total, count = 0.0, 0
    for x, y in pairs:
        # The compiled predict function, not an eager call: 5x faster on PTB (an
        # eager call runs every time step op by op).
        logits = model.predict_on_batch(x)
        nll = ops.convert_to_numpy(token_crossentropy(y, logits))
        total += float(np.sum(nll, dtype="float64"))
        count += int((y != 0).sum())
        metric.update_state(y, logits)
    mean = total / max(count, 1)
    return {
        "nll": mean,
        "tokens": count,
        "perplexity": math.exp(mean),
        "keras_hub_perplexity": float(ops.convert_to_numpy(metric.result())),
        "bits_per_token": mean / math.log(2),
    }


def direction_perplexity(model, per_direction, config):
    """`perplexity` of an LM on ``{direction: data}`` (`direction_batches`). For a biLM:
    each direction's result under "forward" and "backward", and together: nll the mean
    NLL over both directions' tokens (the two count the same tokens, so this is the mean
    of the two, as the training loss), perplexity = exp(nll)."""
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
        for layer in all_rnn_layers(self.model):
            if layer.stateful:
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


# -------------------------------------------------------------------------- the model


class LanguageModel:
    """A trained language model with its vocabulary: perplexity, generation, export.

    `model` is the trained network (any variant: `build_model` rebuilds the one a use
    needs, stateful or not, and copies the weights)."""

    def __init__(self, model, vocabulary, config):
        self.model, self.vocabulary, self.config = model, vocabulary, config

    @classmethod
    def from_run(cls, config):
        """The vocabulary and best model of a `train` run: ``best.keras``; a run of
        the previous layout (``best.weights.h5`` / ``model.weights.h5``) loads too."""
        from kerasrnn.data.vocabulary import Vocabulary

        out = config["output_dir"]
        vocabulary = Vocabulary.load(os.path.join(out, "vocabulary.txt"))
        best = os.path.join(out, "best.keras")
        if os.path.exists(best):
            import keras_hub  # noqa: F401 (registers ReversibleEmbedding)

            trained = keras.saving.load_model(best, compile=False)
            model = build_model(config, len(vocabulary))
            model.set_weights(trained.get_weights())
            return cls(model, vocabulary, config)
        model = build_model(config, len(vocabulary))
        for old in ("best.weights.h5", "model.weights.h5"):  # the layout before best.keras
            if os.path.exists(os.path.join(out, old)):
                model.load_weights(os.path.join(out, old))
                return cls(model, vocabulary, config)
        raise FileNotFoundError(f"no trained model at {best}; run `train` first.")

    def variant(self, batch_size=None, stateful=False):
        """The trained weights in a model with a fixed batch size / stateful RNNs."""
        if batch_size is None and not stateful:
            return self.model
        model = build_model(self.config, len(self.vocabulary), batch_size, stateful)
        model.set_weights(self.model.get_weights())
        return model

    def evaluate(self, splits, names=("valid", "test")):
        """Perplexity (and bits per character at character level) of each split in
        `names` of `splits` (``{split: sentences}``), over each whole stream; for a
        biLM per direction too (`direction_perplexity`)."""
        config = self.config
        stream = config["batching"] == "stream"
        batch = config["batch_size"]
        model = self.variant(batch if stream else None, stream)
        results = {}
        for split in names:
            if splits.get(split):
                data = direction_batches(
                    config, splits[split], self.vocabulary, batch, source=config[f"{split}_file"]
                )
                result = direction_perplexity(model, data, config)
                if config["level"] == "char":
                    for part in [result] + [result.get(d) for d in DIRECTIONS]:
                        if part:
                            part["bits_per_character"] = part.pop("bits_per_token")
                results[split] = result
        return results

    def generate(self, prompts=None):
        """Continuations of `prompts` (see the module function `generate`)."""
        return generate(self.config, prompts, self.vocabulary, self.model)

    def export(self, path):
        """The SavedModel of the module function `export`."""
        return export(self.config, path, self)

    def export_runtime(self, path, format_name, sequence_length=64, quantization=None):
        """Writes the language model for onnxruntime or LiteRT
        (`kerasrnn.export.export_bundle`) as two graphs: ``generate`` (prompt ids (1,
        `sequence_length`) and their length (1,) -> the continuation's ids (1, gen_length),
        the prompt pass and the decoding loop inside, as `export`'s SavedModel) and
        ``step``, the streaming step (token (1,) and every layer's states -> logits (1,
        vocabulary) and the new states); with the vocabulary and the numpy-only
        ``client.py`` (`Client.generate`, `Client.stream`). `quantization`: the weights, as
        `export_bundle` takes it."""
        from kerasrnn.export.bundle import export_bundle

        config = self.config
        if config["bidirectional"] or config["method"] not in ("greedy", "beam"):
            raise ConfigError(
                f"the {format_name} export takes a forward language model decoding with "
                "method greedy or beam: use --format saved_model for a biLM, or pass "
                "--method greedy."
            )
        step, initial_states = step_function(self.model)
        shapes = [[tuple(s.shape[1:]) for s in layer] for layer in initial_states(1)]
        token = keras.Input((), dtype="int32", name="token")
        states = [
            keras.Input(shape, name=f"state_{i}_{j}")
            for i, layer in enumerate(shapes)
            for j, shape in enumerate(layer)
        ]
        stepper = keras.Model(
            [token, *states],
            LanguageModelStep(self.model, [len(layer) for layer in shapes])([token, *states]),
            name="step",
        )
        ids = keras.Input((sequence_length,), dtype="int32", name="prompt_ids")
        lengths = keras.Input((), dtype="int32", name="prompt_length")
        generator = keras.Model(
            [ids, lengths],
            LanguageModelGenerate(self.model, config)([ids, lengths]),
            name="generate",
        )
        metadata = {
            "task": "language_model",
            "level": config["level"],
            "first_token": first_token(config),
            "gen_length": config["gen_length"],
            "states": [[list(shape) for shape in layer] for layer in shapes],
            "vocabularies": {"words": self.vocabulary.tokens},
        }
        models = {"generate": (generator, None), "step": (stepper, None)}
        return export_bundle(path, models, format_name, metadata, sequence_length, quantization)


class LanguageModelStep(keras.layers.Layer):
    """`step_function` of a language model as a layer: ``[token (batch,), states...]``
    (the states flat, layer by layer) -> ``[logits (batch, vocabulary), states...]``:
    the streaming step of the ONNX / LiteRT export."""

    def __init__(self, language_model, counts, **kwargs):
        super().__init__(**kwargs)
        self.language_model, self.counts = language_model, list(counts)

    def call(self, inputs):
        token, flat = inputs[0], list(inputs[1:])
        states = []
        for count in self.counts:
            states.append(flat[:count])
            flat = flat[count:]
        step, _ = step_function(self.language_model)
        logits, states = step(token, states)
        return [logits] + [s for layer in states for s in layer]


class LanguageModelGenerate(keras.layers.Layer):
    """`export`'s graph without the strings: ``[prompt ids (batch, length) padded on
    the right and starting with `first_token`, lengths (batch,)]`` -> continuation ids
    (batch, gen_length), greedy (as a top-1, a LiteRT builtin) or beam search (without
    `drop_finished`, whose phases have data-dependent shapes)."""

    def __init__(self, language_model, config, **kwargs):
        super().__init__(**kwargs)
        self.language_model, self.config = language_model, dict(config)

    def call(self, inputs):
        from kerasrnn import decoding
        from kerasrnn.data.vocabulary import END_ID
        from kerasrnn.export.runtime_decoding import TopOneGreedySearch

        ids, lengths = inputs
        config = self.config
        step, initial_states = step_function(self.language_model)
        states, start = prompt_states(step, initial_states, ids, lengths)
        if config["method"] == "greedy":
            strategy = TopOneGreedySearch()
        else:
            options = STRATEGY_OPTIONS["beam"](config)
            strategy = decoding.BeamSearch(
                options["beam_size"],
                1,
                decoding.Scorer(**options["scorer"]),
                drop_finished=False,
            )
        result = strategy(step, start, states, config["gen_length"], end_token=END_ID)
        return keras.ops.cast(result.tokens[:, 0], "int32")


def load_trained(config, batch_size=None, stateful=False):
    """The vocabulary and a model with the trained (best) weights."""
    trained = LanguageModel.from_run(config)
    return trained.vocabulary, trained.variant(batch_size, stateful)


def evaluate(config, splits=None, vocabulary=None, names=("valid", "test")):
    """Valid and test perplexity (and bits per character at character level) of the
    trained model, over each whole stream."""
    trained = LanguageModel.from_run(config)
    if splits is None:
        splits, _ = load_data(config, trained.vocabulary)
    return trained.evaluate(splits, names)


# ----------------------------------------------------------------------------- train


class LanguageModelRecipe(common.Recipe):
    """The language model on the recipe skeleton (`common.Recipe`): its data are
    sentence lists (`load_data`), its validation the per-epoch perplexity
    (`EpochEvaluation`), its trained-model object `LanguageModel`."""

    name = "language_model"
    options = OPTIONS
    predictor = LanguageModel
    metric = "perplexity"
    predict_command = "generate"
    run_options = (
        "valid_file",
        "test_file",
        "unk_token",
        "prompt",
        "method",
        "gen_length",
        "temperature",
        "top_k",
        "top_p",
        "beam_size",
        "length_normalization",
    )

    def check_config(self, config):
        if config["strategy"] in ("mirrored", "multi_worker") and config["batching"] == "stream":
            # A stateful RNN carries each row's state into the next window of the same
            # row; split over replicas, its fixed-batch state variables would be
            # mirrored, not kept per row.
            raise ConfigError(
                f"`strategy: {config['strategy']}` does not work with `batching: stream` "
                "(stateful windows carry each row's RNN state, which replicas cannot "
                "share); use "
                "`batching: sentences` or `strategy: default`."
            )
        if config["extend_vocabulary"] and not config["init_from"]:
            raise ConfigError("`extend_vocabulary` needs `init_from` (the vocabulary to extend).")

    def load_splits(self, config):
        return read_splits(config)

    def train(self, config, splits=None, callbacks=(), continue_run=False):
        if config["init_from"]:  # the architecture of the run it starts from
            stored = common.saved_config(OPTIONS, config["init_from"])
            config = dict(config, **{key: stored[key] for key in INIT_ARCHITECTURE})
        return super().train(config, splits, callbacks, continue_run)

    def prepare(self, config, splits):
        """The vocabulary (vocabulary.txt; `init_from`'s when given) and the training
        windows or batches."""
        from kerasrnn.data.language_model import build_vocabulary
        from kerasrnn.data.vocabulary import SPECIAL_TOKENS, Vocabulary

        if config["init_from"]:
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

    def build(self, config, prepared):
        stream = config["batching"] == "stream"
        batch = config["batch_size"] if stream else None
        size = len(prepared.model["vocabulary"])
        model = build_model(config, size, batch, stream)
        if config["init_from"]:
            start = LanguageModel.from_run(common.saved_config(OPTIONS, config["init_from"]))
            model.set_weights(
                extended_weights(
                    start.model.get_weights(),
                    [w.shape for w in model.get_weights()],
                    len(start.vocabulary),
                    config["init_from"],
                )
            )
        return compile_model(model, config)

    def fit_callbacks(self, config, prepared):
        stream = config["batching"] == "stream"
        # The per-epoch evaluation's copy of the weights, outside the strategy's scope:
        # it runs predict on whole batches.
        eval_model = build_model(
            config,
            len(prepared.model["vocabulary"]),
            config["batch_size"] if stream else None,
            stream,
        )
        # Order matters at each epoch end: the evaluation puts valid_perplexity in the
        # logs for the checkpoint.
        callbacks = [EpochEvaluation(config, eval_model, prepared.model["eval_data"])]
        if not config["time_budget"]:  # with one, the budget's schedule sets the rate
            callbacks.append(
                keras.callbacks.LearningRateScheduler(lambda epoch: learning_rate(config, epoch))
            )
        return callbacks

    def monitor(self, config, prepared):
        if prepared.model["eval_data"].get("valid") is not None:
            return "valid_perplexity", "min"
        return "perplexity", "min"

    def summarize(self, config, prepared, results, rows):
        """`epochs` (one row per epoch), `train_seconds` and `tokens_per_second` of the
        training passes only (summed over the epochs, before a resume too),
        `wall_seconds` (this call's `fit`, per-epoch evaluation included)."""
        results.pop("history")
        results["wall_seconds"] = results.pop("train_seconds")
        train_seconds = sum(row["train_seconds"] for row in rows)
        results["epochs"] = rows
        results["train_seconds"] = train_seconds
        results["tokens_per_second"] = (
            prepared.model["tokens"] * len(rows) / train_seconds if train_seconds else None
        )
        return results

    def evaluate_splits(self, config, splits):
        return LanguageModel.from_run(config).evaluate(splits)

    def predict_arguments(self, parser):
        parser.add_argument(
            "texts", nargs="*", metavar="prompts", help="prompts (default: --prompt)"
        )
        parser.add_argument("--input", help="a file with one prompt per line")

    def predict_rows(self, trained, texts):
        return trained.generate(texts or None)

    def extra_commands(self):
        def evaluate_arguments(parser):
            parser.add_argument(
                "--split", choices=["valid", "test"], help="only this split (default: both)"
            )

        def run_evaluate(config, args):
            config = self.stored(config, args)
            return evaluate(config, names=(args.split,) if args.split else ("valid", "test"))

        return {
            "evaluate": (
                "perplexity of a trained model on the valid/test streams",
                evaluate_arguments,
                run_evaluate,
                self.options_of("evaluate"),
            )
        }


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


# What `init_from` takes from the run it starts from: the options that shape the weights.
INIT_ARCHITECTURE = (
    "level",
    "bidirectional",
    "cell",
    "cell_options",
    "units",
    "num_layers",
    "embedding_dim",
    "tie_embeddings",
)

RECIPE = LanguageModelRecipe()


def train(config, splits=None, callbacks=(), continue_run=False):
    """Trains, evaluates valid/test perplexity after each epoch, saves the vocabulary,
    the best model by validation perplexity (``best.keras``), the last epoch's weights
    and optimizer state, ``results.json`` and ``training_curves.png``. Re-running an
    interrupted run with the same config resumes it (`BackupAndRestore`), epoch rows and
    best score included; `continue_run` extends a finished one.

    Args:
        config: a complete config (`common.load_config(OPTIONS, ...)`).
        splits: optional ``{"train": sentences, "valid": ..., "test": ...}`` (token
            lists) instead of the config's files.
        callbacks: extra Keras callbacks.
        continue_run: extend the finished run from its last epoch to ``epochs``.
    """
    return RECIPE.train(config, splits, callbacks, continue_run)


# ------------------------------------------------------------------------ generation


def step_function(model):
    """The trained model as a decoder step: `(tokens (batch,), states) -> (logits,
    states)`, states = one list per RNN layer. Dropout is off (inference)."""
    from keras import ops

    embedding = model.get_layer("embedding")
    layers = rnn_layers(model)
    tied = not any(layer.name == "logits" for layer in model.layers)
    output = None if tied else model.get_layer("logits")

    def step(tokens, states):
        # The lookup without the layer call: one token per row needs no padding mask,
        # and the mask the layer attaches would make every cell warn that it does not
        # support masking (keras-hub's ReversibleEmbedding attaches one even in `call`).
        x = ops.cast(ops.take(embedding.embeddings, tokens, axis=0), embedding.compute_dtype)
        new_states = []
        for layer, state in zip(layers, states):
            x, state = layer.cell(x, list(state), training=False)
            new_states.append(list(state))
        logits = embedding(x, reverse=True) if tied else output(x)
        return logits, new_states

    def initial_states(batch_size):
        return [list(layer.cell.get_initial_state(batch_size)) for layer in layers]

    return step, initial_states


def prompt_states(step, initial_states, ids, lengths):
    """Runs the model over each prompt but its last token (`ids` padded on the right,
    `lengths` >= 1); returns the states and that last token, the first decoder input."""
    from keras import ops

    batch_size = ops.shape(ids)[0]
    lengths = ops.cast(lengths, "int32")

    def body(t, states):
        _, new_states = step(ids[:, t], states)
        keep = (t < lengths - 1)[:, None]
        return [
            [ops.where(keep, n, o) for n, o in zip(ns, os_)] for ns, os_ in zip(new_states, states)
        ]

    states = ops.fori_loop(0, ops.shape(ids)[1] - 1, body, initial_states(batch_size))
    last = ops.take_along_axis(ids, (lengths - 1)[:, None], axis=1)[:, 0]
    return states, last


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
    strategy = type(decoding.get(method))
    return strategy.from_config(STRATEGY_OPTIONS[method](config))


def decode(config, step, states, start, max_length):
    """Continuation ids `(batch, max_length)` with the configured strategy."""
    from kerasrnn.data.vocabulary import END_ID

    strategy = decoding_strategy(config)
    return strategy(step, start, states, max_length, end_token=END_ID).tokens[:, 0]


def first_token(config):
    """What precedes a prompt: the sentence boundary the model was trained on, `[END]`
    in a stream (the previous sentence's end), `[START]` for per-sentence batches."""
    from kerasrnn.data.vocabulary import END_ID, START_ID

    return START_ID if config["batching"] == "sentences" else END_ID


def tokens_of(text, level):
    from kerasrnn.data.language_model import split_line

    return split_line(text, level)


def generate(config, prompts=None, vocabulary=None, model=None):
    """Continues each prompt (a string; "" starts a new sentence) with up to
    `gen_length` tokens, stopping at the end of the sentence. Returns a list of dicts
    with the continuation and how many prompt tokens were unknown."""
    from keras import ops

    if vocabulary is None or model is None:
        vocabulary, model = load_trained(config)
    prompts = [config["prompt"]] if prompts is None else list(prompts)
    first = first_token(config)
    encoded = [[first] + vocabulary.encode(tokens_of(p, config["level"])) for p in prompts]
    width = max(len(ids) for ids in encoded)
    ids = np.zeros((len(encoded), width), "int32")
    for row, sequence in enumerate(encoded):
        ids[row, : len(sequence)] = sequence
    lengths = np.asarray([len(s) for s in encoded], "int32")
    step, initial_states = step_function(model)
    states, start = prompt_states(step, initial_states, ids, lengths)
    out = ops.convert_to_numpy(decode(config, step, states, start, config["gen_length"]))
    joiner = "" if config["level"] == "char" else " "
    results = []
    for prompt, sequence, row in zip(prompts, encoded, out):
        words = vocabulary.decode([int(i) for i in row], skip_special=False)
        words = words[: words.index("[END]")] if "[END]" in words else words
        words = [w for w in words if w != "[PAD]"]
        results.append(
            {
                "prompt": prompt,
                "continuation": joiner.join(words),
                "unknown_prompt_tokens": int(sum(i == 1 for i in sequence)),
            }
        )
    return results


# ---------------------------------------------------------------------------- export


def export(config, export_dir, trained=None):
    """A SavedModel with `serving_default(prompt: tf.string[batch]) ->
    {"continuation": tf.string[batch]}`: tokenisation, the prompt pass, decoding
    (`method`: greedy or beam; sampling is not exported) and detokenisation in the graph;
    and the streaming step ``step(token: int32[batch], state_<layer>_<i>: float32[batch,
    units]...) -> {"logits", "state_<layer>_<i>"...}`` (zeros are the initial states).
    `trained`: the `LanguageModel` (default: the run's, loaded)."""
    import tensorflow as tf

    from kerasrnn.data.vocabulary import END_ID, PAD_ID
    from kerasrnn.export import export_saved_model, ids_to_strings

    if config["method"] not in ("greedy", "beam"):
        raise ConfigError(f"export supports method 'greedy' or 'beam', got {config['method']!r}.")
    trained = trained or LanguageModel.from_run(config)
    vocabulary, model = trained.vocabulary, trained.model
    lookup = vocabulary.lookup()
    step, initial_states = step_function(model)
    names = vocabulary.tokens
    joiner = "" if config["level"] == "char" else " "

    def serve(prompt):
        if config["level"] == "char":
            pieces = tf.strings.unicode_split(prompt, "UTF-8")
        else:
            pieces = tf.strings.split(prompt)
        ids = tf.cast(lookup(pieces), tf.int32)
        ids = tf.concat([tf.fill([ids.nrows(), 1], first_token(config)), ids], axis=1)
        lengths = ids.row_lengths()
        states, start = prompt_states(step, initial_states, ids.to_tensor(0), lengths)
        out = decode(config, step, states, start, config["gen_length"])
        # As `generate`: cut at the first [END], drop [PAD]; [UNK] stays (it stands
        # for a real word, and `generate` shows it).
        before_end = tf.cumsum(tf.cast(out == END_ID, tf.int32), axis=1) == 0
        keep = before_end & (out != PAD_ID)
        words = tf.ragged.boolean_mask(ids_to_strings(out, names), keep)
        return {"continuation": tf.strings.reduce_join(words, axis=1, separator=joiner)}

    # the streaming step: token and states in, logits and states out (as the ONNX and
    # LiteRT exports' `step` graph)
    shapes = [[tuple(s.shape[1:]) for s in layer] for layer in initial_states(1)]
    counts = [len(layer) for layer in shapes]

    def stream_step(token, *flat):
        states, flat = [], list(flat)
        for count in counts:
            states.append(flat[:count])
            flat = flat[count:]
        logits, states = step(token, states)
        names = [f"state_{i}_{j}" for i, count in enumerate(counts) for j in range(count)]
        return {"logits": logits, **dict(zip(names, [s for layer in states for s in layer]))}

    step_signature = [tf.TensorSpec([None], tf.int32, name="token")] + [
        tf.TensorSpec([None, *shape], tf.float32, name=f"state_{i}_{j}")
        for i, layer in enumerate(shapes)
        for j, shape in enumerate(layer)
    ]
    signature = [tf.TensorSpec([None], tf.string, name="prompt")]
    export_saved_model(
        export_dir,
        model,
        {"serving_default": (serve, signature), "step": (stream_step, step_signature)},
        track=[lookup],
    )
    return {"export_dir": export_dir}


# ------------------------------------------------------------------------------- CLI


def main(argv=None):
    return RECIPE.main(argv)


if __name__ == "__main__":
    sys.exit(main())
