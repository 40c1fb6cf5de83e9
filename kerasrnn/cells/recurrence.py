"""Which recurrent layers compute a standard LSTM or GRU: the one test behind every fused kernel.

A fused kernel runs one fixed recurrence over the whole sequence: Keras' fused LSTM / GRU
(cuDNN on a GPU), which `kerasrnn.RNN`'s fast path hands the cell's weights to; ONNX's
`LSTM` / `GRU` operators (`kerasrnn.export.onnx_recurrent`); LiteRT's
`UNIDIRECTIONAL_SEQUENCE_LSTM` (`kerasrnn.export.litert_lstm`). With σ the logistic
sigmoid and Keras' gate order, the LSTM (i, f, c, o)

.. math::

    i_t &= \\sigma(W_i x_t + U_i h_{t-1} + p_i \\odot c_{t-1} + b_i) \\\\
    f_t &= \\sigma(W_f x_t + U_f h_{t-1} + p_f \\odot c_{t-1} + b_f) \\\\
    c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
    h_t &= \\sigma(W_o x_t + U_o h_{t-1} + p_o \\odot c_t + b_o) \\odot \\tanh(c_t)

(the peepholes p only where `peephole`: ONNX's operator has them, Keras' and LiteRT's
kernels do not), and the GRU (z, r, h), with the reset gate after the recurrent matmul
where `reset_after` (cuDNN's form), before it otherwise:

.. math::

    z_t &= \\sigma(W_z x_t + U_z h_{t-1} + b_z), \\quad
    r_t = \\sigma(W_r x_t + U_r h_{t-1} + b_r) \\\\
    \\tilde h_t &= \\tanh(W_h x_t + b_h + r_t \\odot (U_h h_{t-1} + b'_h))
        \\ \\text{or} \\ \\tanh(W_h x_t + U_h (r_t \\odot h_{t-1}) + b_h) \\\\
    h_t &= z_t \\odot h_{t-1} + (1 - z_t) \\odot \\tilde h_t

`recurrence_spec(layer)` says whether a layer's time loop is one of these and describes
it; each reader adds, in its own module, only what its kernel cannot hold (the fast path:
peepholes, recurrent dropout, Keras' own cells; ONNX: stateful layers, other dtypes;
LiteRT: the GRU, `return_state`, ...). The right padding a length-based kernel reads from
a mask is `kerasrnn.ops.right_padding`.
"""

import dataclasses

import keras

from kerasrnn.cells.base import RecurrentCell, config_keys
from kerasrnn.cells.gru import GRUCell
from kerasrnn.cells.lstm import LSTMCell

# The cells that compute the recurrences above, by exact type (a subclass such as the
# layer-normalised LSTM runs its own equations) and their kind.
_CELLS = {
    LSTMCell: "lstm",
    GRUCell: "gru",
    keras.layers.LSTMCell: "lstm",
    keras.layers.GRUCell: "gru",
}

# The LSTM / GRU options the fused kernels reproduce whatever their value, beside every
# option of the base cell (initializers, regularizers and constraints act on the
# variables, not the step; input dropout is applied to the whole sequence first; a
# learned h_0 / c_0 enters the loop as its initial state; the activations, `use_bias`
# and the dropout rates are read below). `unit_forget_bias`, `peephole_initializer`,
# `forget_bias` and `chrono_init` only choose initial values; the others are read below.
# Any other option (one added later) must be at its "off" value for a spec.
_LSTM_GRU_OPTIONS = {
    "unit_forget_bias",
    "peephole_initializer",
    "forget_bias",
    "chrono_init",
    "reset_after",
    "forget_gate",
    "peephole",
    "coupled",
}


def _neutral_options():
    return set(config_keys(RecurrentCell)) | _LSTM_GRU_OPTIONS


@dataclasses.dataclass(frozen=True)
class RecurrenceSpec:
    """The standard LSTM or GRU recurrence a layer computes (`recurrence_spec`).

    Its activations are always tanh and sigmoid (a layer with others has no spec).

    Attributes:
        kind: "lstm" or "gru".
        units: the width of h_t (and c_t).
        reset_after: the GRU's reset gate acts after the recurrent matmul (cuDNN's
            form, ONNX's `linear_before_reset=1`); False for an LSTM.
        peephole: the LSTM's gates see the cell state (p above).
        use_bias: the cell has the biases b (and b').
        dropout: the rate of input dropout (training only; the fused paths apply it to
            the whole sequence before the loop).
        recurrent_dropout: the rate of dropout on h_{t-1} (training only; it acts inside
            the loop).
        keras_cell: the cell is Keras' own `keras.layers.LSTMCell` / `GRUCell` (the
            cell of `keras.layers.LSTM` / `GRU`), not kerasrnn's.
        wrapped: the layer holds the cell through a weight-only wrapper
            (`kerasrnn.layers.WeightDrop`) that lends the cell the weights of each call.
        go_backwards, return_sequences, return_state, stateful, unroll: the layer's.
        dtype: the layer's compute dtype ("float32", "bfloat16" under mixed precision).
    """

    kind: str
    units: int
    reset_after: bool
    peephole: bool
    use_bias: bool
    dropout: float
    recurrent_dropout: float
    keras_cell: bool
    wrapped: bool
    go_backwards: bool
    return_sequences: bool
    return_state: bool
    stateful: bool
    unroll: bool
    dtype: str


