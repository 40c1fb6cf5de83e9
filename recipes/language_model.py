"""Recurrent language model: word or character level, stateful truncated BPTT or padded
sentences, perplexity, generation and SavedModel export.

    embedding -> dropout -> [RNN(cell) -> dropout] x num_layers -> softmax over the vocabulary

(dropout on the non-recurrent connections only, Zaremba et al. 2014; optionally the
output layer reuses the embedding matrix, Press & Wolf 2017). Trained on shifted targets
with masked cross-entropy, by SGD with the paper's schedule (lr constant for
`lr_decay_after` epochs, then multiplied by `lr_decay` every epoch) or Adam, gradients
clipped by global norm.

Command line::

    python -m recipes.language_model train    --output-dir runs/ptb [--config FILE] [--flags]
    python -m recipes.language_model evaluate --output-dir runs/ptb [--split test]
    python -m recipes.language_model generate --output-dir runs/ptb --prompt "the market" \
        [--method greedy|sample|beam] [--temperature 0.8] [--top-k 40] [--top-p 0.9]
    python -m recipes.language_model export   --output-dir runs/ptb --export-dir runs/ptb/saved

Ready configs (run from the repository root; the data paths are relative to it):
`recipes/configs/ptb_small.yaml` and `recipes/configs/ptb_medium.yaml`, Zaremba et al.'s
"small" (CPU) and "medium" (GPU) Penn Treebank models, e.g.
``python -m recipes.language_model train --config recipes/configs/ptb_small.yaml``.

Perplexity is exp(mean negative log-likelihood per token) over the whole stream, every
`[END]` (`<eos>`) counted; at character level bits per character = mean NLL / ln 2.
"""
import math
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from recipes.common import (  # noqa: E402
    COMMON_DEFAULTS,
    AtomicBackupAndRestore,
    AtomicModelCheckpoint,
    ConfigError,
    RecipeError,
    atomic_path,
    distribution_strategy,
    for_worker,
    main as run_cli,
    make_cell,
    saved_config,
    set_seed,
    read_json,
    write_json,
)

PTB = "corpus:ptb"  # kerasrnn.datasets: $KERASRNN_DATA/ptb, the cache, or a download

DEFAULTS = dict(COMMON_DEFAULTS)
DEFAULTS.update(
    {
        "output_dir": "runs/language_model",
        # data
        "train_file": f"{PTB}/ptb.train.txt",
        "valid_file": f"{PTB}/ptb.valid.txt",
        "test_file": f"{PTB}/ptb.test.txt",
        "level": "word",  # "word" or "char"
        "unk_token": "<unk>",  # the corpus' own rare-word marker, mapped to [UNK]
        "max_vocab": 0,  # 0: every training token (with min_freq)
        "min_freq": 1,
        "batching": "stream",  # "stream" (stateful truncated BPTT) or "sentences"
        "batch_size": 20,
        "steps": 20,  # unrolled steps per window ("stream")
        "max_sentence_length": 0,  # cut longer sentences ("sentences"); 0: no limit
        # model (Zaremba et al.'s "small" configuration by default)
        "cell": "lstm",
        "units": 200,
        "num_layers": 2,
        "embedding_dim": 0,  # 0: the same as units
        "dropout": 0.0,
        "tie_embeddings": False,
        "init_scale": 0.1,  # weights uniform in [-s, s]; 0: Keras' initializers
        "cell_options": {},
        "unroll": False,
        "jit_compile": False,
        # training
        "optimizer": "sgd",  # "sgd" or "adam"
        "learning_rate": 1.0,
        "lr_decay": 0.5,
        "lr_decay_after": 4,  # epochs at the initial rate before decaying
        "clipnorm": 5.0,  # global gradient norm; 0 disables clipping
        "loss_reduction": "sum_over_time",  # as the paper: sum over steps, mean over batch
        "epochs": 13,
        "patience": 0,
        "evaluate_test_each_epoch": False,
        # generation and export
        "prompt": "",
        "method": "greedy",  # "greedy", "sample" or "beam"
        "gen_length": 30,
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 0.0,
        "beam_size": 5,
        "length_normalization": "average",
    }
)


# ------------------------------------------------------------------------------ data


