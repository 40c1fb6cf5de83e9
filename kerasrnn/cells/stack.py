"""A layer for the common recurrent stacks: deep, bidirectional, residual, with dropout."""

import keras

from kerasrnn.cells.rnn import RNN
from kerasrnn.validation import check_int, check_rate

MERGE_MODES = ("concat", "sum", "ave", "mul")


@keras.saving.register_keras_serializable(package="kerasrnn")
class RNNStack(keras.layers.Layer):
    """`num_layers` recurrent layers built from one cell template.

    Layer l maps the sequence x^(l) to y^(l) = RNN_l(x^(l)) (or the merged forward and
    backward sequences when `bidirectional`); between layers

    .. math::  x^{(l+1)} = \\mathrm{dropout}\\big(y^{(l)} + [\\text{residual}]\\; x^{(l)}\\big)

    where the residual term is added only where the widths agree (from the second layer
    on, unless the input already has the layer's width). Each layer and direction gets
    its own copy of the cell (`cell.__class__.from_config(cell.get_config())`). This is
    a convenience: every cell works in plain `keras.layers.RNN` / `Bidirectional` too.

    Args:
        cell: a cell instance used as a template (any kerasrnn or Keras cell).
        num_layers: depth of the stack.
        bidirectional: read each layer's input both ways and merge.
        merge_mode: how directions merge: "concat", "sum", "ave" or "mul".
        residual: add each layer's input to its output where the widths agree.
        dropout: dropout rate on the sequences passed between layers.
        return_sequences: return the last layer's whole sequence, or only its final
            output (for a bidirectional layer: [h_fwd at the last real step ; h_bwd at
            the first], the two states that have seen the whole sequence).
        return_state: also return the final states of every layer and direction, as
            `[output, *states]` with `states` ordered layer by layer, each layer's
            forward states then its backward states (the order of
            `keras.layers.Bidirectional(return_state=True)`; for an LSTM cell
            h_fwd, c_fwd, h_bwd, c_bwd). Padded steps (masked input) never change a
            state, so these are the states after each sequence's last real step (the
            backward direction's after the first).
        return_all_layers: return the list of every layer's output sequence
            (`num_layers` tensors, each after the residual connection and before the
            dropout; needs `return_sequences=True`) instead of the last one, for a
            learned combination of layers (ELMo's scalar mix). With `return_state`:
            `[outputs, *states]`.

    Example:

    >>> import numpy as np, kerasrnn
    >>> stack = kerasrnn.RNNStack(kerasrnn.GRUCell(8), num_layers=2, bidirectional=True)
    >>> tuple(stack(np.zeros((2, 5, 3), "float32")).shape)
    (2, 16)
    >>> stack = kerasrnn.RNNStack(kerasrnn.LSTMCell(8), num_layers=2, bidirectional=True,
    ...                           return_sequences=True, return_state=True)
    >>> output, *states = stack(np.zeros((2, 5, 3), "float32"))
    >>> tuple(output.shape), len(states), tuple(states[0].shape)
    ((2, 5, 16), 8, (2, 8))
    """

    def __init__(
        self,
        cell,
        num_layers=1,
        bidirectional=False,
        merge_mode="concat",
        residual=False,
        dropout=0.0,
        return_sequences=False,
        return_state=False,
        return_all_layers=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(cell, dict):
            cell = keras.saving.deserialize_keras_object(cell)
        if not hasattr(cell, "state_size"):
            raise ValueError(f"`cell` must be an RNN cell (with `state_size`); got {cell!r}.")
        num_layers = check_int("num_layers", num_layers)
        if merge_mode not in MERGE_MODES:
            raise ValueError(f"`merge_mode` must be one of {MERGE_MODES}, got {merge_mode!r}.")
        dropout = check_rate("dropout", dropout)
        self.cell = cell
        self.num_layers = num_layers
        self.bidirectional = bool(bidirectional)
        self.merge_mode = merge_mode
        self.residual = bool(residual)
        self.dropout = float(dropout)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.return_all_layers = bool(return_all_layers)
        if self.return_all_layers and not self.return_sequences:
            raise ValueError(
                "`return_all_layers=True` returns every layer's output sequence and needs "
                "`return_sequences=True`."
            )
        self.supports_masking = True
        self.rnn_layers = []
        for index in range(num_layers):
            last = index == num_layers - 1
            rnn = RNN(
                self._copy_cell(),
                return_sequences=self.return_sequences or not last,
                return_state=self.return_state,
                name=f"rnn_{index}",
            )
            if self.bidirectional:
                rnn = keras.layers.Bidirectional(
                    rnn,
                    merge_mode=merge_mode,
                    backward_layer=RNN(
                        self._copy_cell(),
                        return_sequences=rnn.return_sequences,
                        return_state=self.return_state,
                        go_backwards=True,
                        name=f"rnn_{index}_backward",
                    ),
                    name=f"bidirectional_{index}",
                )
            self.rnn_layers.append(rnn)
        self.dropout_layer = keras.layers.Dropout(self.dropout) if self.dropout else None

    def _copy_cell(self):
        return self.cell.__class__.from_config(self.cell.get_config())

    def build(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) != 3:
            raise ValueError(
                f"{type(self).__name__} expects a sequence of vectors (batch, time, "
                f"features); got shape {shape}. Embed token ids first "
                "(keras.layers.Embedding), or add a feature axis with x[..., None]."
            )
        for layer in self.rnn_layers:
            layer.build(shape)
            out = layer.compute_output_shape(shape)
            if isinstance(out[0], (list, tuple)):  # [output, *states] with return_state
                out = out[0]
            shape = tuple(shape[:-1]) + (out[-1],)
        self.built = True

    def call(self, inputs, mask=None, training=False):
        x, states, outputs = inputs, [], []
        for index, layer in enumerate(self.rnn_layers):
            y = layer(x, mask=mask, training=training)
            if self.return_state:
                y, layer_states = y[0], list(y[1:])
                states.extend(layer_states)
            last = index == len(self.rnn_layers) - 1
            if last and not self.return_sequences:
                x = y
                break
            if self.residual and y.shape[-1] == x.shape[-1]:
                y = y + x
            outputs.append(y)
            if self.dropout_layer is not None and not last:
                y = self.dropout_layer(y, training=training)
            x = y
        output = outputs if self.return_all_layers else x
        return [output, *states] if self.return_state else output

    def _state_widths(self):
        size = self.cell.state_size
        widths = [int(s) for s in (size if isinstance(size, (list, tuple)) else [size])]
        return widths * (2 if self.bidirectional else 1) * self.num_layers

    def compute_mask(self, inputs, mask=None):
        output_mask = mask if self.return_sequences else None
        if self.return_all_layers:
            output_mask = [output_mask] * self.num_layers
        if self.return_state:
            return [output_mask] + [None] * len(self._state_widths())
        return output_mask

    def compute_output_shape(self, input_shape):
        width = self.cell.output_size
        if isinstance(width, (list, tuple)):
            width = width[0]
        if self.bidirectional and self.merge_mode == "concat":
            width *= 2
        if self.return_sequences:
            output = tuple(input_shape[:-1]) + (width,)
        else:
            output = (input_shape[0], width)
        if self.return_all_layers:
            output = [output] * self.num_layers
        if self.return_state:
            return [output] + [(input_shape[0], w) for w in self._state_widths()]
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "num_layers": self.num_layers,
                "bidirectional": self.bidirectional,
                "merge_mode": self.merge_mode,
                "residual": self.residual,
                "dropout": self.dropout,
                "return_sequences": self.return_sequences,
                "return_state": self.return_state,
                "return_all_layers": self.return_all_layers,
            }
        )
        return config
