"""`TextClassifier`: a sentence classifier task around a `SentenceEncoder` backbone,
with an optional n-gram Naive Bayes expert multiplied in."""

import keras

from kerasrnn.layers.naive_bayes import NaiveBayesExpert
from kerasrnn.models.sentence_encoder import SentenceEncoder
from kerasrnn.models.task import Task
from kerasrnn.models.text_classifier_preprocessor import TextClassifierPreprocessor
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_int, check_rate


@keras.saving.register_keras_serializable(package="kerasrnn")
class TextClassifier(Task, keras.Model):
    """A text classifier, keras-hub style: a `SentenceEncoder` backbone (embedding,
    recurrent stack, pooling) and a softmax head, optionally times a Naive Bayes expert
    over the sentence's n-grams (`kerasrnn.layers.NaiveBayesExpert`, Wang & Manning 2012).

    .. math::

        p(c \\mid x) = \\text{softmax}(W\\, \\text{dropout}(u(x)) + b)_c, \\qquad
        p_{\\text{NB}}(c \\mid x) \\propto p(c \\mid x)\\,
            \\exp\\big(\\alpha \\textstyle\\sum_{g \\in x} \\log p(g \\mid c)\\big)

    where u(x) is the backbone's sentence vector. `call` takes int token ids
    `(batch, time)` (0 = padding) and returns class probabilities `(batch, num_classes)`;
    `compile()` defaults to Adam, sparse categorical cross-entropy and accuracy. With a
    `TextClassifierPreprocessor`, `predict` also takes sentences and gives each one's
    ``{"label", "probability", "probabilities"}``.

    Args:
        backbone: a `kerasrnn.models.SentenceEncoder`.
        num_classes: the number of classes.
        dropout: dropout rate on the sentence vector.
        expert: None, or a `NaiveBayesExpert` (counted with its `estimate`) whose
            product with the classifier is the output; `with_expert` adds one to a
            trained classifier.
        preprocessor: None, or a `kerasrnn.models.TextClassifierPreprocessor` (the
            vocabulary and labels: sentences in, labels out).

    Example:

    >>> import numpy as np, kerasrnn
    >>> from kerasrnn.models import SentenceEncoder, TextClassifier
    >>> model = TextClassifier(SentenceEncoder(20, 8, kerasrnn.GRUCell(6)), 3)
    >>> tuple(model(np.array([[4, 5, 6, 0], [7, 0, 0, 0]])).shape)
    (2, 3)
    """

    preprocessor_cls = TextClassifierPreprocessor

    def __init__(
        self, backbone, num_classes, dropout=0.0, expert=None, preprocessor=None, **kwargs
    ):
        backbone = deserialize(backbone)
        if not isinstance(backbone, SentenceEncoder):
            raise ValueError(
                "`backbone` must be a kerasrnn.models.SentenceEncoder (e.g. "
                f"SentenceEncoder(vocabulary_size)); got {backbone!r}."
            )
        check_int("num_classes", num_classes, 2)
        check_rate("dropout", dropout)
        expert = deserialize(expert)
        if expert is not None and not isinstance(expert, NaiveBayesExpert):
            raise ValueError(
                f"`expert` must be None or a kerasrnn.layers.NaiveBayesExpert; got {expert!r}."
            )
        ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = keras.layers.Dropout(dropout, name="output_dropout")(backbone(ids))
        probabilities = keras.layers.Dense(num_classes, activation="softmax", name="classes")(x)
        if expert is not None:
            probabilities = expert([ids, probabilities])
        kwargs.setdefault("name", "classifier")
        super().__init__(ids, probabilities, preprocessor=preprocessor, **kwargs)
        self.backbone, self.num_classes = backbone, num_classes
        self.dropout, self.expert = float(dropout), expert

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile` with the classifier's defaults: sparse categorical
        cross-entropy on the probabilities and accuracy."""
        loss = "sparse_categorical_crossentropy" if loss == "auto" else loss
        metrics = ["accuracy"] if metrics == "auto" else metrics
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def with_expert(self, expert):
        """A new `TextClassifier` with this one's weights whose output is multiplied by
        `expert` (a `NaiveBayesExpert`, usually counted on the training sentences). The
        backbone is shared, the head's weights copied."""
        combined = type(self)(
            self.backbone, self.num_classes, self.dropout, expert, self.preprocessor, name=self.name
        )
        combined.get_layer("classes").set_weights(self.get_layer("classes").get_weights())
        return combined

    def text_outputs(self, texts):
        """Sentences (batch,) strings -> `TextClassifierPreprocessor.outputs`: label,
        probability, probabilities, labels (TensorFlow ops around the model: the
        function a SavedModel serves)."""
        preprocessor = self._text_preprocessor()
        return preprocessor.outputs(self._call_on(preprocessor.encode(texts)))

    def _text_results(self, examples):
        import tensorflow as tf

        spec = tf.TensorSpec([None], tf.string)
        outputs = self._text_function("text_outputs", self.text_outputs, spec)(examples)
        return self.preprocessor.results(outputs)

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "expert": None
            if self.expert is None
            else keras.saving.serialize_keras_object(self.expert),
        }