def load_data(config, vocabulary=None):
    """Reads the corpora and builds (or reuses) the vocabulary."""
    from kerasrnn.data.language_model import build_vocabulary, read_corpus

    if config["level"] not in ("word", "char"):
        raise ConfigError(f"`level` must be 'word' or 'char', got {config['level']!r}.")
    read = lambda path: read_corpus(path, config["level"], config["unk_token"])  # noqa: E731
    splits = {"train": read(config["train_file"])}
    for split in ("valid", "test"):
        if config[f"{split}_file"]:
            splits[split] = read(config[f"{split}_file"])
    if vocabulary is None:
        vocabulary = build_vocabulary(
            splits["train"], max_size=config["max_vocab"] or None, min_freq=config["min_freq"]
        )
    return splits, vocabulary


def batches(config, sentences, vocabulary, batch_size, shuffle=False, source=None):
    """`(inputs, targets)` numpy windows ("stream") or a padded dataset ("sentences").
    `source` (the file) names the data in errors: a `batch_size x steps` window longer
    than the corpus is a `RecipeError`, which the command line reports in one line."""
    from kerasrnn.data import language_model as lm_data

    if config["batching"] == "stream":
        for key in ("batch_size", "steps"):
            if config[key] < 1:
                raise ConfigError(f"`{key}` must be a positive integer, got {config[key]!r}.")
        stream = lm_data.encode_stream(sentences, vocabulary)
        try:
            return lm_data.stream_windows(stream, batch_size, config["steps"])
        except ValueError as error:  # kerasrnn.data cannot raise the recipes' errors
            raise RecipeError(f"{source or 'the corpus'}: {error}") from None
    if config["batching"] == "sentences":
        return lm_data.sentence_dataset(
            sentences, vocabulary, batch_size, shuffle=shuffle, seed=config["seed"],
            max_length=config["max_sentence_length"] or None,
        )
    raise ConfigError(
        f"`batching` must be 'stream' or 'sentences', got {config['batching']!r}."
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
            "`loss_reduction` must be 'sum_over_time' or 'mean', got "
            f"{config['loss_reduction']!r}."
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

    units, scale = config["units"], config["init_scale"]
    emb_dim = config["embedding_dim"] or units
    init = (lambda: keras.initializers.RandomUniform(-scale, scale, seed=config["seed"])) if scale else None
    if config["tie_embeddings"] and emb_dim != units:
        raise ConfigError(
            f"`tie_embeddings` needs embedding_dim == units, got embedding_dim={emb_dim}, "
            f"units={units}."
        )
    cell_options = dict(config["cell_options"])
    if scale:
        cell_options.setdefault("kernel_initializer", init())
        cell_options.setdefault("recurrent_initializer", init())
        if config["cell"] in ("lstm", "layer_norm_lstm"):
            cell_options.setdefault("unit_forget_bias", False)

    inputs = keras.Input(batch_shape=(batch_size, None), dtype="int32", name="tokens")
    embedding_options = dict(
        mask_zero=True, embeddings_initializer=init() if scale else "uniform", name="embedding"
    )
    if config["tie_embeddings"]:
        embedding = keras_hub.layers.ReversibleEmbedding(
            vocab_size, emb_dim, tie_weights=True, **embedding_options
        )
    else:
        embedding = keras.layers.Embedding(vocab_size, emb_dim, **embedding_options)
    x = embedding(inputs)
    x = keras.layers.Dropout(config["dropout"], name="dropout_in")(x)
    for i in range(config["num_layers"]):
        cell = make_cell(config["cell"], units, **cell_options)
        x = keras.layers.RNN(
            cell, return_sequences=True, stateful=stateful, unroll=config["unroll"],
            name=f"rnn_{i}",
        )(x)
        x = keras.layers.Dropout(config["dropout"], name=f"dropout_{i}")(x)
    if config["tie_embeddings"]:
        logits = embedding(x, reverse=True)
    else:
        logits = keras.layers.Dense(
            vocab_size, kernel_initializer=init() if scale else "glorot_uniform",
            name="logits",
        )(x)
    return keras.Model(inputs, logits, name="language_model")


def rnn_layers(model):
    return [layer for layer in model.layers if layer.name.startswith("rnn_")]


def compile_model(model, config):
    import keras
    import keras_hub

    clip = config["clipnorm"] or None
    if config["optimizer"] == "sgd":
        optimizer = keras.optimizers.SGD(config["learning_rate"], global_clipnorm=clip)
    elif config["optimizer"] == "adam":
        optimizer = keras.optimizers.Adam(config["learning_rate"], global_clipnorm=clip)
    else:
        raise ConfigError(f"`optimizer` must be 'sgd' or 'adam', got {config['optimizer']!r}.")
    model.compile(
        optimizer=optimizer,
        loss=make_loss(config),
        metrics=[keras_hub.metrics.Perplexity(from_logits=True, mask_token_id=0, name="perplexity")],
        jit_compile=config["jit_compile"],
    )
    return model


def learning_rate(config, epoch):
    """The rate of (0-based) `epoch`: lr * lr_decay ** max(0, epoch + 1 - lr_decay_after)."""
    return config["learning_rate"] * config["lr_decay"] ** max(0, epoch + 1 - config["lr_decay_after"])


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

    for layer in rnn_layers(model):
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


class EpochEvaluation(keras.callbacks.Callback):
    """Resets the RNN states at every epoch start (stream mode: each epoch reads the
    stream from its beginning) and, after every epoch, measures the perplexity of each
    split in `splits` with `eval_model` (given the current weights), into `logs` as
    `<split>_perplexity`; prints one line per epoch and keeps them in `rows` (`rows`
    given: those of the epochs before a resume). `train_seconds` of a row is the
    training pass only; the evaluation that follows is `eval_seconds`."""

    def __init__(self, config, eval_model, splits, rows=()):
        super().__init__()
        self.config, self.eval_model, self.splits = config, eval_model, splits
        self.started = None
        self.rows = list(rows)

    def on_epoch_begin(self, epoch, logs=None):
        self.started = time.time()
        for layer in rnn_layers(self.model):
            if layer.stateful:
                layer.reset_state()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        row = {
            "epoch": epoch + 1,
            "learning_rate": learning_rate(self.config, epoch),
            "train_perplexity": float(logs.get("perplexity", float("nan"))),
            "train_seconds": time.time() - self.started,
        }
        evaluation_started = time.time()
        self.eval_model.set_weights(self.model.get_weights())
        for split, data in self.splits.items():
            row[f"{split}_perplexity"] = perplexity(self.eval_model, data, self.config)["perplexity"]
            logs[f"{split}_perplexity"] = row[f"{split}_perplexity"]
        row["eval_seconds"] = time.time() - evaluation_started
        # An epoch re-run after a resume replaces its row (and any stale later one).
        self.rows = [r for r in self.rows if r["epoch"] < row["epoch"]] + [row]
        print("epoch " + " ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
        ), flush=True)


