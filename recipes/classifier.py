"""Sentence classification with a (bi)directional RNN of kerasrnn cells.

Model::

    token ids -> Embedding (learned, or initialised from word2vec/GloVe text vectors)
              -> dropout -> stacked, optionally bidirectional RNN (any kerasrnn cell)
              -> sentence vector -> dropout -> Dense + softmax over the classes

The sentence vector (`pooling`) is the last state (for a bidirectional RNN
[h_fwd_T ; h_bwd_1], the two states that have read the whole sentence), or the mean or
the max of the unmasked states of the last layer. A binary task is a two-way softmax
(equivalent to a logistic output).

Command line::

    python -m recipes.classifier train --train data.tsv --test test.tsv --output-dir runs/c
    python -m recipes.classifier evaluate --output-dir runs/c --test other.tsv
    python -m recipes.classifier predict --output-dir runs/c "a gripping film" "dull"
    python -m recipes.classifier export --output-dir runs/c --export-dir runs/c/saved_model

Data (`train`, `valid`, `test`): a TSV file (``label<TAB>text``), a list of files with one
file per class (label = extension, e.g. ``rt-polarity.pos``) or a ``{label: file}``
mapping, or ``tfds:NAME[:SPLIT]`` (e.g. ``tfds:imdb_reviews``). Without a `valid` (or
`test`) set, `valid_fraction` (`test_fraction`) of the training examples are held out,
with a fixed seed. Gzip files are read transparently.
"""
import os
import sys

import keras

from recipes import common

DEFAULTS = dict(
    common.COMMON_DEFAULTS,
    output_dir="runs/classifier",
    train=None,  # see the module docstring for the accepted forms
    valid=None,
    test=None,
    format="auto",  # auto | tsv | class_files | tfds
    encoding="utf-8",  # of local files; the sentence polarity corpus needs cp1252
    tfds_data_dir=None,
    valid_fraction=0.1,  # held out of `train` when `valid` is not given
    test_fraction=0.0,  # held out of `train` when `test` is not given
    lowercase=False,
    max_vocab=30000,  # including the 4 special tokens
    min_freq=1,
    embedding_dim=300,
    embeddings=None,  # word2vec/GloVe text file to initialise the embedding
    freeze_embeddings=False,
    embedding_dropout=0.5,
    cell="lstm",  # lstm | gru | simple | layer_norm_lstm | layer_norm_simple
    cell_options={},  # extra cell arguments, e.g. {peephole: true}
    units=128,
    num_layers=1,
    bidirectional=True,
    dropout=0.5,
    pooling="last",  # last | mean | max
    naive_bayes=0,  # 1 or 2: multiply in a Naive Bayes expert over n-grams up to this order
    naive_bayes_buckets=1000003,  # hash buckets for its bigrams
    naive_bayes_scale=1.0,  # its exponent: 1 is the plain product, < 1 tempers NB
    naive_bayes_counts_valid=False,  # count the validation sentences too
    bucket_boundaries=[10, 20, 30, 45],  # [] for plain batching
)
POOLINGS = ("last", "mean", "max")
FORMATS = ("auto", "tsv", "class_files", "tfds")


@keras.saving.register_keras_serializable(package="kerasrnn")
class MaskedPooling1D(keras.layers.Layer):
    """Mean or max over the unmasked time steps of (batch, time, features).

    mean: (1/|M|) sum_{t in M} h_t; max: max_{t in M} h_t (per feature), where M is the
    set of unmasked steps. A fully masked row (an empty sentence) gives zeros.

    (Ours because Keras' `GlobalMaxPooling1D` ignores the mask, and its
    `GlobalAveragePooling1D` divides by zero, giving NaN, on an empty sentence.)

    Example:

    >>> import numpy as np
    >>> x = np.array([[[1.0], [3.0], [100.0]]], "float32")
    >>> mask = np.array([[True, True, False]])
    >>> float(MaskedPooling1D("max")(x, mask=mask)[0, 0])
    3.0
    """

    def __init__(self, mode="mean", **kwargs):
        super().__init__(**kwargs)
        if mode not in ("mean", "max"):
            raise ValueError(f"`mode` must be 'mean' or 'max', got {mode!r}.")
        self.mode = mode
        self.supports_masking = True

    def call(self, inputs, mask=None):
        from keras import ops

        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")
        weights = ops.cast(mask, inputs.dtype)[..., None]
        count = ops.sum(weights, axis=1)
        if self.mode == "mean":
            return ops.sum(inputs * weights, axis=1) / ops.maximum(count, 1.0)
        lowest = ops.min(inputs) - 1.0
        pooled = ops.max(ops.where(weights > 0, inputs, lowest), axis=1)
        return ops.where(count > 0, pooled, 0.0)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


