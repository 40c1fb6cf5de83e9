"""The recurrent language model's network (keras.ops only; every backend): token ids ->
next-token logits, with AWD-LSTM's regularisers as one object.

    embedding -> dropout -> [RNN(cell) -> dropout] x num_layers -> readout

The readout is a `Dense` layer, or the embedding matrix itself (tied embeddings, Press &
Wolf 2017). `LanguageModelRegularization` gathers the regularisers of Zaremba et al.
(2014) and Merity et al. (2018): dropout on the non-recurrent connections, locked
(variational) dropout, embedding (whole-word) dropout, DropConnect on the recurrent
kernels (`kerasrnn.layers.WeightDrop`) and the AR / TAR activation penalties
(`kerasrnn.layers.ActivationRegularization`).
"""

import keras

from kerasrnn.models.backbone import Backbone
from kerasrnn.serialization import deserialize
from kerasrnn.validation import check_int, check_number, check_rate

DIRECTIONS = ("forward", "backward")
# the keys `rnn_options` takes: options of every `keras.layers.RNN`, and the fixed batch
# size a stateful network needs
RNN_OPTIONS = ("stateful", "unroll", "batch_size")


@keras.saving.register_keras_serializable(package="kerasrnn")
class LanguageModelRegularization:
    """The regularisers of a recurrent language model (all off by default), as
    AWD-LSTM (Merity et al. 2018) uses them.

    With h_l the output of recurrent layer l and m a dropout mask:

    * `dropout`: ordinary dropout on the embeddings and on every h_l (Zaremba et al.);
    * `locked_dropout`: one mask per sequence shared over time (`SpatialDropout1D`),
      after `dropout` at the same places;
    * `embedding_dropout`: whole word types dropped from the embedding matrix
      (`kerasrnn.layers.EmbeddingDropout`); not with tied embeddings;
    * `weight_drop`: DropConnect on each layer's recurrent kernel U
      (`kerasrnn.layers.WeightDrop`);
    * `ar_alpha`: AR = alpha mean(m h_L^2) on the last layer's dropped output;
    * `tar_beta`: TAR = beta mean((h_L,t - h_L,t-1)^2) on its undropped output.

    Args:
        dropout, locked_dropout, embedding_dropout, weight_drop: rates in [0, 1).
        ar_alpha, tar_beta: weights >= 0 (AWD-LSTM: 2 and 1).
        seed: seed of the embedding dropout and of the weight drop masks (layer i gets
            seed + i).
    """

    def __init__(
        self,
        dropout=0.0,
        locked_dropout=0.0,
        embedding_dropout=0.0,
        weight_drop=0.0,
        ar_alpha=0.0,
        tar_beta=0.0,
        seed=0,
    ):
        self.dropout = check_rate("dropout", dropout)
        self.locked_dropout = check_rate("locked_dropout", locked_dropout)
        self.embedding_dropout = check_rate("embedding_dropout", embedding_dropout)
        self.weight_drop = check_rate("weight_drop", weight_drop)
        self.ar_alpha = check_number("ar_alpha", ar_alpha)
        self.tar_beta = check_number("tar_beta", tar_beta)
        self.seed = check_int("seed", seed, minimum=0)

    def get_config(self):
        return dict(vars(self))

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="kerasrnn")
class LanguageModelBackbone(Backbone, keras.Model):
    """A recurrent language model's network, a functional Keras model: token ids
    `(batch, time)` -> logits `(batch, time, vocabulary_size)` of the next token.

    .. math::

        x_t = E[w_t], \\qquad h^{(l)}_t = \\text{cell}_l(h^{(l-1)}_t, h^{(l)}_{t-1}),
        \\qquad z_t = W h^{(L)}_t + b \\ (\\text{tied: } z_t = E h^{(L)}_t)

    with the dropouts and penalties of `regularization` between. Id 0 is padding: it is
    masked, so padded steps never change a state. The layers are named `embedding`,
    `rnn_0` ... `rnn_{L-1}`, `logits` (the Dense readout; none when tied), the dropouts
    `dropout_in`, `dropout_<l>` (`locked_dropout_*`), and `ar`, `tar`.

    With ``bidirectional=True`` a biLM (Peters et al. 2018): a second recurrent stack
    `backward_rnn_<l>` over the shared embedding and readout; the inputs and outputs
    are then ``{"forward": ids, "backward": ids}`` (the backward LM reads the text
    reversed; `kerasrnn.layers.BiLMFeatures.from_model` takes its features).

    Args:
        vocabulary_size: V, the number of token ids.
        units: the cells' units.
        num_layers: L, stacked recurrent layers.
        cell: a cell name (`kerasrnn.cells.CELL_NAMES`: "lstm", "gru", "simple",
            "layer_norm_lstm", "layer_norm_simple") or a cell instance with `units`
            units, copied for each layer (through its config).
        embedding_dim: the embedding width (default `units`).
        tie_embeddings: the readout reuses the embedding matrix (needs
            embedding_dim == units).
        regularization: a `LanguageModelRegularization` (or its config); None: none.
        initializer: a Keras initializer for every weight matrix (embedding, kernels,
            recurrent kernels, readout), each layer getting its own copy with seed +
            k so that no two start equal; LSTM forget biases then start at 0 (Zaremba
            et al.'s uniform [-0.1, 0.1] start). None: each layer's defaults.
        bidirectional: build a biLM.
        rnn_options: ``{"stateful": bool, "unroll": bool, "batch_size": int}`` for
            every `keras.layers.RNN` (a stateful network needs its fixed batch size).

    Example:

    >>> import numpy as np
    >>> from kerasrnn.models import LanguageModelBackbone
    >>> backbone = LanguageModelBackbone(30, 8, num_layers=2, tie_embeddings=True)
    >>> tuple(backbone(np.array([[2, 5, 6, 0]])).shape)
    (1, 4, 30)
    """

    def __init__(
        self,
        vocabulary_size,
        units,
        num_layers=1,
        cell="lstm",
        embedding_dim=None,
        tie_embeddings=False,
        regularization=None,
        initializer=None,
        bidirectional=False,
        rnn_options=None,
        **kwargs,
    ):
        vocabulary_size = check_int("vocabulary_size", vocabulary_size)
        units = check_int("units", units)
        num_layers = check_int("num_layers", num_layers)
        embedding_dim = check_int("embedding_dim", embedding_dim, allow_none=True) or units
        regularization = deserialize(regularization) or LanguageModelRegularization()
        if not isinstance(regularization, LanguageModelRegularization):
            raise ValueError(
                "`regularization` must be a kerasrnn.models.LanguageModelRegularization "
                f"or None, got {type(regularization).__name__}."
            )
        rnn_options = dict(rnn_options or {})
        unknown = set(rnn_options) - set(RNN_OPTIONS)
        if unknown:
            raise ValueError(f"`rnn_options` takes the keys {RNN_OPTIONS}; got {sorted(unknown)}.")
        batch_size = check_int("batch_size", rnn_options.get("batch_size"), allow_none=True)
        if rnn_options.get("stateful") and batch_size is None:
            raise ValueError(
                "`rnn_options` with stateful=True needs the fixed `batch_size` the states "
                "belong to, e.g. {'stateful': True, 'batch_size': 20}."
            )
        if tie_embeddings and embedding_dim != units:
            raise ValueError(
                f"`tie_embeddings` needs embedding_dim == units, got embedding_dim="
                f"{embedding_dim}, units={units}."
            )
        if tie_embeddings and regularization.embedding_dropout:
            raise ValueError(
                "`embedding_dropout` does not work with `tie_embeddings` (the tied readout "
                "would share the dropped rows); set one of them off."
            )
        template = _cell_template(cell, units)
        initializer = deserialize(initializer)
        if isinstance(initializer, str):
            initializer = keras.initializers.get(initializer)
        layers = _Layers(vocabulary_size, units, embedding_dim, tie_embeddings, initializer)
        layers.regularization, layers.template = regularization, template
        layers.rnn_options = {k: v for k, v in rnn_options.items() if k != "batch_size"}

        if bidirectional:
            inputs = {
                d: keras.Input(batch_shape=(batch_size, None), dtype="int32", name=d)
                for d in DIRECTIONS
            }
            outputs = {
                "forward": layers.direction(inputs["forward"], "", num_layers),
                "backward": layers.direction(inputs["backward"], "backward_", num_layers),
            }
            kwargs.setdefault("name", "bidirectional_language_model")
        else:
            inputs = keras.Input(batch_shape=(batch_size, None), dtype="int32", name="tokens")
            outputs = layers.direction(inputs, "", num_layers)
            kwargs.setdefault("name", "language_model")
        super().__init__(inputs, outputs, **kwargs)
        self.vocabulary_size, self.units, self.num_layers = vocabulary_size, units, num_layers
        self.cell_template, self.embedding_dim = template, embedding_dim
        self.tie_embeddings, self.regularization = bool(tie_embeddings), regularization
        self.initializer, self.bidirectional = initializer, bool(bidirectional)
        self.rnn_options = rnn_options

    # ---- the pieces generation and evaluation use ---------------------------------------
    @property
    def token_embedding(self):
        return self.get_layer("embedding")

    @property
    def readout(self):
        """The Dense readout (None with tied embeddings)."""
        return None if self.tie_embeddings else self.get_layer("logits")

    def rnn_layers(self, direction="forward"):
        """The recurrent layers of one direction, first to last."""
        prefix = "" if direction == "forward" else "backward_"
        return [self.get_layer(f"{prefix}rnn_{i}") for i in range(self.num_layers)]

    def logits(self, hidden):
        """The readout of last-layer outputs `hidden` (..., units)."""
        if self.tie_embeddings:
            return self.token_embedding(hidden, reverse=True)
        return self.readout(hidden)

    def variant(self, **rnn_options):
        """A backbone of the same architecture and weights whose RNNs take
        `rnn_options` (e.g. ``stateful=True, batch_size=20`` for stateful evaluation)."""
        config = dict(self.get_config(), rnn_options=rnn_options)
        config.pop("name", None)
        copy = type(self).from_config(config)
        copy.set_weights(self.get_weights())
        return copy

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "units": self.units,
            "num_layers": self.num_layers,
            "cell": keras.saving.serialize_keras_object(self.cell_template),
            "embedding_dim": self.embedding_dim,
            "tie_embeddings": self.tie_embeddings,
            "regularization": keras.saving.serialize_keras_object(self.regularization),
            "initializer": keras.saving.serialize_keras_object(self.initializer),
            "bidirectional": self.bidirectional,
            "rnn_options": dict(self.rnn_options),
        }