class ResumeState(keras.callbacks.Callback):
    """Saves, after every epoch, what `BackupAndRestore` does not restore: the epoch rows
    of `evaluation` and the best validation perplexity of `checkpoint` (else a resumed
    run would forget earlier epochs, and a worse epoch could overwrite the best
    weights). It lives in the backup folder, so it goes when training completes; place
    it after the checkpoint and before `BackupAndRestore`."""

    def __init__(self, path, evaluation, checkpoint=None):
        super().__init__()
        self.path, self.evaluation, self.checkpoint = path, evaluation, checkpoint

    def on_epoch_end(self, epoch, logs=None):
        best = self.checkpoint.best if self.checkpoint is not None else None
        write_json(self.path + ".tmp", {
            "rows": self.evaluation.rows, "best": None if best is None else float(best),
        })
        os.replace(self.path + ".tmp", self.path)  # never a half-written file

    @staticmethod
    def load(path):
        """`(rows, best)` of an interrupted run; `([], None)` when there is none."""
        if not os.path.exists(path):
            return [], None
        state = read_json(path)
        return state["rows"], state["best"]


def paths(config):
    out = config["output_dir"]
    return {
        "vocabulary": os.path.join(out, "vocabulary.txt"),
        "weights": os.path.join(out, "model.weights.h5"),
        "best": os.path.join(out, "best.weights.h5"),
        "config": os.path.join(out, "config.json"),
        "results": os.path.join(out, "results.json"),
        "backup": os.path.join(out, "backup"),
        "resume_state": os.path.join(out, "backup", "epochs.json"),
    }