@keras.saving.register_keras_serializable(package="kerasrnn")
class NaiveBayesExpert(keras.layers.Layer):
    """Multiplies a multinomial Naive Bayes classifier over a sentence's bag of n-grams
    into another model's class probabilities (a product of two experts):

        p(c | x) = softmax_c(log p_model(c | x) + scale * s_c(x)),
        s_c(x) = sum_{g in G(x)} log p(g | c)

    G(x) holds the sentence's unigram ids and (order 2) its bigrams, hashed into
    `buckets` rows as ((a * vocab_size + b) mod buckets) + vocab_size; [PAD] (id 0)
    and n-grams training never had score 0. NB's class prior is uniform: the model's
    probabilities carry one already.

    `estimate` counts the n-grams of the training sentences, once per sentence
    (binarised, as in Wang & Manning 2012, where NB over bigrams scores 79.0% on
    sentence polarity). The table is counted, not trained, and the classifier adds
    the expert only once its RNN is trained: beside NB, which is nearly always right
    and very sure on the sentences it was counted from, the RNN would learn little.
    `scale` tempers NB, whose independence assumption over-counts overlapping
    n-grams (1, the default, is the plain product).

    Inputs: ``[ids (batch, time) int, probabilities (batch, num_classes)]``.
    """

    def __init__(self, vocab_size, num_classes, order=2, buckets=1000003, scale=1.0,
                 **kwargs):
        super().__init__(**kwargs)
        if order not in (1, 2):
            raise ValueError(f"`order` must be 1 or 2, got {order!r}.")
        self.vocab_size, self.num_classes = vocab_size, num_classes
        self.order, self.buckets, self.scale = order, buckets, float(scale)
        self.rows = vocab_size + (buckets if order == 2 else 0)

    def build(self, input_shape=None):
        self.log_likelihood = self.add_weight(
            shape=(self.rows, self.num_classes), initializer="zeros", trainable=False,
            name="log_likelihood")

    def scores(self, ids):
        """s_c(x) for token ids (batch, time): (batch, num_classes)."""
        from keras import ops

        ids = ops.cast(ids, "int64")  # a * vocab_size + b overflows int32 past 46,340 words
        grams, present = [ids], [ops.not_equal(ids, 0)]
        if self.order == 2:
            left, right = ids[:, :-1], ids[:, 1:]
            code = ops.mod(left * self.vocab_size + right, self.buckets) + self.vocab_size
            grams.append(code)
            present.append(ops.logical_and(ops.not_equal(left, 0), ops.not_equal(right, 0)))
        weights = ops.cast(ops.concatenate(present, axis=1), self.compute_dtype)[..., None]
        table = ops.take(self.log_likelihood, ops.concatenate(grams, axis=1), axis=0)
        return ops.sum(table * weights, axis=1)

    def call(self, inputs):
        from keras import ops

        ids, probabilities = inputs
        log_p = ops.log(ops.maximum(ops.cast(probabilities, self.compute_dtype), 1e-30))
        return ops.softmax(log_p + self.scale * self.scores(ids), axis=-1)

    def ngram_rows(self, ids):
        """The table rows of one sentence's n-grams (token ids), as `scores` finds them."""
        ids = [int(i) for i in ids if i]
        rows = list(ids)
        if self.order == 2:
            rows += [(a * self.vocab_size + b) % self.buckets + self.vocab_size
                     for a, b in zip(ids, ids[1:])]
        return rows

    def estimate(self, id_lists, class_ids, smoothing=1.0):
        """Sets log p(g | c) = log((n(g, c) + smoothing) / sum_g' (n(g', c) + smoothing))
        over the n-grams g' seen in training, n(g, c) = the number of sentences of
        class c (integer `class_ids`) among `id_lists` (token ids) that contain g."""
        import numpy as np

        counts = np.zeros((self.rows, self.num_classes))
        for ids, c in zip(id_lists, class_ids):
            counts[np.unique(self.ngram_rows(ids)), c] += 1
        seen = counts.sum(axis=1) > 0
        counts[seen] += smoothing
        log_p = np.log(np.where(seen[:, None], counts, 1.0) / counts.sum(axis=0))
        if not self.built:
            self.build()
        self.log_likelihood.assign(np.where(seen[:, None], log_p, 0.0).astype("float32"))

    def compute_output_shape(self, input_shape):
        return input_shape[1]

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size,
                "num_classes": self.num_classes, "order": self.order,
                "buckets": self.buckets, "scale": self.scale}