def _cell_template(cell, units):
    from kerasrnn.cells import names

    cell = names.get(cell, units)
    if getattr(cell, "units", units) != units:
        raise ValueError(f"`cell` has {cell.units} units but `units` is {units}: make them equal.")
    return cell


class _Layers:
    """The layers one (bi)LM shares, made in a fixed order (so the weights of every
    variant come in the same order) and a function applying one direction."""

    def __init__(self, vocabulary_size, units, embedding_dim, tied, initializer):
        self.vocabulary_size, self.units, self.embedding_dim = vocabulary_size, units, embedding_dim
        self.tied, self.initializer = tied, initializer
        self.seed = None if initializer is None else initializer.get_config().get("seed")
        self.embedding_options = dict(mask_zero=True, name="embedding")
        if initializer is not None:  # the embedding's first, as the layers' order
            self.embedding_options["embeddings_initializer"] = self.fresh_initializer()
        self.embedding = self.output = None

    def fresh_initializer(self):
        """A copy of the initializer with its own seed (one per weight matrix: a
        seeded Keras initializer draws the same values at every call)."""
        config = dict(self.initializer.get_config(), seed=self.seed)
        if self.seed is not None:
            self.seed += 1
        return type(self.initializer).from_config(config)

    def build_shared(self):
        from kerasrnn.layers import EmbeddingDropout

        regularization = self.regularization
        size, dim = self.vocabulary_size, self.embedding_dim
        if self.tied:
            self.embedding = keras.layers.ReversibleEmbedding(
                size, dim, tie_weights=True, **self.embedding_options
            )
        elif regularization.embedding_dropout:
            self.embedding = EmbeddingDropout(
                size,
                dim,
                rate=regularization.embedding_dropout,
                seed=regularization.seed,
                **self.embedding_options,
            )
        else:
            self.embedding = keras.layers.Embedding(size, dim, **self.embedding_options)
        if not self.tied:
            options = {}
            if self.initializer is not None:
                options["kernel_initializer"] = self.fresh_initializer()
            self.output = keras.layers.Dense(size, name="logits", **options)

    def cell(self, index):
        from kerasrnn.layers import WeightDrop

        config = self.template.get_config()
        if self.initializer is not None:
            config["kernel_initializer"] = self.fresh_initializer()
            config["recurrent_initializer"] = self.fresh_initializer()
            if "unit_forget_bias" in config:
                config["unit_forget_bias"] = False
        config.pop("name", None)
        cell = type(self.template).from_config(config)
        rate = self.regularization.weight_drop
        if rate:
            cell = WeightDrop(cell, rate, seed=self.regularization.seed + index)
        return cell

    def dropouts(self, x, name):
        # plain dropout, then locked dropout (one mask per sequence, over time)
        regularization = self.regularization
        x = keras.layers.Dropout(regularization.dropout, name=name)(x)
        if regularization.locked_dropout:
            x = keras.layers.SpatialDropout1D(
                regularization.locked_dropout, name=name.replace("dropout", "locked_dropout")
            )(x)
        return x

    def direction(self, inputs, prefix, num_layers):
        """One direction: the shared embedding, its own recurrent stack, the shared
        readout."""
        from kerasrnn.layers import ActivationRegularization

        if self.embedding is None:
            self.build_shared()
        regularization = self.regularization
        x = self.dropouts(self.embedding(inputs), f"{prefix}dropout_in")
        for i in range(num_layers):
            x = keras.layers.RNN(
                self.cell(i), return_sequences=True, name=f"{prefix}rnn_{i}", **self.rnn_options
            )(x)
            if i == num_layers - 1 and regularization.tar_beta:  # on the undropped output
                x = ActivationRegularization(beta=regularization.tar_beta, name=f"{prefix}tar")(x)
            x = self.dropouts(x, f"{prefix}dropout_{i}")
        if regularization.ar_alpha:  # on the dropped output, as AWD-LSTM
            x = ActivationRegularization(alpha=regularization.ar_alpha, name=f"{prefix}ar")(x)
        return self.embedding(x, reverse=True) if self.tied else self.output(x)
