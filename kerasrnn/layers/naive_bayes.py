"""`NaiveBayesExpert`: a multinomial Naive Bayes classifier over n-grams multiplied into
another model's class probabilities (the classifier recipe's optional expert)."""
import keras


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

    Args:
        vocab_size: token ids are in [0, vocab_size).
        num_classes: the classes of the probabilities.
        order: 1 (unigrams) or 2 (unigrams and hashed bigrams).
        buckets: hash buckets of the bigrams.
        scale: the exponent of the expert (1: the plain product).

    Example:

    >>> import numpy as np
    >>> expert = NaiveBayesExpert(vocab_size=8, num_classes=2, order=1)
    >>> expert.estimate([[4, 5], [6, 7]], [0, 1])
    >>> p = expert([np.array([[4, 5]]), np.array([[0.5, 0.5]], "float32")])
    >>> bool(p[0, 0] > p[0, 1])
    True
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