# ------------------------------------------------------------------------------ data


def load_examples(config, spec, split):
    """One data spec -> ``(texts, labels)`` (see the module docstring)."""
    from kerasrnn.data import loaders

    fmt = config["format"]
    if fmt not in FORMATS:
        raise common.ConfigError(f"`format` must be one of {FORMATS}, got {fmt!r}.")
    if fmt == "tfds" or (fmt == "auto" and isinstance(spec, str) and spec.startswith("tfds:")):
        name, _, tfds_split = spec.removeprefix("tfds:").partition(":")
        return loaders.load_tfds_classification(
            name, tfds_split or split, data_dir=config["tfds_data_dir"]
        )
    if isinstance(spec, dict) or fmt == "class_files":
        return loaders.load_class_files(spec, config["encoding"])
    files = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if fmt == "auto" and len(files) > 1:
        return loaders.load_class_files(files, config["encoding"])
    texts, labels = [], []
    for path in files:
        t, l = loaders.load_tsv(path, config["encoding"])
        texts += t
        labels += l
    return texts, labels


def holdout(texts, labels, fraction, seed, option="valid_fraction"):
    """Splits off a seeded random `fraction` of the examples: (kept, held_out).
    `option` names the config key the fraction came from, for the error message."""
    import numpy as np

    if not 0 < fraction < 1:
        raise common.ConfigError(f"`{option}` must be in (0, 1), got {fraction}.")
    order = np.random.default_rng(seed).permutation(len(texts))
    n = max(1, int(round(fraction * len(texts))))
    pick = lambda idx: ([texts[i] for i in idx], [labels[i] for i in idx])  # noqa: E731
    return pick(order[n:]), pick(order[:n])


def load_splits(config):
    """The train / valid / test examples the config describes (None where absent)."""
    if config["train"] is None:
        raise common.ConfigError("`train` is required: the training data (see --help).")
    splits = {"train": load_examples(config, config["train"], "train")}
    for name, seed_offset in (("test", 1), ("valid", 2)):
        if config[name] is not None:
            splits[name] = load_examples(config, config[name], name)
        elif config[f"{name}_fraction"]:
            splits["train"], splits[name] = holdout(
                *splits["train"], config[f"{name}_fraction"], config["seed"] + seed_offset,
                option=f"{name}_fraction",
            )
        else:
            splits[name] = None
    return splits


# ----------------------------------------------------------------------------- model


def build_model(config, vocab_size, num_classes, embedding_matrix=None):
    """The classifier as a functional Keras model: int32 ids (batch, time) -> class
    probabilities (batch, classes)."""
    if config["pooling"] not in POOLINGS:
        raise common.ConfigError(
            f"`pooling` must be one of {POOLINGS}, got {config['pooling']!r}."
        )
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    initializer = "uniform"
    dim = config["embedding_dim"]
    if embedding_matrix is not None:
        initializer = keras.initializers.Constant(embedding_matrix)
        dim = embedding_matrix.shape[1]
    x = keras.layers.Embedding(
        vocab_size, dim, mask_zero=True, embeddings_initializer=initializer,
        trainable=not config["freeze_embeddings"], name="embedding",
    )(ids)
    x = keras.layers.Dropout(config["embedding_dropout"], name="embedding_dropout")(x)
    last = config["pooling"] == "last"
    x = common.rnn_stack(
        x, config["cell"], config["units"], config["num_layers"],
        config["bidirectional"], config["dropout"], config["cell_options"],
        return_sequences=not last,
    )
    if not last:
        x = MaskedPooling1D(config["pooling"], name=f"{config['pooling']}_pooling")(x)
    x = keras.layers.Dropout(config["dropout"], name="output_dropout")(x)
    probabilities = keras.layers.Dense(num_classes, activation="softmax", name="classes")(x)
    return keras.Model(ids, probabilities, name="classifier")


