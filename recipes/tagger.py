"""Sequence tagging (POS, NER, chunking) with a bidirectional RNN of kerasrnn cells.

Model::

    words  -> word embedding ----------------------------------------.
    chars  -> char embedding -> BiRNN over each word's characters ---+-> concat -> dropout
           -> stacked BiRNN (any kerasrnn cell) -> dropout -> Dense + softmax per token

The character BiRNN (its final states [h_fwd ; h_bwd] per word; `char_dim: 0` turns it
off) gives unknown and rare words a representation built from their spelling. The loss
and the accuracy are masked: padding tokens count in neither.

Evaluation reports token accuracy, per-tag precision/recall/F1 and, when the tags follow
a BIO scheme (``B-X``, ``I-X``, ``O``), entity-level precision/recall/F1 (an entity is
correct only when its type and both boundaries are).

Command line::

    python -m recipes.tagger train --train train.conllu --valid dev.conllu --test test.conllu
    python -m recipes.tagger evaluate --output-dir runs/tagger --test other.conllu
    python -m recipes.tagger predict --output-dir runs/tagger "The cat sat ." "Hi !"
    python -m recipes.tagger export --output-dir runs/tagger

Data: CoNLL-U (`column`: upos or xpos), CoNLL-2003-style columns (`token_column`,
`tag_column`), or ``tfds:NAME[:SPLIT]`` (e.g. ``tfds:conll2003`` with `tfds_tags_key`
ner); gzip files are read transparently.
"""
import os
import re
import sys

import keras
from keras import ops

from recipes import common

DEFAULTS = dict(
    common.COMMON_DEFAULTS,
    output_dir="runs/tagger",
    train=None,
    valid=None,
    test=None,
    format="auto",  # auto (by extension: .conllu -> conllu, else columns) | conllu | columns | tfds
    column="upos",  # CoNLL-U: upos or xpos
    token_column=0,  # column files
    tag_column=-1,
    encoding="utf-8",
    tfds_data_dir=None,
    tfds_tags_key="ner",
    lowercase=True,  # of the word-embedding input; characters keep their case
    max_vocab=50000,
    min_freq=1,
    embedding_dim=100,
    word_dropout=0.1,  # training: replace words by [UNK] with this probability
    embedding_dropout=0.25,
    char_dim=32,  # 0: no character features
    char_units=32,
    max_chars=50,  # longer words are cut (keeps batches of URLs small)
    cell="lstm",
    cell_options={},
    units=128,
    num_layers=1,
    dropout=0.33,
    bucket_boundaries=[10, 20, 30, 50],
    batch_size=32,
    epochs=20,
    patience=3,
)
FORMATS = ("auto", "conllu", "columns", "tfds")


