"""`TextClassifierPreprocessor`: sentences to a `TextClassifier`'s token ids, and its
class probabilities back to labels (`class_outputs`, `class_results`)."""

import keras

from kerasrnn.models.preprocessor import (
    Preprocessor,
    in_chunks,
    string_examples,
    unpadded,
    vocabulary_of,
)
from kerasrnn.validation import check_int


def class_outputs(probabilities, labels):
    """A classifier's readable outputs, as TensorFlow ops: `probabilities` (batch,
    classes) -> ``label`` (batch,) the most probable class name, ``probability``
    (batch,) its probability, ``probabilities`` (batch, classes) and ``labels`` (batch,
    classes) the class names of those columns."""
    import tensorflow as tf

    probabilities = tf.cast(probabilities, tf.float32)
    names = tf.constant(list(labels), tf.string)
    return {
        "label": tf.gather(names, tf.argmax(probabilities, axis=-1)),
        "probability": tf.reduce_max(probabilities, axis=-1),
        "probabilities": probabilities,
        "labels": tf.tile(names[tf.newaxis], [tf.shape(probabilities)[0], 1]),
    }


def label_names(labels, count):
    """The names of a model's `count` classes: `labels` (None: "0", "1", ...), which
    must have that many."""
    if labels is None:
        return [str(i) for i in range(count)]
    if len(labels) != count:
        raise ValueError(
            f"the preprocessor has {len(labels)} labels but the model outputs {count} "
            "classes: give the labels the model was trained with."
        )
    return list(labels)


def label_ids(names, labels):
    """Labels -> class ids: a string by its place in `names`, an integer as it is; a
    string `names` lacks (or any string without names) is a one-line error."""
    index = {name: i for i, name in enumerate(names or ())}
    unknown = sorted({label for label in labels if isinstance(label, str)} - set(index))
    if unknown:
        raise ValueError(
            f"labels {unknown[:5]} are not among the preprocessor's labels "
            f"{list(index)[:10]}: give class ids, or the labels the model was built with."
        )
    return [index[label] if isinstance(label, str) else int(label) for label in labels]


def class_results(outputs, labels):
    """`class_outputs` (TensorFlow tensors or NumPy arrays) -> one ``{"label",
    "probability", "probabilities": {label: p}}`` per row."""
    label = keras.ops.convert_to_numpy(outputs["label"])
    best = keras.ops.convert_to_numpy(outputs["probability"])
    every = keras.ops.convert_to_numpy(outputs["probabilities"])
    return [
        {
            "label": name.decode("utf-8"),
            "probability": float(p),
            "probabilities": dict(zip(labels, map(float, row))),
        }
        for name, p, row in zip(label, best, every)
    ]


@keras.saving.register_keras_serializable(package="kerasrnn")
class TextClassifierPreprocessor(Preprocessor):
    """Sentences -> a `kerasrnn.models.TextClassifier`'s token ids, and its class
    probabilities -> labels.

    A sentence is split on whitespace (lower-cased first with `lowercase`, Unicode
    aware), each token looked up in `vocabulary` (unknown tokens -> ``[UNK]``), the
    batch padded with ``[PAD]`` (0) to its longest sentence, at least one column (an
    empty sentence is all padding), cut to `max_length` tokens when set.

    Args:
        vocabulary: a `kerasrnn.data.Vocabulary` (or its token list).
        labels: the class names in the classifier's output order (None: "0", "1", ...
            for `num_classes` classes, named when the outputs are).
        lowercase: lower-case the sentences first.
        max_length: tokens kept of each sentence (None: all).

    Example:

    >>> from kerasrnn.data import Vocabulary
    >>> preprocessor = TextClassifierPreprocessor(
    ...     Vocabulary(["a", "film"]), ["neg", "pos"], lowercase=True)
    >>> preprocessor(["A film", "a gripping film"]).numpy().tolist()
    [[4, 5, 0], [4, 1, 5]]
    """

    def __init__(self, vocabulary, labels=None, lowercase=False, max_length=None, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary = vocabulary_of(vocabulary, "vocabulary")
        if self.vocabulary is None:
            raise ValueError("`vocabulary` is required: the Vocabulary the model was trained with.")
        self.labels = None if labels is None else [str(label) for label in labels]
        if self.labels is not None and len(set(self.labels)) != len(self.labels):
            raise ValueError(f"`labels` must be distinct class names; got {self.labels!r}.")
        self.lowercase = bool(lowercase)
        self.max_length = check_int("max_length", max_length, allow_none=True)
        self.lookup(self.vocabulary, "words")

    def encode(self, x):
        """Strings (batch,) -> int32 token ids (batch, length)."""
        from kerasrnn.data.tokenizers import encode_tokens, split_words

        ids = encode_tokens(split_words(x, self.lowercase), self.lookup(self.vocabulary, "words"))
        return ids if self.max_length is None else ids[:, : self.max_length]

    def examples(self, x):
        return string_examples(x, "a sentence")

    def id_lists(self, texts):
        """Python strings -> their token ids as lists, as `encode` gives them (an empty
        sentence is one [PAD])."""
        return in_chunks(lambda chunk: unpadded(self.encode(chunk).numpy()), list(texts))

    def label_ids(self, labels):
        """Label names (by `labels`) or class ids -> class ids; a name `labels` lacks
        is a one-line error."""
        return label_ids(self.labels, labels)

    def dataset(
        self, texts, labels=None, batch_size=32, shuffle=False, seed=None, bucket_boundaries=None
    ):
        """The sentences (and their labels: names or class ids) as a `tf.data.Dataset`
        of padded, optionally shuffled and length-bucketed batches
        (`kerasrnn.data.sequence_dataset`), for `TextClassifier.fit`."""
        from kerasrnn.data import sequence_dataset

        return sequence_dataset(
            self.id_lists(texts),
            None if labels is None else self.label_ids(labels),
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            bucket_boundaries=bucket_boundaries or None,
        )

    def length(self, example):
        return len(example.split())

    def outputs(self, probabilities):
        """`class_outputs` of class probabilities (batch, classes) (TensorFlow ops)."""
        return class_outputs(probabilities, label_names(self.labels, int(probabilities.shape[-1])))

    def results(self, outputs):
        """`class_results` of `outputs`."""
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
