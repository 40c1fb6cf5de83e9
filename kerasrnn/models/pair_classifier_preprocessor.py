"""`PairClassifierPreprocessor`: sentence pairs to a `PairClassifier`'s token ids, and
its judgments or scores back to labels and numbers."""

import keras

from kerasrnn.models.preprocessor import (
    Preprocessor,
    as_text,
    in_chunks,
    unpadded,
    vocabulary_of,
)
from kerasrnn.models.text_classifier_preprocessor import (
    class_outputs,
    class_results,
    label_ids,
    label_names,
)
from kerasrnn.validation import check_int

SIDES = ("sentence_a", "sentence_b")


def _is_string(value):
    return isinstance(value, (str, bytes)) or getattr(value, "ndim", None) == 0


def _is_pair(value):
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(map(_is_string, value))


@keras.saving.register_keras_serializable(package="kerasrnn")
class PairClassifierPreprocessor(Preprocessor):
    """Sentence pairs -> a `kerasrnn.models.PairClassifier`'s ``{"sentence_a",
    "sentence_b"}`` token ids, and its outputs -> a judgment (label, probability,
    probabilities) or a score.

    Each sentence is encoded as `TextClassifierPreprocessor` encodes one: split on
    whitespace (lower-cased first with `lowercase`), looked up in `vocabulary`, padded
    with ``[PAD]`` (0), cut to `max_length` tokens.

    A pair is ``(sentence_a, sentence_b)``; `predict` takes one pair, a list of pairs,
    or ``{"sentence_a": [...], "sentence_b": [...]}``.

    Args:
        vocabulary: a `kerasrnn.data.Vocabulary` (or its token list) of both sentences.
        labels: the judgments in the model's output order (a "classes" head; None:
            "0", "1", ...); a "score" or "distribution" head's output is a number.
        lowercase: lower-case the sentences first.
        max_length: tokens kept of each sentence (None: all).

    Example:

    >>> from kerasrnn.data import Vocabulary
    >>> preprocessor = PairClassifierPreprocessor(Vocabulary(["a", "man"]))
    >>> ids = preprocessor({"sentence_a": ["a man"], "sentence_b": ["a dog"]})
    >>> ids["sentence_a"].numpy().tolist(), ids["sentence_b"].numpy().tolist()
    ([[4, 5]], [[4, 1]])
    """

    def __init__(self, vocabulary, labels=None, lowercase=False, max_length=None, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary = vocabulary_of(vocabulary, "vocabulary")
        if self.vocabulary is None:
            raise ValueError("`vocabulary` is required: the Vocabulary the model was trained with.")
        self.labels = None if labels is None else [str(label) for label in labels]
        self.lowercase = bool(lowercase)
        self.max_length = check_int("max_length", max_length, allow_none=True)
        self.lookup(self.vocabulary, "words")

    def encode_sentences(self, texts):
        """Strings (batch,) -> int32 token ids (batch, length), as each side is."""
        from kerasrnn.data.tokenizers import encode_tokens, split_words

        tokens = split_words(texts, self.lowercase)
        ids = encode_tokens(tokens, self.lookup(self.vocabulary, "words"))
        return ids if self.max_length is None else ids[:, : self.max_length]

    def id_lists(self, texts):
        """Python strings (one side's sentences) -> their token ids as lists, as
        `encode_sentences` gives them (an empty sentence is one [PAD])."""
        return in_chunks(lambda chunk: unpadded(self.encode_sentences(chunk).numpy()), list(texts))

    def encode(self, x):
        """``{"sentence_a": strings (batch,), "sentence_b": ...}`` (or a list of pairs)
        -> ``{"sentence_a": ids, "sentence_b": ids}``."""
        if not isinstance(x, dict):
            pairs, _ = self.examples(x)
            x = {side: [pair[i] for pair in pairs] for i, side in enumerate(SIDES)}
        return {side: self.encode_sentences(x[side]) for side in SIDES}

    def examples(self, x):
        if isinstance(x, dict):
            missing = set(SIDES) - set(x)
            if missing:
                raise ValueError(
                    f"sentence pairs as a dict need the keys {list(SIDES)}; missing "
                    f"{sorted(missing)}."
                )
            a, b = (list(x[side]) for side in SIDES)
            if len(a) != len(b):
                raise ValueError(
                    f"pairs need as many first as second sentences; got {len(a)} and {len(b)}."
                )
            return [(as_text(p), as_text(q)) for p, q in zip(a, b)], False
        if _is_pair(x):
            return [(as_text(x[0]), as_text(x[1]))], True
        if not isinstance(x, (list, tuple)):
            raise TypeError(
                "give a sentence pair (a, b), a list of pairs, or {'sentence_a': [...], "
                f"'sentence_b': [...]}}; got {type(x).__name__}."
            )
        pairs = []
        for index, pair in enumerate(x):
            if not _is_pair(pair):
                raise TypeError(
                    f"item {index} is not a sentence pair (two strings): {pair!r}; give "
                    "pairs as (sentence_a, sentence_b)."
                )
            pairs.append((as_text(pair[0]), as_text(pair[1])))
        return pairs, False

    def dataset(self, pairs, targets=None, batch_size=32, shuffle=False, seed=None):
        """The pairs (any form `predict` takes) and their targets as a `tf.data.Dataset`
        of padded, optionally shuffled batches, for `PairClassifier.fit`. `targets`:
        judgments (names of `labels`, or class ids) for a "classes" head; scores
        (floats, made (n, 1)) for a "score" head; a dict of those per output for a
        "distribution" head (``{"distribution": score_distribution(s), "score": s}``)."""
        import tensorflow as tf

        examples, _ = self.examples(pairs)
        inputs = {
            side: keras.utils.pad_sequences(
                self.id_lists([pair[i] for pair in examples]), padding="post", dtype="int32"
            )
            for i, side in enumerate(SIDES)
        }
        data = inputs if targets is None else (inputs, self._targets(targets, len(examples)))
        data = tf.data.Dataset.from_tensor_slices(data)
        if shuffle:
            data = data.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        return data.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    def _targets(self, targets, count):
        """Targets as arrays: judgments as class ids, scores as float32 (n, 1)."""
        import numpy as np

        if isinstance(targets, dict):
            return {name: self._targets(value, count) for name, value in targets.items()}
        values = np.asarray(targets)
        if len(values) != count:
            raise ValueError(f"{count} pairs but {len(values)} targets: give one per pair.")
        if values.dtype.kind in "iuUSO":  # judgments: names or class ids
            return np.asarray(label_ids(self.labels, list(targets)), np.int32)
        values = values.astype(np.float32)
        return values[:, None] if values.ndim == 1 else values

    def length(self, example):
        return max(len(example[0].split()), len(example[1].split()))

    def outputs(self, output):
        """The model's output -> a judgment's `class_outputs` (a "classes" head, named
        by `labels`), or ``{"score": (batch,)}`` (a "score" or "distribution" head)
        (TensorFlow ops)."""
        import tensorflow as tf

        if isinstance(output, dict) or int(output.shape[-1]) == 1:
            score = output["score"] if isinstance(output, dict) else output
            return {"score": tf.reshape(tf.cast(score, tf.float32), (-1,))}
        return class_outputs(output, label_names(self.labels, int(output.shape[-1])))

    def results(self, outputs):
        """`outputs` -> one ``{"label", "probability", "probabilities"}`` or ``{"score"}``
        per pair."""
        if "score" in outputs:
            return [{"score": float(s)} for s in keras.ops.convert_to_numpy(outputs["score"])]
        count = int(outputs["probabilities"].shape[-1])
        return class_results(outputs, label_names(self.labels, count))

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary": self.vocabulary.tokens,
            "labels": self.labels,
            "lowercase": self.lowercase,
            "max_length": self.max_length,
        }