@keras.saving.register_keras_serializable(package="kerasrnn")
class MergeBatchTime(keras.layers.Layer):
    """(batch, time, ...) -> (batch * time, ...): runs a per-word network (e.g. the
    character RNN) on all words of all sentences at once. Undo with `SplitBatchTime`."""

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1,) + tuple(shape[2:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (None,) + tuple(input_shape[2:])


@keras.saving.register_keras_serializable(package="kerasrnn")
class SplitBatchTime(keras.layers.Layer):
    """``[values (batch * time, ...), reference (batch, time, ...)]`` ->
    (batch, time, ...): the inverse of `MergeBatchTime`."""

    def call(self, inputs):
        values, reference = inputs
        shape = ops.shape(reference)
        return ops.reshape(values, (shape[0], shape[1]) + tuple(ops.shape(values)[1:]))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        values, reference = input_shape
        return (reference[0], reference[1]) + tuple(values[1:])


@keras.saving.register_keras_serializable(package="kerasrnn")
class WordDropout(keras.layers.Layer):
    """In training, replaces each real word id by [UNK] (id 1) with probability `rate`
    (padding, id 0, stays), so that the [UNK] embedding is trained on words in context
    and the model learns to lean on the character features for unknown words."""

    def __init__(self, rate=0.1, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"`rate` must be in [0, 1), got {rate}.")
        self.rate, self.seed = rate, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, ids, training=False):
        if not training or not self.rate:
            return ids
        drop = keras.random.uniform(ops.shape(ids), seed=self.seed_generator) < self.rate
        return ops.where(ops.logical_and(drop, ids != 0), ops.ones_like(ids), ids)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


# ------------------------------------------------------------------------------ data


def load_examples(config, spec, split):
    """One data spec -> ``(sentences, tags)``."""
    from kerasrnn.data import loaders

    fmt = config["format"]
    if fmt not in FORMATS:
        raise common.ConfigError(f"`format` must be one of {FORMATS}, got {fmt!r}.")
    if fmt == "tfds" or (fmt == "auto" and str(spec).startswith("tfds:")):
        name, _, tfds_split = str(spec).removeprefix("tfds:").partition(":")
        return loaders.load_tfds_tagging(
            name, tfds_split or split, data_dir=config["tfds_data_dir"],
            tags_key=config["tfds_tags_key"],
        )
    path = os.fspath(spec)
    conllu = fmt == "conllu" or (fmt == "auto" and ".conllu" in os.path.basename(path))
    if conllu:
        return loaders.load_conllu(path, config["column"], config["encoding"])
    return loaders.load_conll_columns(
        path, config["token_column"], config["tag_column"], config["encoding"]
    )


def load_splits(config):
    if config["train"] is None:
        raise common.ConfigError("`train` is required: the training data (see --help).")
    return {
        name: load_examples(config, config[name], name) if config[name] else None
        for name in ("train", "valid", "test")
    }


def lowercase_tokens(sentences):
    """Lower-cases tokens with TensorFlow's Unicode lower-casing, exactly as the
    exported model does (Python's `str.lower` differs on a few characters)."""
    import tensorflow as tf

    flat = [t for s in sentences for t in s]
    if not flat:
        return [list(s) for s in sentences]
    lowered = iter(tf.strings.lower(flat, encoding="utf-8").numpy())
    return [[next(lowered).decode("utf-8") for _ in s] for s in sentences]


class Encoder:
    """Token lists -> model inputs, in Python (for training) with the same vocabulary
    and character handling as the TensorFlow serving function."""

    def __init__(self, words, chars, lowercase, max_chars):
        self.words, self.chars = words, chars
        self.lowercase, self.max_chars = lowercase, max_chars

    def inputs(self, sentences):
        keys = lowercase_tokens(sentences) if self.lowercase else sentences
        inputs = {"word_ids": [self.words.encode(s) for s in keys]}
        if self.chars is not None:
            inputs["char_ids"] = [
                [self.chars.encode(list(t)[: self.max_chars]) for t in s] for s in sentences
            ]
        return inputs


# ----------------------------------------------------------------------------- model


def build_model(config, word_vocab_size, char_vocab_size, num_tags):
    """The tagger as a functional Keras model: ``{"word_ids": (batch, time),
    "char_ids": (batch, time, chars)}`` -> tag probabilities (batch, time, tags)."""
    word_ids = keras.Input((None,), dtype="int32", name="word_ids")
    inputs = {"word_ids": word_ids}
    x = WordDropout(config["word_dropout"], seed=config["seed"], name="word_dropout")(word_ids)
    x = keras.layers.Embedding(
        word_vocab_size, config["embedding_dim"], mask_zero=True, name="word_embedding"
    )(x)
    if config["char_dim"]:
        char_ids = keras.Input((None, None), dtype="int32", name="char_ids")
        inputs["char_ids"] = char_ids
        c = MergeBatchTime(name="words_of_batch")(char_ids)
        c = keras.layers.Embedding(
            char_vocab_size, config["char_dim"], mask_zero=True, name="char_embedding"
        )(c)
        c = common.rnn_stack(c, config["cell"], config["char_units"], 1, True,
                             cell_options=config["cell_options"],
                             return_sequences=False, name="char_rnn")
        c = SplitBatchTime(name="char_features")([c, char_ids])
        x = keras.layers.Concatenate(name="word_features")([x, c])
    x = keras.layers.Dropout(config["embedding_dropout"], name="embedding_dropout")(x)
    x = common.rnn_stack(x, config["cell"], config["units"], config["num_layers"], True,
                         config["dropout"], config["cell_options"])
    x = keras.layers.Dropout(config["dropout"], name="output_dropout")(x)
    probabilities = keras.layers.Dense(num_tags, activation="softmax", name="tags")(x)
    return keras.Model(inputs, probabilities, name="tagger")


# --------------------------------------------------------------------------- metrics

_BIO = re.compile(r"^(O|[BI]-.+)$")


def is_bio(tags):
    """Whether every tag is ``O``, ``B-X`` or ``I-X``."""
    tags = set(tags)
    return bool(tags) and all(_BIO.match(t) for t in tags) and any(t != "O" for t in tags)


def bio_entities(tags):
    """The entities of one BIO-tagged sentence as a set of (start, end, type), end
    exclusive. As in conlleval, an ``I-X`` that does not continue an X entity starts a
    new one."""
    entities, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, label = tag.partition("-")
        continues = prefix == "I" and kind == label
        if start is not None and not continues:
            entities.add((start, i, kind))
            start, kind = None, None
        if prefix in ("B", "I") and not continues:
            start, kind = i, label
    return entities


def tagging_scores(gold, predicted, tag_names):
    """Token accuracy, per-tag P/R/F1 and (BIO tags) entity-level P/R/F1."""
    flat_gold = [t for s in gold for t in s]
    flat_pred = [t for s in predicted for t in s]
    correct = sum(g == p for g, p in zip(flat_gold, flat_pred))
    scores = {
        "sentences": len(gold),
        "tokens": len(flat_gold),
        "accuracy": correct / max(len(flat_gold), 1),
        "per_tag": common.per_class_scores(flat_gold, flat_pred, tag_names),
    }
    if is_bio(tag_names):
        found = tp = total = 0
        for g, p in zip(gold, predicted):
            g, p = bio_entities(g), bio_entities(p)
            tp, found, total = tp + len(g & p), found + len(p), total + len(g)
        precision = tp / found if found else 0.0
        recall = tp / total if total else 0.0
        scores["entities"] = {
            "precision": precision, "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if tp else 0.0,
            "gold": total, "predicted": found,
        }
    return scores


# --------------------------------------------------------------------------- tagger


class Tagger:
    """A trained tagger with its vocabularies and tag set: tokenized sentences in, tags
    and probabilities out. `serve` is the exact function the SavedModel exports."""

    def __init__(self, model, words, chars, tags, lowercase=True, max_chars=50):
        import tensorflow as tf

        self.model = model
        self.encoder = Encoder(words, chars, lowercase, max_chars)
        self.tags = list(tags)
        self._word_lookup = words.lookup()
        self._char_lookup = chars.lookup() if chars is not None else None
        self._serve = tf.function(self.serve, input_signature=[
            tf.TensorSpec([None, None], tf.string, name="tokens")])

    @classmethod
    def from_run(cls, config):
        from kerasrnn.data import Vocabulary

        out = config["output_dir"]
        chars = None
        if config["char_dim"]:
            chars = Vocabulary.load(os.path.join(out, "chars.txt"))
        return cls(
            common.load_best_model(config),
            Vocabulary.load(os.path.join(out, "vocab.txt")),
            chars,
            Vocabulary.load(os.path.join(out, "tags.txt")).tokens[4:],
            config["lowercase"],
            config["max_chars"],
        )

    def serve(self, tokens):
        """tokens: (batch, time) strings, right-padded with "" -> tags (batch, time),
        "" on padding; probability; lengths."""
        import tensorflow as tf

        from kerasrnn.data.tokenizers import encode_chars, encode_tokens
        from kerasrnn.export import sequence_outputs

        tokens = tf.convert_to_tensor(tokens, tf.string)
        lengths = tf.reduce_sum(tf.cast(tokens != "", tf.int32), axis=1)
        keys = tf.strings.lower(tokens, encoding="utf-8") if self.encoder.lowercase else tokens
        inputs = {"word_ids": encode_tokens(keys, self._word_lookup)}
        if self._char_lookup is not None:
            chars = tf.strings.substr(tokens, 0, self.encoder.max_chars, unit="UTF8_CHAR")
            inputs["char_ids"] = encode_chars(chars, self._char_lookup)
        probabilities = self.model(inputs, training=False)
        return sequence_outputs(probabilities, self.tags, lengths)

    def serve_text(self, sentences):
        """Whitespace-tokenized sentences (batch,) -> the outputs of `serve`."""
        from kerasrnn.data.tokenizers import split_words

        return self.serve(split_words(sentences).to_tensor(default_value=""))

    def predict(self, sentences, batch_size=128):
        """Tags and their probabilities for tokenized sentences (lists of str); an
        empty sentence gets no tags, unknown words get tags from their characters."""
        results = []
        for start in range(0, len(sentences), batch_size):
            batch = [list(s) for s in sentences[start:start + batch_size]]
            width = max([len(s) for s in batch] + [1])
            out = self._serve([s + [""] * (width - len(s)) for s in batch])
            tags, probs = out["tags"].numpy(), out["probability"].numpy()
            for i, sentence in enumerate(batch):
                n = len(sentence)
                results.append({
                    "tags": [t.decode("utf-8") for t in tags[i, :n]],
                    "probabilities": [float(p) for p in probs[i, :n]],
                })
        return results

    def evaluate(self, sentences, gold_tags):
        common.check_labels(self.tags, [t for s in gold_tags for t in s], "evaluation")
        predicted = [p["tags"] for p in self.predict(sentences)]
        return tagging_scores(gold_tags, predicted, self.tags)

    def export(self, path):
        """Writes a SavedModel with two signatures: ``serving_default(tokens:
        string[batch, time], "" padding)`` and ``tag_text(text: string[batch])``
        (whitespace-tokenized), both -> tags, probability, lengths."""
        import tensorflow as tf

        from kerasrnn.export import export_saved_model

        lookups = [self._word_lookup] + ([self._char_lookup] if self._char_lookup else [])
        return export_saved_model(path, self.model, {
            "serving_default": (self.serve,
                                [tf.TensorSpec([None, None], tf.string, name="tokens")]),
            "tag_text": (self.serve_text, [tf.TensorSpec([None], tf.string, name="text")]),
        }, track=lookups)


# -------------------------------------------------------------------------- commands


def train(config, splits=None, callbacks=()):
    """Trains a tagger as configured and writes to ``config["output_dir"]``:
    ``config.json``, ``vocab.txt``, ``chars.txt``, ``tags.txt``, ``best.keras`` and
    ``results.json`` (history, valid and test scores). Returns the results dict."""
    from kerasrnn.data import Vocabulary, sequence_dataset

    strategy = common.distribution_strategy(config["strategy"], config["mirrored_cpus"])
    config = common.for_worker(config, strategy)  # multi_worker: a folder per worker
    common.set_seed(config["seed"])
    splits = splits or load_splits(config)
    sentences, tags = splits["train"]
    for name in ("valid", "test"):
        if splits.get(name):
            common.check_labels([t for s in tags for t in s],
                                [t for s in splits[name][1] for t in s], name, config[name])

    out = config["output_dir"]
    os.makedirs(out, exist_ok=True)
    common.write_json(os.path.join(out, "config.json"), config)
    keys = lowercase_tokens(sentences) if config["lowercase"] else sentences
    words = Vocabulary.build(keys, config["max_vocab"], config["min_freq"])
    words.save(os.path.join(out, "vocab.txt"))
    chars = None
    if config["char_dim"]:
        chars = Vocabulary.build(t for s in sentences for t in s)
        chars.save(os.path.join(out, "chars.txt"))
    # Sorted tags after the special ids, so that tag id = Vocabulary id - 4.
    tag_vocab = Vocabulary(sorted({t for s in tags for t in s}))
    tag_vocab.save(os.path.join(out, "tags.txt"))
    tag_names = tag_vocab.tokens[4:]
    tag_index = {t: i for i, t in enumerate(tag_names)}
    encoder = Encoder(words, chars, config["lowercase"], config["max_chars"])

    def dataset(split, shuffle):
        return sequence_dataset(
            encoder.inputs(split[0]), [[tag_index[t] for t in s] for s in split[1]],
            batch_size=config["batch_size"], shuffle=shuffle, seed=config["seed"],
            bucket_boundaries=config["bucket_boundaries"] or None, length_key="word_ids",
        )

    train_data = dataset(splits["train"], True)
    valid_data = dataset(splits["valid"], False) if splits.get("valid") else None
    with strategy.scope():
        model = build_model(config, len(words), len(chars) if chars else 0, len(tag_names))
        model.compile(optimizer=common.optimizer(config),
                      loss="sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    monitor = "val_accuracy" if valid_data is not None else "accuracy"
    history = common.fit(model, config, train_data, valid_data, monitor, "max", callbacks)

    tagger = Tagger.from_run(config)
    results = {
        "train_sentences": len(sentences),
        "vocabulary_size": len(words),
        "tags": tag_names,
        "replicas": strategy.num_replicas_in_sync,
        "history": history,
    }
    for name in ("valid", "test"):
        if splits.get(name):
            results[name] = tagger.evaluate(*splits[name])
    common.write_json(os.path.join(out, "results.json"), results)
    return results


def _run_train(config, args):
    return train(config)


def _run_evaluate(config, args):
    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    if config["test"] is None:
        raise common.ConfigError("evaluate needs `--test` (the tagged data).")
    results = Tagger.from_run(config).evaluate(*load_examples(config, config["test"], "test"))
    common.write_json(os.path.join(config["output_dir"], "evaluation.json"), results)
    return results


def _predict_arguments(parser):
    parser.add_argument("sentences", nargs="*",
                        help="whitespace-tokenized sentences to tag")
    parser.add_argument("--input", help="a file with one whitespace-tokenized sentence "
                        "per line")


def _run_predict(config, args):
    from kerasrnn.data.loaders import read_lines

    config = common.saved_config(DEFAULTS, config["output_dir"], args.overrides)
    texts = list(args.sentences)
    if args.input:
        texts += [line for _, line in read_lines(args.input, config["encoding"])]
    sentences = [text.split() for text in texts]
    predictions = Tagger.from_run(config).predict(sentences)
    return [{"tokens": s, **p} for s, p in zip(sentences, predictions)]


COMMANDS = {
    "train": ("train a tagger and evaluate it", None, _run_train),
    "evaluate": ("evaluate a trained tagger on --test", None, _run_evaluate),
    "predict": ("tag sentences", _predict_arguments, _run_predict),
    "export": ("export a SavedModel taking tokens", common.export_arguments,
               common.export_command(DEFAULTS, Tagger.from_run)),
}


def main(argv=None):
    return common.main(argv, "recipes.tagger", __doc__.splitlines()[0], DEFAULTS, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
