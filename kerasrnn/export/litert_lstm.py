"""LiteRT's fused LSTM kernel for the standard LSTM layers of an exported model.

LiteRT has a builtin `UNIDIRECTIONAL_SEQUENCE_LSTM` that runs a whole LSTM layer in one
op (the kernel microcontroller and NPU delegates take, where a builtin `WHILE` runs the
step graph once per step). The TFLite converter writes it for a TensorFlow function that
declares it implements a Keras LSTM (``api_implements="lstm_<id>"``, the convention of
Keras 2's LSTM layer): it replaces the function's body by the fused op, provided

- the arguments are ``(inputs, h_0, c_0, kernel, recurrent_kernel, bias)``, batch-major,
  every shape static, weights in Keras' layout (gates i, f, c, o);
- the call's results are ``(last_output, outputs, h_T, c_T, runtime)`` and only the
  first two are read (the kernel returns the output sequence only).

`fused_lstm_loops` routes the layers whose loop the kernel computes exactly
(`fusable_lstm_cell`: a `keras.layers.LSTM`, or `keras.layers.RNN` / `kerasrnn.RNN` over
a standard LSTM cell, `kerasrnn.cells.recurrence_spec`, float32, whose states nobody
reads) through such a function while the export traces the model. The kernel takes no
mask; the route here keeps Keras' masked results exactly, for any mask (right padding,
left padding, holes): each row's unmasked steps are gathered to the front in order (the
row right padded, `kerasrnn.ops.right_padding`), the kernel runs on them, and each
position t reads back the output after its row's n_t = sum_{s<=t} m_s real steps,

.. math::  y_t = \\begin{cases} \\tilde h_{n_t - 1} & m_t = 1 \\text{ or }
           (n_t > 0 \\text{ and not zero\\_output\\_for\\_mask}) \\\\ 0 & \\text{otherwise}
           \\end{cases}

which is `keras.layers.RNN`'s masked step (a padded step keeps the state and repeats the
previous output, zeros before the first real step or with ``zero_output_for_mask``).
`go_backwards` reverses the sequence and its mask first, as Keras does.

The converter sets the kernel's cell clip to 10 (|c_t| <= 10), which Keras' LSTM does not
have; `unclipped` sets it back to none in the written flatbuffer.
"""

import contextlib
import functools
import itertools
import uuid

import keras

from kerasrnn.cells.recurrence import recurrence_spec
from kerasrnn.cells.rnn import RNN
from kerasrnn.export._formats import LOGGER, sublayers
from kerasrnn.ops import right_padding

FUSED_LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"

# The layer classes whose call is keras.layers.RNN's (subclasses such as AttentiveRNN run
# their own step, with attention, and keep the loop).
_RNN_LAYERS = (keras.layers.RNN, keras.layers.LSTM, RNN)


def fusable_lstm_cell(layer):
    """The LSTM cell of `layer` if LiteRT's fused kernel computes the layer's loop
    exactly at inference, else None: `layer` is a `keras.layers.LSTM`, or a
    `keras.layers.RNN` / `kerasrnn.RNN` over a standard LSTM cell
    (`kerasrnn.cells.recurrence_spec`: Keras' `LSTMCell`, or a `kerasrnn.LSTMCell` with
    tanh and sigmoid, a forget gate, no coupling) held directly, without peepholes (the
    kernel the converter writes has none), in float32, and neither `return_state` nor
    `stateful` (the kernel returns the output sequence, not c_T). Dropout acts in
    training only."""
    if type(layer) not in _RNN_LAYERS:
        return None
    spec = recurrence_spec(layer)
    if spec is None or spec.kind != "lstm" or spec.peephole or spec.wrapped:
        return None
    if spec.return_state or spec.stateful or spec.dtype != "float32":
        return None
    return layer.cell


@contextlib.contextmanager
def fused_lstm_loops(model):
    """While the block runs, every layer of `model` that `fusable_lstm_cell` accepts runs
    its loop through the function the converter fuses; yields the list the layers are
    appended to as they run (a layer called twice is there twice).

    The layer's `inner_loop` (the method `keras.layers.RNN.call` runs the time loop
    with) is shadowed by an attribute of the instance for the block only, so the model
    is unchanged afterwards."""
    layers = [layer for layer in sublayers(model) if fusable_lstm_cell(layer) is not None]
    traced = []
    for layer in layers:
        layer.inner_loop = functools.partial(_fused_inner_loop, layer, traced)
    try:
        yield traced
    finally:
        for layer in layers:
            del layer.inner_loop


_STATE_IDS = itertools.count(1)


def _computed(state, x):
    """`state` as a value computed at run time from the input `x`, distinct from every
    other kernel's state operand.

    The kernel updates its two state operands in place. A constant operand (the zeros
    of a layer called without an initial state, a learned initial state) becomes a
    variable tensor of the file: zero-initialised, whatever the constant, and carrying
    the last call's final state into the next call. A computed operand is recomputed
    at each call. Each gets its own factor k so that the converter does not merge two
    operands into one tensor (which it refuses for computed operands):
    state + k * (0 * x_0)."""
    zero = x[:, 0, :1] * 0.0
    return state + zero * float(next(_STATE_IDS))