def train(config, callbacks=()):
    """Trains, evaluates valid/test perplexity after each epoch, saves the vocabulary,
    the weights (final and best by validation perplexity) and `results.json`.
    Re-running an interrupted run with the same config resumes it (`BackupAndRestore`),
    epoch rows and best score included. `callbacks` are added to the standard ones.

    `results["train_seconds"]` and `tokens_per_second` count the training passes only
    (summed over the epochs, before a resume too); `wall_seconds` is this call's
    `fit`, per-epoch evaluation included."""
    import keras

    if config["strategy"] in ("mirrored", "multi_worker") and config["batching"] == "stream":
        # A stateful RNN carries each row's state into the next window of the same row;
        # split over replicas, its fixed-batch state variables would be mirrored, not
        # kept per row.
        raise ConfigError(
            f"`strategy: {config['strategy']}` does not work with `batching: stream` (stateful "
            "windows carry each row's RNN state, which replicas cannot share); use "
            "`batching: sentences` or `strategy: default`."
        )
    set_seed(config["seed"])
    strategy = distribution_strategy(config["strategy"], config["mirrored_cpus"])
    config = for_worker(config, strategy)  # multi_worker: a folder per worker
    splits, vocabulary = load_data(config)
    files = paths(config)
    os.makedirs(config["output_dir"], exist_ok=True)
    vocabulary.save(files["vocabulary"])
    write_json(files["config"], config)
    batch = config["batch_size"]
    stream = config["batching"] == "stream"
    train_data = batches(config, splits["train"], vocabulary, batch, shuffle=True,
                         source=config["train_file"])
    eval_splits = {"valid": splits["valid"]} if "valid" in splits else {}
    if config["evaluate_test_each_epoch"] and "test" in splits:
        eval_splits["test"] = splits["test"]
    eval_data = {
        k: batches(config, v, vocabulary, batch, source=config[f"{k}_file"])
        for k, v in eval_splits.items()
    }

    with strategy.scope():
        model = compile_model(
            build_model(config, len(vocabulary), batch if stream else None, stream), config
        )
    eval_model = build_model(config, len(vocabulary), batch if stream else None, stream)
    rows, best = ResumeState.load(files["resume_state"])
    evaluation = EpochEvaluation(config, eval_model, eval_data, rows)
    # Order matters at each epoch end: the evaluation puts valid_perplexity in the logs
    # for the checkpoint, and the resume state is written before the backup.
    fit_callbacks = [
        evaluation,
        keras.callbacks.LearningRateScheduler(lambda epoch: learning_rate(config, epoch)),
    ]
    checkpoint = None
    if eval_data:
        checkpoint = AtomicModelCheckpoint(
            files["best"], monitor="valid_perplexity", mode="min", save_best_only=True,
            save_weights_only=True, initial_value_threshold=best,
        )
        fit_callbacks.append(checkpoint)
        if config["patience"]:
            fit_callbacks.append(keras.callbacks.EarlyStopping(
                monitor="valid_perplexity", mode="min", patience=config["patience"],
                restore_best_weights=True,
            ))
    fit_callbacks += [
        ResumeState(files["resume_state"], evaluation, checkpoint),
        AtomicBackupAndRestore(files["backup"]),
        keras.callbacks.TerminateOnNaN(),
    ]
    if config["tensorboard"]:
        fit_callbacks.append(keras.callbacks.TensorBoard(os.path.join(config["output_dir"], "logs")))
    fit_callbacks += list(callbacks)
    started = time.time()
    if stream:
        x, y = train_data
        model.fit(x, y, batch_size=batch, shuffle=False, epochs=config["epochs"],
                  callbacks=fit_callbacks, verbose=config["verbose"])
        train_tokens = int((y != 0).sum())
    else:
        model.fit(train_data, epochs=config["epochs"], callbacks=fit_callbacks, shuffle=False,
                  verbose=config["verbose"])
        train_tokens = sum(len(s) + 1 for s in splits["train"])
    wall_seconds = time.time() - started
    with atomic_path(files["weights"]) as partial:
        model.save_weights(partial)
    train_seconds = sum(row["train_seconds"] for row in evaluation.rows)
    results = {
        "epochs": evaluation.rows,
        "train_seconds": train_seconds,
        "tokens_per_second": (
            train_tokens * len(evaluation.rows) / train_seconds if train_seconds else None
        ),
        "wall_seconds": wall_seconds,
        "replicas": int(strategy.num_replicas_in_sync),
        "vocabulary_size": len(vocabulary),
        "parameters": int(model.count_params()),
    }
    results.update(evaluate(config, splits=splits, vocabulary=vocabulary))
    write_json(files["results"], results)
    return results


def load_trained(config, batch_size=None, stateful=False):
    """The vocabulary and a model with the trained weights (best if there is one)."""
    from kerasrnn.data.vocabulary import Vocabulary

    files = paths(config)
    vocabulary = Vocabulary.load(files["vocabulary"])
    model = build_model(config, len(vocabulary), batch_size, stateful)
    weights = files["best"] if os.path.exists(files["best"]) else files["weights"]
    if not os.path.exists(weights):
        raise FileNotFoundError(f"no trained weights in {config['output_dir']}; run `train` first.")
    model.load_weights(weights)
    return vocabulary, model


