"""The recurrent encoder of an encoder-decoder: sequences and final states."""

import keras

from kerasrnn.cells.stack import RNNStack


@keras.saving.register_keras_serializable(package="kerasrnn")
class RNNEncoder(RNNStack):
    """An embedding-free recurrent encoder: `RNNStack` returning the top layer's whole
    sequence (the attention memory h_1 ... h_Tx) **and** its final states (what a
    decoder starts from).

    Layer l maps x^(l) to y^(l) (the merged forward and backward sequences when
    `bidirectional`); between layers x^(l+1) = dropout(y^(l) + [residual] x^(l)), as in
    `RNNStack`. Padded steps (an `Embedding(mask_zero=True)` before it, or `mask=`)
    never change a state, so the final states are those after each sequence's last real
    token (the backward direction's after its first).

    Args:
        cell: a cell instance used as a template (any kerasrnn or Keras cell); each
            layer and direction gets its own copy.
        num_layers: depth.
        bidirectional: read each layer's input both ways (default True).
        merge_mode: how directions merge: "concat", "sum", "ave" or "mul".
        residual: add each layer's input to its output where the widths agree.
        dropout: dropout rate on the sequences passed between layers.

    Call arguments:
        inputs: `(batch, time, features)` (e.g. embedded source tokens).
        mask: optional `(batch, time)` booleans, true at real tokens.
        training: dropout on or off.

    Returns:
        `(sequences, states)`: the top layer's outputs `(batch, time, width)` and the
        list of its final states, the forward ones then (if bidirectional) the
        backward ones, e.g. `[h_fwd, c_fwd, h_bwd, c_bwd]` for an LSTM: what
        `kerasrnn.AttentiveRNN(bridge=True)` takes as `initial_state`. (All layers'
        states: `RNNStack(..., return_state=True)`.)

    Example:

    >>> import numpy as np, kerasrnn
    >>> encoder = kerasrnn.seq2seq.RNNEncoder(kerasrnn.LSTMCell(8), num_layers=2)
    >>> sequences, states = encoder(np.zeros((2, 5, 3), "float32"))
    >>> tuple(sequences.shape), [tuple(s.shape) for s in states]
    ((2, 5, 16), [(2, 8), (2, 8), (2, 8), (2, 8)])
    """

    def __init__(
        self,
        cell,
        num_layers=1,
        bidirectional=True,
        merge_mode="concat",
        residual=False,
        dropout=0.0,
        **kwargs,
    ):
        for fixed in ("return_sequences", "return_state", "return_all_layers"):
            kwargs.pop(fixed, None)  # RNNStack's config carries them; they are fixed here
        super().__init__(
            cell,
            num_layers=num_layers,
            bidirectional=bidirectional,
            merge_mode=merge_mode,
            residual=residual,
            dropout=dropout,
            return_sequences=True,
            return_state=True,
            **kwargs,
        )

    @property
    def states_per_layer(self):
        """How many final state tensors `call` returns (both directions)."""
        return len(self._state_widths()) // self.num_layers

    @property
    def output_width(self):
        """The width of the returned sequences (the attention memory's d)."""
        return self.compute_output_shape((None, None, 1))[0][-1]

    def call(self, inputs, mask=None, training=False):
        output, *states = super().call(inputs, mask=mask, training=training)
        return output, states[-self.states_per_layer :]

    def compute_mask(self, inputs, mask=None):
        return mask, [None] * self.states_per_layer

    def compute_output_shape(self, input_shape):
        output, *states = super().compute_output_shape(input_shape)
        return output, states[-self.states_per_layer :]

    def get_config(self):
        config = super().get_config()
        for fixed in ("return_sequences", "return_state", "return_all_layers"):
            config.pop(fixed)
        return config