def _standard_kind(cell):
    """ "lstm" or "gru" when `cell` computes one of the module's recurrences, else None."""
    kind = _CELLS.get(type(cell))
    if kind is None:
        return None
    if getattr(cell, "coupled", False) or not getattr(cell, "forget_gate", True):
        return None  # the coupled input-forget gate, the 1997 cell without a forget gate
    if cell.activation is not keras.activations.tanh:
        return None
    if cell.recurrent_activation is not keras.activations.sigmoid:
        return None
    for key, value in cell.get_config().items():
        if key not in _neutral_options() and value not in (None, False, 0, 0.0):
            return None  # an option this module does not know is switched on
    return kind


def fused_cell(layer):
    """The cell whose recurrence `layer` runs, whose weights a fused kernel takes: the
    layer's cell, or the cell a weight-only wrapper (`kerasrnn.layers.WeightDrop`)
    exposes as `fused_cell`."""
    return getattr(layer.cell, "fused_cell", layer.cell)


def recurrence_spec(layer):
    """The standard LSTM / GRU recurrence `layer`'s time loop computes, or None.

    A `RecurrenceSpec` for a `keras.layers.RNN` (`keras.layers.LSTM` / `GRU` and
    `kerasrnn.RNN` included; pass the layers a `keras.layers.Bidirectional` or a
    `kerasrnn.RNNStack` holds) whose cell is exactly a kerasrnn `LSTMCell` with a
    forget gate and no coupling (peepholes allowed: the spec says so), a kerasrnn
    `GRUCell` (either reset placement), or Keras' `LSTMCell` / `GRUCell`, possibly in a
    weight-only wrapper, with tanh and sigmoid activations and no other option switched
    on. None for every other layer: a subclass of those cells (the layer-normalised
    LSTM), the simple RNN, NAS and ESN cells, a cell with attention or of your own,
    other activations, `StackedRNNCells`, a layer that is no `keras.layers.RNN`.

    Which readers take a spec is theirs to say: `kerasrnn.RNN`'s fast path
    (`kerasrnn.cells.rnn.fused_kind`), ONNX's operators
    (`kerasrnn.export.onnx_recurrent.native_spec`) and LiteRT's fused LSTM
    (`kerasrnn.export.litert_lstm.fusable_lstm_cell`).

    Example:

    >>> import keras, kerasrnn
    >>> from kerasrnn.cells import recurrence_spec
    >>> spec = recurrence_spec(kerasrnn.RNN(kerasrnn.GRUCell(8), go_backwards=True))
    >>> spec.kind, spec.units, spec.reset_after, spec.go_backwards
    ('gru', 8, True, True)
    >>> recurrence_spec(keras.layers.LSTM(8)).keras_cell
    True
    >>> recurrence_spec(kerasrnn.RNN(kerasrnn.LSTMCell(8, coupled=True))) is None
    True
    """
    if not isinstance(layer, keras.layers.RNN):
        return None
    cell = fused_cell(layer)
    kind = _standard_kind(cell)
    if kind is None:
        return None
    return RecurrenceSpec(
        kind=kind,
        units=int(cell.units),
        reset_after=kind == "gru" and bool(cell.reset_after),
        peephole=bool(getattr(cell, "peephole", False)),
        use_bias=bool(cell.use_bias),
        dropout=float(cell.dropout),
        recurrent_dropout=float(cell.recurrent_dropout),
        keras_cell=type(cell) in (keras.layers.LSTMCell, keras.layers.GRUCell),
        wrapped=cell is not layer.cell,
        go_backwards=bool(layer.go_backwards),
        return_sequences=bool(layer.return_sequences),
        return_state=bool(layer.return_state),
        stateful=bool(layer.stateful),
        unroll=bool(layer.unroll),
        dtype=keras.backend.standardize_dtype(layer.compute_dtype),
    )