class Classifier:
    """A trained classifier with its vocabulary and labels: raw strings in, labels and
    probabilities out. `serve` is the exact function the SavedModel exports."""

    def __init__(self, model, vocabulary, labels, lowercase=False):
        import tensorflow as tf

        self.model = model
        self.vocabulary = vocabulary
        self.labels = list(labels)
        self.lowercase = lowercase
        self._lookup = vocabulary.lookup()
        self._serve = tf.function(
            self.serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
        )

    @classmethod
    def from_run(cls, config):
        """Loads the best checkpoint, vocabulary and labels of a `train` run."""
        from kerasrnn.data import Vocabulary

        out = config["output_dir"]
        return cls(
            common.load_best_model(config),
            Vocabulary.load(os.path.join(out, "vocab.txt")),
            _read_lines(os.path.join(out, "labels.txt")),
            config["lowercase"],
        )

    def serve(self, texts):
        from kerasrnn.data.tokenizers import encode_tokens, split_words
        from kerasrnn.export import class_outputs

        ids = encode_tokens(split_words(texts, self.lowercase), self._lookup)
        return class_outputs(self.model(ids, training=False), self.labels)

    def predict(self, texts, batch_size=256):
        """Labels and probabilities for raw strings (empty strings and unknown words
        are fine: they give an all-masked or [UNK] input)."""
        results = []
        for start in range(0, len(texts), batch_size):
            out = self._serve(list(texts[start:start + batch_size]))
            for label, prob, probs in zip(
                out["label"].numpy(), out["probability"].numpy(), out["probabilities"].numpy()
            ):
                results.append({
                    "label": label.decode("utf-8"),
                    "probability": float(prob),
                    "probabilities": dict(zip(self.labels, map(float, probs))),
                })
        return results

    def evaluate(self, texts, labels):
        """Accuracy and per-class precision/recall/F1 on labelled examples."""
        common.check_labels(self.labels, labels, "evaluation")
        predicted = [p["label"] for p in self.predict(texts)]
        correct = sum(p == g for p, g in zip(predicted, labels))
        return {
            "examples": len(labels),
            "accuracy": correct / len(labels),
            "per_class": common.per_class_scores(labels, predicted, self.labels),
        }

    def export(self, path):
        """Writes a SavedModel: ``serving_default(text: string[batch])`` -> label,
        probability, probabilities, labels."""
        import tensorflow as tf

        from kerasrnn.export import export_saved_model

        signature = [tf.TensorSpec([None], tf.string, name="text")]
        return export_saved_model(
            path, self.model, {"serving_default": (self.serve, signature)},
            track=[self._lookup],
        )


def _read_lines(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"not found: {path} (did `train` run with this output_dir?)")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def _dataset(vocab, tokens, labels, label_names, config, shuffle):
    from kerasrnn.data import sequence_dataset

    index = {label: i for i, label in enumerate(label_names)}
    ids = [vocab.encode(t) or [0] for t in tokens]
    return sequence_dataset(
        ids, [index[label] for label in labels], batch_size=config["batch_size"],
        shuffle=shuffle, seed=config["seed"],
        bucket_boundaries=config["bucket_boundaries"] or None,
    )


# -------------------------------------------------------------------------- commands


