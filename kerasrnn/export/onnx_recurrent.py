"""ONNX's native `LSTM` / `GRU` operators for a model's standard recurrent layers.

tf2onnx turns Keras' time loop (a `tf.while_loop`) into an ONNX `Loop` whose body holds
the cell's matmuls and gates, run step by step by the runtime's generic loop; its
rewriters that find an LSTM or GRU in a TensorFlow graph match only the graphs Keras 2
wrote. onnxruntime's `LSTM` / `GRU` kernels run the whole sequence in one fused call
(the input projection of every step in one matmul, `sequence_lens` for padded rows).

How the operator gets in (`native_recurrences`): for the trace of the export only,
each eligible layer's time loop (`keras.layers.RNN.inner_loop`) is replaced by a
marker, a `tf.numpy_function` (a `PyFunc` node, never run) that takes exactly the
operator's inputs, already in its layout: the time-major sequence, the weights
re-ordered to ONNX's gate order (TensorFlow's constant folding, after the weights are
frozen, leaves them as constants), `sequence_lens` from the mask and the initial
states. A tf2onnx custom op handler then rewrites each marker into the operator. This
was chosen over rewriting the written ONNX graph: the `Loop` tf2onnx writes (and the
mask and transpose arithmetic around it) has no stable shape to find and replace,
while the marker carries the operator's inputs and nothing else. Everything around the
loop (the mask, `return_sequences`, `return_state`, `Bidirectional`'s merge) stays
Keras' own code, traced as usual.

Which layers (`native_spec`): those `kerasrnn.cells.recurrence_spec` describes, not
stateful, float32: a `keras.layers.RNN` (`LSTM` / `GRU` included) or `kerasrnn.RNN`
whose cell is exactly a `keras.layers.LSTMCell` / `GRUCell`, a kerasrnn `LSTMCell`
with a forget gate and no coupling (its peepholes, if any, are the operator's `P`: the
input and forget gates see c_{t-1}, the output gate c_t, as in the cell) or a kerasrnn
`GRUCell` (either reset placement), with tanh and sigmoid activations. Dropout and
recurrent dropout do not act at inference; `unit_forget_bias`, `forget_bias` and
`chrono_init` only set the bias's initial value; a learned initial state enters as the
operator's `initial_h` / `initial_c`. Every other cell keeps the `Loop`.

The two layers of a `keras.layers.Bidirectional` called without initial states (the
layers of `kerasrnn.RNNStack(bidirectional=True)` too) become one operator with
``direction="bidirectional"``.

Masks are read as right padding (`kerasrnn.ops.right_padding`): each row's
`sequence_lens` is its number of unmasked steps, and the operator reads the first that
many. That is what `Embedding(mask_zero=
True)` gives for right-padded ids; a mask with holes or left padding would need the
`Loop` (`native_recurrences=False`).
"""

import contextlib
import re

import keras

from kerasrnn.cells.recurrence import recurrence_spec
from kerasrnn.ops import right_padding

# ONNX's gate order from Keras' (LSTM: Keras i, f, c, o -> ONNX i, o, f, c; GRU: both
# z, r, h)
_GATES = {"lstm": [0, 3, 1, 2], "gru": [0, 1, 2]}
_OPERATORS = {"lstm": "LSTM", "gru": "GRU"}
# the marker's name: the index of its operator in `_NativeRecurrences.markers`
_MARKER = "KerasrnnNativeRecurrence"
# where a `GenerativeTask` keeps its compiled generate functions
_COMPILED_GENERATE = "_compiled_generate"


def native_spec(layer):
    """`layer`'s `kerasrnn.cells.recurrence_spec` where ONNX's operator computes exactly
    what its time loop does at inference, else None (the module docstring lists the
    conditions): any standard recurrence (peepholes are the operator's `P`; dropout acts
    in training only), not stateful, in float32, its cell held directly (the operator's
    weights are read from `layer.cell`)."""
    spec = recurrence_spec(layer)
    if spec is None or spec.stateful or spec.dtype != "float32" or spec.wrapped:
        return None
    return spec


def _onnx_weights(cell, spec):
    """The weights of `cell` (of the recurrence `spec`) as ONNX's `W` [4H or 3H, input],
    `R` [.., H] and `B` [2 x ..] (input then recurrent bias), gate blocks in ONNX's
    order."""
    import tensorflow as tf

    units, gates = spec.units, _GATES[spec.kind]

    def reordered(matrix):  # (rows, G*H) -> (G*H, rows), gate blocks re-ordered
        rows = tf.shape(matrix)[0]
        blocks = tf.gather(tf.reshape(matrix, [rows, len(gates), units]), gates, axis=1)
        return tf.transpose(tf.reshape(blocks, [rows, len(gates) * units]))

    kernel = tf.convert_to_tensor(cell.kernel)
    w = reordered(kernel)
    r = reordered(tf.convert_to_tensor(cell.recurrent_kernel))
    width = len(gates) * units
    zeros = tf.zeros([width], kernel.dtype)
    if not spec.use_bias:
        b = tf.concat([zeros, zeros], 0)
    else:
        bias = tf.convert_to_tensor(cell.bias)
        if spec.reset_after:  # the GRU's (2, 3H): input bias, recurrent bias
            b = tf.reshape(bias, [2 * width])
        else:
            b = tf.concat([tf.reshape(reordered(bias[None]), [width]), zeros], 0)
    return w, r, b