def _fused_inner_loop(layer, traced, sequences, initial_state, mask=None, training=False):
    """`keras.layers.RNN.inner_loop` of `layer` through the fused LSTM: (last_output,
    outputs, states) as Keras computes them; states are not the layer's (see below)."""
    import tensorflow as tf

    traced.append(layer)

    if isinstance(mask, (list, tuple)):
        mask = mask[0]
    h0, c0 = initial_state
    cell = layer.cell
    time = sequences.shape[1]
    x = sequences
    if mask is not None:
        mask = tf.cast(mask, tf.int32)
    if layer.go_backwards:
        x = tf.reverse(x, [1])
        mask = None if mask is None else tf.reverse(mask, [1])
    if mask is not None:
        # n_t: real steps up to t; the j-th real step of a row sits at the number of
        # positions t with n_t <= j (positions past the row's last one: any step)
        counts = right_padding(mask).steps
        steps = tf.range(time, dtype=tf.int32)
        order = tf.reduce_sum(tf.cast(counts[:, None, :] <= steps[None, :, None], tf.int32), axis=2)
        x = tf.gather(x, tf.minimum(order, time - 1), batch_dims=1)
    h0, c0 = (_computed(state, x) for state in (h0, c0))
    bias = cell.bias if cell.use_bias else tf.zeros([4 * cell.units])
    outputs = _implements_keras_lstm()(
        x,
        h0,
        c0,
        tf.convert_to_tensor(cell.kernel),
        tf.convert_to_tensor(cell.recurrent_kernel),
        tf.convert_to_tensor(bias),
    )[1]
    if mask is not None:
        outputs = tf.gather(outputs, tf.maximum(counts - 1, 0), batch_dims=1)
        keep = mask > 0 if layer.zero_output_for_mask else counts > 0
        outputs = tf.where(keep[..., None], outputs, tf.zeros_like(outputs))
    last_output = outputs[:, -1]
    if not layer.return_sequences:
        outputs = last_output[:, None]
    # keras.layers.RNN reads the states only with return_state or stateful, which
    # `fusable_lstm_cell` leaves on the loop: these two only fill the structure.
    return last_output, outputs, [last_output, tf.zeros_like(last_output)]


def _implements_keras_lstm():
    """A new function (its own id: the converter fuses each call site once) that computes
    a zero-state LSTM and declares it implements the Keras LSTM the converter fuses:
    (x, h_0, c_0, W, U, b) -> (last_output, outputs, h_T, c_T, runtime)."""
    import tensorflow as tf

    return tf.function(
        _keras_lstm,
        autograph=False,
        experimental_attributes={
            "api_implements": f"lstm_{uuid.uuid4().hex}",
            "time_major": False,
            "go_backwards": False,
        },
    )


def _keras_lstm(x, h0, c0, kernel, recurrent_kernel, bias):
    """The LSTM the function declares, for TensorFlow's own runs of it (the converter
    replaces it by the kernel): i, f, g, o = split(x_t W + h_{t-1} U + b),
    c_t = sigma(f) c_{t-1} + sigma(i) tanh(g), h_t = sigma(o) tanh(c_t)."""
    import tensorflow as tf

    def step(carry, x_t):
        h, c = carry
        i, f, g, o = tf.split(x_t @ kernel + h @ recurrent_kernel + bias, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c), c

    hs, cs = tf.scan(step, tf.transpose(x, (1, 0, 2)), initializer=(h0, c0))
    outputs = tf.transpose(hs, (1, 0, 2))
    return outputs[:, -1], outputs, hs[-1], cs[-1], tf.constant(0.0)


class FusionError(ValueError):
    """A fused LSTM the file cannot run as Keras does (`finished_fused_lstms`)."""


def finished_fused_lstms(flatbuffer, layers):
    """`flatbuffer` (bytes) with the cell clip of every fused LSTM set to none, after
    checking that each kernel's state operands are computed tensors of their own;
    logs a line if fewer kernels than the traced `layers` were fused.

    The converter writes ``cell_clip=10`` into the fused op of a Keras LSTM, so a cell
    state beyond +-10 (a long sequence with a saturated forget gate) would differ from
    Keras'. The option is a float field of the op's options table: it is overwritten in
    place, nothing else in the file moves.

    Raises:
        FusionError: a state operand that is a constant (a variable tensor of the file,
            carried from call to call) or shared by two operands (`_computed`).
    """
    import struct

    from ai_edge_litert import schema_py_generated as schema

    data = bytearray(flatbuffer)
    model = schema.Model.GetRootAs(data, 0)
    codes = [
        max(model.OperatorCodes(i).BuiltinCode(), model.OperatorCodes(i).DeprecatedBuiltinCode())
        for i in range(model.OperatorCodesLength())
    ]
    fused = 0
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        ops = [subgraph.Operators(o) for o in range(subgraph.OperatorsLength())]
        computed = {int(t) for op in ops for t in op.OutputsAsNumpy()}
        states = []
        for op in ops:
            if codes[op.OpcodeIndex()] != schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM:
                continue
            fused += 1
            states.extend(int(op.Inputs(i)) for i in (18, 19))  # h_0, c_0
            table = op.BuiltinOptions()
            options = schema.UnidirectionalSequenceLSTMOptions()
            options.Init(table.Bytes, table.Pos)
            # cell_clip is the options table's second field (vtable slot 6), read and
            # written through the flatbuffers `Table` the operator returns
            field = table.Offset(6)
            if field and options.CellClip() != 0.0:
                struct.pack_into("<f", data, table.Pos + field, 0.0)
        if len(set(states)) < len(states) or not computed.issuperset(states):
            raise FusionError("a fused LSTM's state operand is a constant or shared")
    if fused < len(layers):
        LOGGER.warning(
            "%d of %d standard LSTM layer(s) kept the WHILE loop instead of LiteRT's fused "
            "LSTM (%s)",
            len(layers) - fused,
            len(layers),
            ", ".join(layer.name for layer in layers),
        )
    return bytes(data)