def train(config, splits=None, callbacks=()):
    """Trains a classifier as configured and writes to ``config["output_dir"]``:
    ``config.json``, ``vocab.txt``, ``labels.txt``, ``best.keras`` and ``results.json``
    (training history, valid and test scores).

    Args:
        config: a complete config (`common.load_config(DEFAULTS, ...)`).
        splits: optional ``{"train": (texts, labels), "valid": ..., "test": ...}``
            instead of the config's files (the benchmark's cross-validation uses it).
        callbacks: extra Keras callbacks.

    Returns:
        The results dict.
    """
    from kerasrnn.data import Vocabulary
    from kerasrnn.data.loaders import load_word_vectors
    from kerasrnn.data.tokenizers import tokenize

    # First: "mirrored" on CPU must split the device before any TensorFlow op runs.
    strategy = common.distribution_strategy(config["strategy"], config["mirrored_cpus"])
    config = common.for_worker(config, strategy)  # multi_worker: a folder per worker
    common.set_seed(config["seed"])
    splits = splits or load_splits(config)
    texts, labels = splits["train"]
    label_names = sorted(set(labels))
    if len(label_names) < 2:
        raise common.RecipeError(
            f"the training data has a single label {label_names}; a classifier needs 2+."
        )
    for name in ("valid", "test"):
        if splits.get(name):
            common.check_labels(label_names, splits[name][1], name, config[name])

    _check_naive_bayes(config)

    out = config["output_dir"]
    os.makedirs(out, exist_ok=True)
    common.write_json(os.path.join(out, "config.json"), config)
    tokens = tokenize(texts, config["lowercase"])
    vocab = Vocabulary.build(tokens, config["max_vocab"], config["min_freq"])
    vocab.save(os.path.join(out, "vocab.txt"))
    with open(os.path.join(out, "labels.txt"), "w", encoding="utf-8") as f:
        f.write("".join(label + "\n" for label in label_names))
    matrix, found = None, None
    if config["embeddings"]:
        matrix, found = load_word_vectors(config["embeddings"], vocab)

    train_data = _dataset(vocab, tokens, labels, label_names, config, shuffle=True)
    valid_data = None
    if splits.get("valid"):
        valid_tokens = tokenize(splits["valid"][0], config["lowercase"])
        valid_data = _dataset(vocab, valid_tokens, splits["valid"][1], label_names,
                              config, shuffle=False)
    with strategy.scope():
        model = build_model(config, len(vocab), len(label_names), matrix)
        model.compile(optimizer=common.optimizer(config),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    monitor = "val_accuracy" if valid_data is not None else "accuracy"
    history = common.fit(model, config, train_data, valid_data, monitor, "max", callbacks)
    if config["naive_bayes"]:
        counted = [(tokens, labels)]
        if config["naive_bayes_counts_valid"] and valid_data is not None:
            counted.append((valid_tokens, splits["valid"][1]))
        _add_naive_bayes(config, vocab, label_names, counted)

    classifier = Classifier.from_run(config)
    results = {
        "train_examples": len(texts),
        "vocabulary_size": len(vocab),
        "labels": label_names,
        "pretrained_vectors_found": found,
        "replicas": strategy.num_replicas_in_sync,
        "history": history,
    }
    for name in ("valid", "test"):
        if splits.get(name):
            results[name] = classifier.evaluate(*splits[name])
    common.write_json(os.path.join(out, "results.json"), results)
    return results


def _check_naive_bayes(config):
    """Config errors of the Naive Bayes options, before any training time is spent."""
    order, scale = config["naive_bayes"], config["naive_bayes_scale"]
    if order not in (0, 1, 2):
        raise common.ConfigError(f"`naive_bayes` must be 0 (off), 1 or 2, got {order!r}.")
    if scale < 0:  # (its type is checked by common.load_config)
        raise common.ConfigError(f"`naive_bayes_scale` must be >= 0, got {scale!r}.")


def _add_naive_bayes(config, vocab, label_names, counted):
    """Replaces the trained best checkpoint by the product of it and a
    `NaiveBayesExpert` counted on the `(tokens, labels)` splits in `counted`."""
    model = common.load_best_model(config)
    expert = NaiveBayesExpert(len(vocab), model.output.shape[-1], config["naive_bayes"],
                              config["naive_bayes_buckets"], config["naive_bayes_scale"],
                              name="naive_bayes")
    expert.estimate([vocab.encode(t) for tokens, _ in counted for t in tokens],
                    [label_names.index(y) for _, labels in counted for y in labels])
    ids = model.inputs[0]
    combined = keras.Model(ids, expert([ids, model.output]), name="classifier")
    common.save_model(combined, os.path.join(config["output_dir"], "best.keras"))


def _run_train(config, args):
    return train(config)


def _run_evaluate(config, args):
    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    if config["test"] is None:
        raise common.ConfigError("evaluate needs `--test` (the labelled data).")
    texts, labels = load_examples(config, config["test"], "test")
    results = Classifier.from_run(config).evaluate(texts, labels)
    common.write_json(os.path.join(config["output_dir"], "evaluation.json"), results)
    return results


def _predict_arguments(parser):
    parser.add_argument("texts", nargs="*", help="sentences to classify")
    parser.add_argument("--input", help="a file with one sentence per line")


def _run_predict(config, args):
    from kerasrnn.data.loaders import read_lines

    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    texts = list(args.texts)
    if args.input:
        texts += [line for _, line in read_lines(args.input, config["encoding"])]
    predictions = Classifier.from_run(config).predict(texts)
    return [{"text": t, **p} for t, p in zip(texts, predictions)]


COMMANDS = {
    "train": ("train a classifier and evaluate it", None, _run_train),
    "evaluate": ("evaluate a trained classifier on --test", None, _run_evaluate),
    "predict": ("classify sentences", _predict_arguments, _run_predict),
    "export": ("export a SavedModel taking raw strings", common.export_arguments,
               common.export_command(DEFAULTS, Classifier.from_run)),
}


def main(argv=None):
    return common.main(argv, "recipes.classifier", __doc__.splitlines()[0], DEFAULTS,
                       COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
