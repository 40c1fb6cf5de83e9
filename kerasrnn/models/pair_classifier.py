"""`PairClassifier`: a sentence-pair task (entailment, relatedness) over one shared
`SentenceEncoder` backbone and InferSent's pair features."""

import keras
import numpy as np

from kerasrnn.layers.pair import ExpectedScore, PairFeatures
from kerasrnn.models.pair_classifier_preprocessor import PairClassifierPreprocessor
from kerasrnn.models.sentence_encoder import SentenceEncoder
from kerasrnn.models.task import Task
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_choice, check_int, check_rate

HEADS = ("classes", "score", "distribution")


def score_distribution(scores, classes=5):
    """Tai et al.'s (2015) sparse target of the "distribution" head: a score y in
    [1, K] -> p over the grades 1..K with sum_i i p_i = y (p_floor(y) = floor(y) - y + 1,
    p_floor(y)+1 = y - floor(y)): `(n,)` -> `(n, K)` float32.

    >>> score_distribution([2.25]).tolist()
    [[0.0, 0.75, 0.25, 0.0, 0.0]]
    """
    scores = np.asarray(scores, np.float64)
    low = np.clip(np.floor(scores), 1, classes).astype(int)
    p = np.zeros((len(scores), classes), np.float32)
    rows = np.arange(len(scores))
    upper = scores - low
    p[rows, low - 1] = 1.0 - upper
    p[rows[low < classes], low[low < classes]] = upper[low < classes]
    return p


@keras.saving.register_keras_serializable(package="kerasrnn")
class PairClassifier(Task, keras.Model):
    """A sentence-pair model (Conneau et al. 2017's classifier over a siamese encoder):
    both sentences go through the same `SentenceEncoder` backbone, and a tanh layer over
    their pair features feeds the head.

    .. math::

        u = \\text{enc}(a), \\quad v = \\text{enc}(b), \\qquad
        h = \\tanh(W_h\\, \\text{dropout}([u; v; |u - v|; u \\odot v]) + b_h)

    Heads (on dropout(h)):

    * ``"classes"``: softmax(W h + b) over `num_classes` judgments (entailment);
    * ``"score"``: low + (high - low) sigmoid(w . h + b), a bounded score
      (`score_range`; relatedness trained with the squared error);
    * ``"distribution"``: Tai et al. (2015): p = softmax(W h + b) over the grades
      1..`num_classes`, returned as ``{"distribution": p, "score": sum_i i p_i}``
      (train the distribution with KL divergence; the score is its expected grade).

    `call` takes ``{"sentence_a": ids, "sentence_b": ids}`` int ids `(batch, time)`
    (0 = padding). With a `PairClassifierPreprocessor`, `predict` also takes sentence
    pairs ``(a, b)`` and gives each one's judgment (``{"label", "probability",
    "probabilities"}``) or ``{"score"}``.

    Args:
        backbone: a `kerasrnn.models.SentenceEncoder`, shared by both sentences.
        head: "classes", "score" or "distribution" (above).
        num_classes: the judgments of "classes", the grades of "distribution".
        hidden_units: width of the tanh layer.
        dropout: dropout rate on the pair features and on the hidden layer.
        score_range: ``(low, high)`` of the "score" head.
        preprocessor: None, or a `kerasrnn.models.PairClassifierPreprocessor` (the
            vocabulary and judgments: sentence pairs in, judgments or scores out).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.models import PairClassifier, SentenceEncoder
    >>> model = PairClassifier(SentenceEncoder(20, 8, kerasrnn.GRUCell(6)), hidden_units=5)
    >>> pair = {"sentence_a": np.array([[4, 5, 0]]), "sentence_b": np.array([[6, 7, 8]])}
    >>> tuple(model(pair).shape)
    (1, 3)
    """

    preprocessor_cls = PairClassifierPreprocessor

    def __init__(
        self,
        backbone,
        head="classes",
        num_classes=3,
        hidden_units=128,
        dropout=0.0,
        score_range=(1.0, 5.0),
        preprocessor=None,
        **kwargs,
    ):
        backbone = deserialize(backbone)
        if not isinstance(backbone, SentenceEncoder):
            raise ValueError(
                "`backbone` must be a kerasrnn.models.SentenceEncoder (e.g. "
                f"SentenceEncoder(vocabulary_size)); got {backbone!r}."
            )
        check_choice("head", head, HEADS)
        check_int("num_classes", num_classes, 2)
        check_int("hidden_units", hidden_units)
        check_rate("dropout", dropout)
        low, high = (float(x) for x in score_range)
        if not low < high:
            raise ValueError(
                f"`score_range` must be (low, high) with low < high; got {score_range}."
            )
        a = keras.Input((None,), dtype="int32", name="sentence_a")
        b = keras.Input((None,), dtype="int32", name="sentence_b")
        h = PairFeatures(name="pair_features")([backbone(a), backbone(b)])
        h = keras.layers.Dropout(dropout, name="features_dropout")(h)
        h = keras.layers.Dense(hidden_units, activation="tanh", name="hidden")(h)
        h = keras.layers.Dropout(dropout, name="hidden_dropout")(h)
        if head == "classes":
            out = keras.layers.Dense(num_classes, activation="softmax", name="judgment")(h)
        elif head == "score":
            z = keras.layers.Dense(1, activation="sigmoid", name="unit_score")(h)
            out = keras.layers.Rescaling(high - low, offset=low, name="score")(z)
        else:
            p = keras.layers.Dense(num_classes, activation="softmax", name="distribution")(h)
            out = {"distribution": p, "score": ExpectedScore(name="score")(p)}
        kwargs.setdefault("name", "pair_classifier")
        super().__init__(
            {"sentence_a": a, "sentence_b": b}, out, preprocessor=preprocessor, **kwargs
        )
        self.backbone, self.head, self.num_classes = backbone, head, num_classes
        self.hidden_units, self.dropout = hidden_units, float(dropout)
        self.score_range = (low, high)

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the head's defaults: "classes": sparse categorical
        cross-entropy and accuracy; "score": the squared error; "distribution": KL
        divergence on the distribution, the squared error of the score as a metric."""
        defaults = {
            "classes": ("sparse_categorical_crossentropy", ["accuracy"]),
            "score": ("mse", None),
            "distribution": (
                {"distribution": "kl_divergence", "score": None},
                {"score": ["mse"]},
            ),
        }[self.head]
        loss = defaults[0] if loss == "auto" else loss
        metrics = defaults[1] if metrics == "auto" else metrics
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def text_outputs(self, sentence_a, sentence_b):
        """Sentence pairs, (batch,) strings each -> `PairClassifierPreprocessor.outputs`:
        the judgment (label, probability, probabilities, labels) or the score
        (TensorFlow ops around the model: the function a SavedModel serves)."""
        preprocessor = self._text_preprocessor()
        inputs = preprocessor.encode({"sentence_a": sentence_a, "sentence_b": sentence_b})
        return preprocessor.outputs(self._call_on(inputs))

    def _text_results(self, pairs):
        import tensorflow as tf

        spec = tf.TensorSpec([None], tf.string)
        function = self._text_function("text_outputs", self.text_outputs, spec, spec)
        outputs = function([a for a, _ in pairs], [b for _, b in pairs])
        return self.preprocessor.results(outputs)

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "head": self.head,
            "num_classes": self.num_classes,
            "hidden_units": self.hidden_units,
            "dropout": self.dropout,
            "score_range": list(self.score_range),
        }