def evaluate(config, splits=None, vocabulary=None, names=("valid", "test")):
    """Valid and test perplexity (and bits per character at character level) of the
    trained model, over each whole stream."""
    stream = config["batching"] == "stream"
    batch = config["batch_size"]
    vocabulary, model = load_trained(config, batch if stream else None, stream)
    if splits is None:
        splits, _ = load_data(config, vocabulary)
    results = {}
    for split in names:
        if split in splits:
            data = batches(config, splits[split], vocabulary, batch,
                           source=config[f"{split}_file"])
            result = perplexity(model, data, config)
            if config["level"] == "char":
                result["bits_per_character"] = result.pop("bits_per_token")
            results[split] = result
    return results


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
        return [[ops.where(keep, n, o) for n, o in zip(ns, os_)] for ns, os_ in zip(new_states, states)]

    states = ops.fori_loop(0, ops.shape(ids)[1] - 1, body, initial_states(batch_size))
    last = ops.take_along_axis(ids, (lengths - 1)[:, None], axis=1)[:, 0]
    return states, last


def decode(config, step, states, start, max_length, sampler=None):
    """Continuation ids `(batch, max_length)` with the configured method."""
    from kerasrnn import decoding
    from kerasrnn.data.vocabulary import END_ID

    method = config["method"]
    if method == "greedy":
        return decoding.greedy_search(step, start, states, max_length, end_token=END_ID).tokens
    if method == "sample":
        sampler = sampler or decoding.make_sampler(
            config["temperature"], config["top_k"] or None, config["top_p"] or None,
            seed=config["seed"],
        )
        return decoding.decode_with_sampler(sampler, step, start, states, max_length, END_ID).tokens
    if method == "beam":
        result = decoding.beam_search(
            step, start, states, max_length, end_token=END_ID, beam_size=config["beam_size"],
            n_best=1, length_normalization=config["length_normalization"] or None,
        )
        return result.tokens[:, 0]
    raise ConfigError(f"`method` must be 'greedy', 'sample' or 'beam', got {method!r}.")


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
        results.append({
            "prompt": prompt,
            "continuation": joiner.join(words),
            "unknown_prompt_tokens": int(sum(i == 1 for i in sequence)),
        })
    return results


# ---------------------------------------------------------------------------- export


def export(config, export_dir):
    """A SavedModel with `serving_default(prompt: tf.string[batch]) ->
    {"continuation": tf.string[batch]}`: tokenisation, the prompt pass, decoding
    (`method`: greedy or beam; sampling is not exported) and detokenisation in the graph."""
    import tensorflow as tf

    from kerasrnn.data.vocabulary import END_ID, PAD_ID
    from kerasrnn.export import export_saved_model, ids_to_strings

    if config["method"] not in ("greedy", "beam"):
        raise ConfigError(f"export supports method 'greedy' or 'beam', got {config['method']!r}.")
    vocabulary, model = load_trained(config)
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

    signature = [tf.TensorSpec([None], tf.string, name="prompt")]
    export_saved_model(export_dir, model, {"serving_default": (serve, signature)}, track=[lookup])
    return {"export_dir": export_dir}


# ------------------------------------------------------------------------------- CLI


def _stored(config, args):
    return saved_config(DEFAULTS, config["output_dir"], args.overrides)


def _evaluate_command(config, args):
    config = _stored(config, args)
    return evaluate(config, names=(args.split,) if args.split else ("valid", "test"))


def _generate_command(config, args):
    config = _stored(config, args)
    return generate(config, args.prompts or None)


def _export_command(config, args):
    config = _stored(config, args)
    return export(config, args.export_dir or os.path.join(config["output_dir"], "saved_model"))


COMMANDS = {
    "train": ("train a language model", None, lambda config, args: train(config)),
    "evaluate": (
        "perplexity of a trained model on the valid/test streams",
        lambda p: p.add_argument("--split", choices=["valid", "test"]),
        _evaluate_command,
    ),
    "generate": (
        "continue prompts (--prompt, or several positional prompts)",
        lambda p: p.add_argument("prompts", nargs="*", help="prompts (default: --prompt)"),
        _generate_command,
    ),
    "export": (
        "export a string-in/string-out SavedModel",
        lambda p: p.add_argument("--export-dir", help="default: <output_dir>/saved_model"),
        _export_command,
    ),
}


def main(argv=None):
    return run_cli(
        sys.argv[1:] if argv is None else argv, "python -m recipes.language_model",
        __doc__.splitlines()[0], DEFAULTS, COMMANDS,
    )


if __name__ == "__main__":
    sys.exit(main())
