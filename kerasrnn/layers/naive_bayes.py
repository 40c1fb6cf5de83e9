"""A multinomial Naive Bayes expert over a sentence's n-grams, multiplied into another
model's class probabilities."""

import keras
import numpy as np
from keras import ops

from kerasrnn.validation import check_int


@keras.saving.register_keras_serializable(package="kerasrnn")
class NaiveBayesExpert(keras.layers.Layer):
    """The product of two experts: a model's class probabilities and a Naive Bayes
    classifier over the sentence's bag of n-grams.

    .. math::

        p(c \\mid x) = \\mathrm{softmax}_c\\big(\\log p_{\\text{model}}(c \\mid x)
            + \\lambda \\, s_c(x)\\big), \\qquad
        s_c(x) = \\sum_{g \\in G(x)} \\log p(g \\mid c)

    G(x) holds the sentence's unigram ids and, with `order=2`, its bigrams (a, b),
    hashed to table row ((a * vocab_size + b) mod buckets) + vocab_size. Padding
    (id 0) and n-grams never counted score 0. The prior is uniform: the model's
    probabilities already carry one. `estimate` counts the table (binarised: once per
    sentence, as Wang & Manning 2012); it is counted, not trained (a non-trainable
    weight). `scale` (lambda) tempers NB's over-counting of overlapping n-grams.

    Args:
        vocab_size: the token vocabulary size (unigram rows).
        num_classes: the number of classes.
        order: 1 (unigrams) or 2 (unigrams and hashed bigrams).
        buckets: hash buckets for the bigrams.
        scale: lambda, the weight of the NB scores.

    Call arguments:
        inputs: ``[ids (batch, time) int, probabilities (batch, num_classes)]``.

    Example:

    >>> import numpy as np, kerasrnn
    >>> expert = kerasrnn.layers.NaiveBayesExpert(5, 2, order=1)
    >>> expert.estimate([[1, 2], [3, 4]], [0, 1])
    >>> probs = expert([np.array([[1, 0]]), np.array([[0.5, 0.5]], "float32")])
    >>> bool(probs[0, 0] > 0.5)
    True
    """

    def __init__(self, vocab_size, num_classes, order=2, buckets=1000003, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        if order not in (1, 2):
            raise ValueError(f"`order` must be 1 or 2, got order={order!r}.")
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_classes", num_classes),
            ("buckets", buckets),
        ):
            check_int(name, value)
        self.vocab_size, self.num_classes = vocab_size, num_classes
        self.order, self.buckets, self.scale = order, buckets, float(scale)
        self.rows = vocab_size + (buckets if order == 2 else 0)

    def build(self, input_shape=None):
        self.log_likelihood = self.add_weight(
            shape=(self.rows, self.num_classes),
            initializer="zeros",
            trainable=False,
            name="log_likelihood",
        )

    def scores(self, ids):
        """s_c(x) for token ids `(batch, time)`: `(batch, num_classes)`."""
        # a * vocab_size + b overflows int32 past 46,340 ids; below that int32 suffices
        # (and is all JAX has without its x64 mode)
        ids = ops.cast(ids, "int64" if self.vocab_size > 46_340 else "int32")
        grams, present = [ids], [ops.not_equal(ids, 0)]
        if self.order == 2:
            left, right = ids[:, :-1], ids[:, 1:]
            grams.append(ops.mod(left * self.vocab_size + right, self.buckets) + self.vocab_size)
            present.append(ops.logical_and(ops.not_equal(left, 0), ops.not_equal(right, 0)))
        weights = ops.cast(ops.concatenate(present, axis=1), self.compute_dtype)[..., None]
        table = ops.take(self.log_likelihood, ops.concatenate(grams, axis=1), axis=0)
        return ops.sum(table * weights, axis=1)

    def call(self, inputs):
        ids, probabilities = inputs
        log_p = ops.log(ops.maximum(ops.cast(probabilities, self.compute_dtype), 1e-30))
        return ops.softmax(log_p + self.scale * self.scores(ids), axis=-1)

    def ngram_rows(self, ids):
        """The table rows of one sentence's n-grams (a list of token ids)."""
        ids = [int(i) for i in ids if i]
        rows = list(ids)
        if self.order == 2:
            rows += [
                (a * self.vocab_size + b) % self.buckets + self.vocab_size
                for a, b in zip(ids, ids[1:])
            ]
        return rows

    def estimate(self, id_lists, class_ids, smoothing=1.0):
        """Counts the table: log p(g | c) = log((n(g, c) + smoothing) /
        sum_g' (n(g', c) + smoothing)) over the n-grams g' seen, where n(g, c) is the
        number of sentences of class c (`class_ids`) among `id_lists` containing g."""
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
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "num_classes": self.num_classes,
            "order": self.order,
            "buckets": self.buckets,
            "scale": self.scale,
        }