def _onnx_peepholes(cell, spec):
    """ONNX's `P` row of an LSTM cell (of the recurrence `spec`): its peepholes p_i,
    p_o, p_f (the operator's i and f gates see c_{t-1}, its o gate c_t, as the cell's),
    zeros for a cell without them."""
    import tensorflow as tf

    if not spec.peephole:
        return tf.zeros([3 * spec.units])
    return tf.concat(
        [tf.convert_to_tensor(p) for p in (cell.peephole_i, cell.peephole_o, cell.peephole_f)], 0
    )


def _keras_results(y, finals, initial, lengths, mask, layer):
    """What `layer.inner_loop` returns, `(last_output, outputs, states)`, from one
    direction of the operator: `y` (batch, time, units) in input order, zeros after
    each row's length; `finals` the states after the last real step."""
    import tensorflow as tf

    if mask is None:
        outputs, states = y, finals
    else:
        real = (lengths > 0)[:, None]  # a fully masked row keeps its initial states
        states = [tf.where(real, final, start) for final, start in zip(finals, initial)]
        if layer.go_backwards or layer.zero_output_for_mask:
            outputs = y  # padding comes first backwards: zero outputs there, as Keras'
        else:
            # Keras repeats the last real output over the padding (zeros for none)
            carried = tf.where(real, finals[0], tf.zeros_like(finals[0]))
            outputs = tf.where(tf.cast(mask, tf.bool)[..., None], y, carried[:, None])
    if layer.go_backwards:
        outputs = tf.reverse(outputs, [1])  # Keras returns the reversed sequence
    return outputs[:, -1], outputs, list(states)


