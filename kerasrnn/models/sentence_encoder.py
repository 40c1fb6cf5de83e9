"""`SentenceEncoder`: token ids -> one vector per sentence (embedding, a recurrent stack,
pooling), the backbone of `TextClassifier` and of each side of `PairClassifier`."""

import keras

from kerasrnn.cells.lstm import LSTMCell
from kerasrnn.cells.stack import RNNStack
from kerasrnn.layers.pooling import ConcatPooling1D, MaskedPooling1D
from kerasrnn.models.backbone import Backbone
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_choice, check_int, check_rate

POOLINGS = ("last", "mean", "max", "concat")


@keras.saving.register_keras_serializable(package="kerasrnn")
class SentenceEncoder(Backbone, keras.Model):
    """A recurrent sentence encoder: token ids `(batch, time)` -> a vector per sentence.

    .. math::

        e_t = E x_t, \\qquad h_1 \\dots h_T = \\text{RNNStack}(\\text{dropout}(e_1 \\dots e_T))
        \\\\
        u = \\begin{cases}
            h_T \\;(\\text{bidirectional: } [\\overrightarrow{h}_T ; \\overleftarrow{h}_1])
                & \\text{pooling = last} \\\\
            \\tfrac{1}{T}\\sum_t h_t \\;\\text{or}\\; \\max_t h_t & \\text{mean, max} \\\\
            [h_T ; \\max_t h_t ; \\tfrac{1}{T}\\sum_t h_t] & \\text{concat (ULMFiT)}
        \\end{cases}

    Id 0 is padding: padded steps never change a state nor enter a pooling. The layers
    are named ``embedding``, ``embedding_dropout``, ``rnn`` (a `kerasrnn.RNNStack`) and
    ``<pooling>_pooling``, so pretrained weights (a language model's embedding and
    recurrent layers) can be copied in by name.

    Args:
        vocabulary_size: ids are in [0, vocabulary_size).
        embedding_dim: the word embedding width.
        cell: a kerasrnn cell, copied for every layer and direction (default
            ``kerasrnn.LSTMCell(128)``).
        num_layers: stacked recurrent layers.
        bidirectional: read the sentence in both directions (concatenated).
        pooling: "last", "mean", "max" or "concat" (see above).
        dropout: dropout rate between recurrent layers.
        embedding_dropout: dropout rate on the word embeddings.
        embeddings_initializer: the embedding's initializer (e.g.
            ``keras.initializers.Constant(word2vec_matrix)`` for pretrained vectors).
        trainable_embeddings: False keeps the embedding fixed in training.

    Example:

    >>> import numpy as np, kerasrnn
    >>> encoder = kerasrnn.models.SentenceEncoder(20, 8, kerasrnn.GRUCell(6), pooling="max")
    >>> tuple(encoder(np.array([[4, 5, 6, 0], [7, 0, 0, 0]])).shape)
    (2, 12)
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=100,
        cell=None,
        num_layers=1,
        bidirectional=True,
        pooling="last",
        dropout=0.0,
        embedding_dropout=0.0,
        embeddings_initializer="uniform",
        trainable_embeddings=True,
        **kwargs,
    ):
        check_int("vocabulary_size", vocabulary_size)
        check_int("embedding_dim", embedding_dim)
        check_int("num_layers", num_layers)
        check_choice("pooling", pooling, POOLINGS)
        check_rate("dropout", dropout)
        check_rate("embedding_dropout", embedding_dropout)
        cell = LSTMCell(128) if cell is None else deserialize(cell)
        ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = keras.layers.Embedding(
            vocabulary_size,
            embedding_dim,
            mask_zero=True,
            embeddings_initializer=deserialize(embeddings_initializer),
            trainable=bool(trainable_embeddings),
            name="embedding",
        )(ids)
        x = keras.layers.Dropout(embedding_dropout, name="embedding_dropout")(x)
        x = RNNStack(
            cell,
            num_layers=num_layers,
            bidirectional=bidirectional,
            dropout=dropout,
            return_sequences=pooling != "last",
            name="rnn",
        )(x)
        if pooling == "concat":
            x = ConcatPooling1D(name="concat_pooling")(x)
        elif pooling != "last":
            x = MaskedPooling1D(pooling, name=f"{pooling}_pooling")(x)
        kwargs.setdefault("name", "encoder")
        super().__init__(ids, x, **kwargs)
        self.vocabulary_size, self.embedding_dim = vocabulary_size, embedding_dim
        self.num_layers, self.bidirectional = num_layers, bool(bidirectional)
        self.pooling, self.dropout = pooling, float(dropout)
        self.embedding_dropout = float(embedding_dropout)

    @property
    def output_dim(self):
        """The width of the sentence vector."""
        return int(self.output.shape[-1])

    def get_config(self):
        embedding = self.get_layer("embedding")
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "cell": keras.saving.serialize_keras_object(self.get_layer("rnn").cell),
            "num_layers": self.num_layers,
            "bidirectional": self.bidirectional,
            "pooling": self.pooling,
            "dropout": self.dropout,
            "embedding_dropout": self.embedding_dropout,
            "embeddings_initializer": keras.initializers.serialize(
                embedding.embeddings_initializer
            ),
            "trainable_embeddings": embedding.trainable,
        }
