"""ELMo's contextual word features from a trained bidirectional language model
(`BiLMFeatures`), to be mixed with `kerasrnn.layers.ScalarMix` (Peters et al. 2018)."""

import keras


def _stateless(layer):
    """`layer` itself, or a stateless copy with its weights when it is a stateful RNN
    (stream training keeps states across batches; features read whole sentences)."""
    if not getattr(layer, "stateful", False):
        return layer
    copy = layer.__class__.from_config({**layer.get_config(), "stateful": False})
    inputs = layer.input  # a list for a model loaded from a file (inputs, initial states)
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    copy.build((None, None, inputs.shape[-1]))
    copy.set_weights(layer.get_weights())
    return copy


def reverse_padded(x, lengths):
    """Reverses the first `lengths[b]` steps of each row b of `x` (batch, time, ...),
    leaving the padding after them in place."""
    from keras import ops

    time = ops.arange(ops.shape(x)[1], dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    index = ops.where(time < lengths, lengths - 1 - time, time)
    while len(index.shape) < len(x.shape):
        index = ops.expand_dims(index, -1)
    return ops.take_along_axis(x, ops.broadcast_to(index, ops.shape(x)), axis=1)


@keras.saving.register_keras_serializable(package="kerasrnn")
class BiLMFeatures(keras.layers.Layer):
    """A trained biLM's per-layer contextual features (ELMo's representations).

    Token ids of the biLM vocabulary (batch, time), 0 = padding, in -> a list of
    L + 1 tensors (batch, time, 2 * units), one per layer:

        h_0 = [e_t ; e_t],   h_k = [f_k,t ; b_k,t]  (k = 1 .. L)

    with e_t the token embedding (doubled to the width of the others, as in ELMo),
    f_k,t the forward LM's layer k after reading the sentence up to t, and b_k,t the
    backward LM's layer k after reading it from its end back to t. Each direction
    starts from zero states with the sentence boundary it was trained on
    (`boundary_id`: [END] for stream training, where every sentence follows an [END];
    [START] for per-sentence training) and reads the sentence (the backward one its
    reversal, `reverse_padded`); the boundary's own output is dropped. Mix them with
    `kerasrnn.layers.ScalarMix`. Dropout is off; `trainable=False` freezes the biLM.

    Args:
        embedding: the biLM's embedding layer (or its serialized config).
        forward_layers: its forward recurrent layers (stateless), bottom first.
        backward_layers: its backward recurrent layers.
        boundary_id: the token that precedes every sentence.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.layers import BiLMFeatures, ScalarMix
    >>> embedding = keras.layers.Embedding(10, 4)
    >>> layers = [[keras.layers.RNN(keras.layers.LSTMCell(4), return_sequences=True)
    ...            for _ in range(2)] for _ in range(2)]
    >>> features = BiLMFeatures(embedding, layers[0], layers[1], boundary_id=2)
    >>> out = features(np.array([[4, 5, 6, 0]]))
    >>> len(out), tuple(out[0].shape), tuple(ScalarMix()(out).shape)
    (3, (1, 4, 8), (1, 4, 8))
    """

    def __init__(self, embedding, forward_layers, backward_layers, boundary_id, **kwargs):
        super().__init__(**kwargs)

        def layer(item):
            return keras.layers.deserialize(item) if isinstance(item, dict) else item

        self.embedding = layer(embedding)
        self.forward_layers = [layer(item) for item in forward_layers]
        self.backward_layers = [layer(item) for item in backward_layers]
        if len(self.forward_layers) != len(self.backward_layers):
            raise ValueError(
                "BiLMFeatures needs as many forward as backward layers; got "
                f"{len(self.forward_layers)} and {len(self.backward_layers)}."
            )
        self.boundary_id = int(boundary_id)
        # `trainable=False` reached the base class before the sublayers existed
        for layer in [self.embedding, *self.forward_layers, *self.backward_layers]:
            layer.trainable = self.trainable

    @classmethod
    def from_model(
        cls,
        model,
        boundary_id,
        embedding="embedding",
        forward="rnn_",
        backward="backward_rnn_",
        **kwargs,
    ):
        """The features of a trained biLM `model`: its layer named `embedding` and its
        recurrent layers named `forward` + index and `backward` + index (0, 1, ...), as
        the language-model recipe names them. Stateful layers (stream training) are
        copied as stateless ones with the same weights.

        Raises:
            ValueError: `model` has no such embedding, or no backward layers.
        """
        names = [layer.name for layer in model.layers]
        if embedding not in names:
            raise ValueError(
                f"BiLMFeatures.from_model: `model` has no layer {embedding!r}; "
                f"its layers: {names[:12]}."
            )

        def stack(prefix):
            found = [
                model.get_layer(f"{prefix}{i}")
                for i in range(len(names))
                if f"{prefix}{i}" in names
            ]
            return [_stateless(layer) for layer in found]

        forward_layers, backward_layers = stack(forward), stack(backward)
        if not forward_layers or not backward_layers:
            raise ValueError(
                "contextual features need a bidirectional language model (layers "
                f"{forward}0.. and {backward}0..; train it with --bidirectional true); "
                f"got layers {names[:12]}."
            )
        return cls(
            model.get_layer(embedding), forward_layers, backward_layers, boundary_id, **kwargs
        )

    def build(self, input_shape):
        if not self.embedding.built:
            self.embedding.build(tuple(input_shape))
        for stack in (self.forward_layers, self.backward_layers):
            width = self.embedding.output_dim
            for layer in stack:
                if not layer.built:
                    layer.build((None, None, width))
                width = layer.cell.units
        self.built = True

    def call(self, ids, training=None):
        from keras import ops

        ids = ops.cast(ids, "int32")
        mask = ops.not_equal(ids, 0)
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        start = ops.full((ops.shape(ids)[0], 1), self.boundary_id, "int32")
        step_mask = ops.concatenate([ops.ones_like(mask[:, :1]), mask], axis=1)

        def read(tokens, layers):
            x = ops.take(self.embedding.embeddings, tokens, axis=0)
            x = ops.cast(x, self.compute_dtype)
            outputs = [x[:, 1:]]
            for layer in layers:
                x = layer(x, mask=step_mask, training=training)
                outputs.append(x[:, 1:])
            return outputs

        forward = read(ops.concatenate([start, ids], axis=1), self.forward_layers)
        backward = read(
            ops.concatenate([start, reverse_padded(ids, lengths)], axis=1), self.backward_layers
        )
        return [
            ops.concatenate([f, reverse_padded(b, lengths)], axis=-1)
            for f, b in zip(forward, backward)
        ]

    def compute_mask(self, ids, mask=None):
        from keras import ops

        return [ops.not_equal(ids, 0)] * (len(self.forward_layers) + 1)

    def get_config(self):
        config = super().get_config()
        config.update(
            embedding=keras.layers.serialize(self.embedding),
            forward_layers=[keras.layers.serialize(x) for x in self.forward_layers],
            backward_layers=[keras.layers.serialize(x) for x in self.backward_layers],
            boundary_id=self.boundary_id,
        )
        return config