class _NativeRecurrences:
    """The markers of one export: `patch(model)` swaps the eligible layers' loops for
    the trace, `handlers()` gives tf2onnx the rewrite of each marker."""

    def __init__(self, kinds):
        self.kinds = kinds
        self.markers = []  # per marker: (operator, attributes)
        self.pending = {}  # id(backward layer) -> its results, computed with the forward
        self.paired = set()  # id(forward layer) of the Bidirectionals called without initial states

    def _spec(self, layer):
        """`layer`'s `native_spec` where it becomes an operator of `kinds`, else None."""
        spec = native_spec(layer)
        return spec if spec is not None and spec.kind in self.kinds else None

    def _marker(self, kind, units, direction, inputs, sequences):
        """The operator's outputs `Y` (time, directions, batch, units) and its final
        states (directions, batch, units), from the marker op."""
        import tensorflow as tf

        index = len(self.markers)
        attributes = {"hidden_size": units, "direction": direction}
        if kind == "gru":
            attributes["linear_before_reset"] = int(inputs.pop())
        self.markers.append((_OPERATORS[kind], attributes))

        def never_run(*_):
            raise RuntimeError("a native-recurrence marker runs only in the ONNX graph")

        count = 3 if kind == "lstm" else 2
        outputs = tf.numpy_function(
            never_run, inputs, [tf.float32] * count, stateful=True, name=f"{_MARKER}{index}"
        )
        directions = 2 if direction == "bidirectional" else 1
        batch, time = sequences.shape[0], sequences.shape[1]
        # the shapes as ops (`set_shape` would not outlive tf2onnx's reload of the
        # graph, where a PyFunc's outputs have none and its shape inference fails on
        # a concatenation of them); tf2onnx writes EnsureShape as an Identity
        shapes = [[time, directions, batch, units]] + [[directions, batch, units]] * (count - 1)
        return [tf.ensure_shape(output, shape) for output, shape in zip(outputs, shapes)]

    def _run(self, layers, specs, sequences, initial_states, mask):
        """The operator over `layers` (one, or a Bidirectional's forward and backward)
        of the recurrences `specs` -> each layer's `(last_output, outputs, states)`."""
        import tensorflow as tf

        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        batch, time = tf.shape(sequences)[0], tf.shape(sequences)[1]
        lengths = tf.fill([batch], time) if mask is None else right_padding(mask).lengths
        kind = specs[0].kind
        weights = [_onnx_weights(layer.cell, spec) for layer, spec in zip(layers, specs)]
        inputs = [tf.transpose(sequences, [1, 0, 2])]
        inputs += [tf.stack([w[k] for w in weights]) for k in range(3)]
        inputs.append(lengths)
        for k in range(len(initial_states[0])):  # h (and c), one row per direction
            inputs.append(tf.stack([states[k] for states in initial_states]))
        if any(spec.peephole for spec in specs):
            peepholes = [_onnx_peepholes(layer.cell, spec) for layer, spec in zip(layers, specs)]
            inputs.append(tf.stack(peepholes))
        if kind == "gru":
            inputs.append(specs[0].reset_after)
        if len(layers) == 2:
            direction = "bidirectional"
        else:
            direction = "reverse" if specs[0].go_backwards else "forward"
        y, *finals = self._marker(kind, specs[0].units, direction, inputs, sequences)
        results = []
        for d, layer in enumerate(layers):
            results.append(
                _keras_results(
                    tf.transpose(y[:, d], [1, 0, 2]),
                    [state[d] for state in finals],
                    initial_states[d],
                    lengths,
                    mask,
                    layer,
                )
            )
        return results

    def _inner_loop(self, layer, spec, partner=None):
        """`layer`'s replacement `inner_loop`; with `partner` (the backward layer of its
        Bidirectional) one bidirectional operator for both when the wrapper is called
        without initial states."""
        import tensorflow as tf

        def inner_loop(sequences, initial_state, mask, training=False):
            if id(layer) in self.pending:  # the backward layer, done with the forward one
                return self.pending.pop(id(layer))
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else []
            if not states:
                states = [initial_state]
            if partner is None or id(layer) not in self.paired:
                return self._run([layer], [spec], sequences, [states], mask)[0]
            partner_states = partner.get_initial_state(batch_size=tf.shape(sequences)[0])
            if not isinstance(partner_states, (list, tuple)):
                partner_states = [partner_states]
            partner_states = [tf.cast(s, sequences.dtype) for s in partner_states]
            forward, backward = self._run(
                [layer, partner],
                [spec, self._spec(partner)],
                sequences,
                [states, partner_states],
                mask,
            )
            self.pending[id(partner)] = backward
            return forward

        return inner_loop

    def _paired_call(self, wrapper, call):
        """`Bidirectional.call` that lets its forward layer run both directions when
        no initial states are given (the backward layer's are then its defaults)."""
        forward = wrapper.forward_layer

        def paired(sequences, initial_state=None, mask=None, training=None):
            if initial_state is None:
                self.paired.add(id(forward))
            try:
                return call(sequences, initial_state=initial_state, mask=mask, training=training)
            finally:
                self.paired.discard(id(forward))
                self.pending.pop(id(wrapper.backward_layer), None)

        return paired

    @contextlib.contextmanager
    def patch(self, layers):
        """Within the block, the eligible layers among `layers` run the marker."""
        saved = []

        def swap(layer, name, value):
            saved.append((layer, name, layer.__dict__.get(name)))
            object.__setattr__(layer, name, value)

        handled = set()
        for layer in layers:
            if not isinstance(layer, keras.layers.Bidirectional):
                continue
            forward, backward = layer.forward_layer, layer.backward_layer
            spec, partner = self._spec(forward), self._spec(backward)
            if (
                spec is not None
                and partner is not None
                and (spec.kind, spec.units, spec.reset_after)
                == (partner.kind, partner.units, partner.reset_after)
                and not spec.go_backwards
                and partner.go_backwards
            ):
                swap(forward, "inner_loop", self._inner_loop(forward, spec, partner=backward))
                swap(backward, "inner_loop", self._inner_loop(backward, partner))
                swap(layer, "call", self._paired_call(layer, layer.call))
                handled.update((id(forward), id(backward)))
        for layer in layers:
            spec = self._spec(layer)
            if spec is not None and id(layer) not in handled:
                swap(layer, "inner_loop", self._inner_loop(layer, spec))
            if layer.__dict__.get(_COMPILED_GENERATE) is not None:
                # a task's compiled `generate` (`kerasrnn.models.generation`) keeps the
                # functions traced before, when the functional model around it was
                # built, with their Loops: the trace starts an empty cache instead
                swap(layer, _COMPILED_GENERATE, None)
        try:
            yield
        finally:
            for layer, name, value in reversed(saved):
                if value is None:
                    object.__delattr__(layer, name)
                else:
                    object.__setattr__(layer, name, value)

    def handlers(self):
        """tf2onnx's `custom_op_handlers`: each marker (`PyFunc`) becomes its operator."""

        def rewrite(ctx, node, name, args):
            index = int(re.search(rf"{_MARKER}(\d+)", node.name).group(1))
            operator, attributes = self.markers[index]
            node.type = operator
            node.domain = ""
            for key in list(node.attr):
                del node.attr[key]
            for key, value in attributes.items():
                node.set_attr(key, value)
            return node

        return {"PyFunc": (rewrite, [])}


@contextlib.contextmanager
def native_recurrences(model, kinds=("lstm", "gru")):
    """Within the block, Keras' ONNX exporter writes `model`'s eligible recurrent
    layers of `kinds` as ONNX `LSTM` / `GRU` operators (module docstring)."""
    import tf2onnx

    from kerasrnn.export._formats import sublayers

    recurrences = _NativeRecurrences(kinds)
    convert = tf2onnx.convert.from_function

    def from_function(*args, **kwargs):
        # Keras' exporter passes no op handlers to tf2onnx: add ours to its call
        kwargs["custom_op_handlers"] = {
            **(kwargs.get("custom_op_handlers") or {}),
            **recurrences.handlers(),
        }
        return convert(*args, **kwargs)

    with recurrences.patch(list(sublayers(model))):
        tf2onnx.convert.from_function = from_function
        try:
            yield
        finally:
            tf2onnx.convert.from_function = convert
