"""An LSTM over a whole sequence with its backward pass written out (`ops.custom_gradient`).

Automatic differentiation of a time loop takes, at every step, the weight gradients
x_t^T dz_t and h_{t-1}^T dz_t (matmuls of `batch` rows) and adds them to running sums.
Written out, the backward loop keeps only what must be sequential, the gate gradients
dz_t, and the weight gradients are then one matmul each over all `time * batch` rows, as
PyTorch's CPU LSTM does. Compiled with XLA (JAX; TensorFlow with `jit_compile=True`),
that is faster on a CPU: `bench/README.md`. Without XLA, stacking the per-step gates
costs TensorFlow more than it saves.

Forward, per step t (Keras' gate order i, f, c, o; σ the logistic sigmoid):

    z_t = x_t W + b + h_{t-1} U = [z_i, z_f, z_g, z_o]
    i, f, g, o = σ(z_i), σ(z_f), tanh(z_g), σ(z_o)
    c_t = f ⊙ c_{t-1} + i ⊙ g,        h_t = o ⊙ tanh(c_t)

Backward, t = T ... 1, from dh_T and dc_T (the final states' gradients) and each
output's gradient ∂L/∂h_t:

    dh = ∂L/∂h_t + dh_t,              dc = dc_t + dh ⊙ o ⊙ (1 - tanh²(c_t))
    dz_t = [dc ⊙ g ⊙ i(1-i), dc ⊙ c_{t-1} ⊙ f(1-f), dc ⊙ i ⊙ (1-g²), dh ⊙ tanh(c_t) ⊙ o(1-o)]
    dh_{t-1} = dz_t U^T,              dc_{t-1} = dc ⊙ f

and then dW = X^T dZ, dU = H_{prev}^T dZ, db = Σ dZ, dX = dZ W^T over all steps.

On a CPU, beside the matmuls, a step's time goes to its many small elementwise kernels,
so the code makes fewer: the forward pass activates the four gates in one pass, k σ(k z)
- (k - 1) with k = 2 in the candidate's columns (tanh(z) = 2σ(2z) - 1, equal to float32
rounding), and the backward pass forms dz_t in one (σ' = s(1 - s) and tanh' = (1 - g)(1
+ g) are both (1 - a)(a + k - 1) of the activation a). U^T is taken once, before the
backward loop: XLA folds a transpose inside the loop into the matmul, which then runs
about 10% slower. bench/README.md has the timings.
"""

from keras import ops


def _time_loop(step, carry, sequences, widths, reverse=False):
    """`carry, outputs = step(carry, [s[t] for s in sequences])` for t = 0 ... T-1
    (T-1 ... 0 with `reverse`); returns the final carry and each output stacked over
    time, `(T, batch, width)` for `widths`. (`ops.scan` would be the natural call, but
    on TensorFlow Keras' scan only stacks outputs shaped like the carry.)"""
    sequences = [ops.convert_to_tensor(s) for s in sequences]
    # the length may be unknown when traced (a tf.data pipeline of varying lengths)
    steps, batch = ops.shape(sequences[0])[:2]
    dtype = sequences[0].dtype
    stacked = [ops.zeros((steps, batch, width), dtype) for width in widths]

    def body(i, loop_state):
        carry, stacked = loop_state
        t = steps - 1 - i if reverse else i
        carry, outputs = step(carry, [s[t] for s in sequences])
        stacked = [
            ops.slice_update(buffer, (t, 0, 0), output[None])
            for buffer, output in zip(stacked, outputs)
        ]
        return carry, stacked

    return ops.fori_loop(0, steps, body, (carry, stacked))


def lstm_sequence(x, kernel, recurrent_kernel, bias, h0, c0, input_gradient=True, mask=None):
    """Time-major `x` `(time, batch, features)` -> `(outputs (time, batch, units), h_T,
    c_T)`, differentiable in every argument (`bias` may be None). `input_gradient=False`
    skips dX = dZ W^T (its gradient is then zero): for a caller that knows nothing
    differentiates `x` and runs where the compiler cannot prune the unused matmul (a
    function compiled on its own, `kerasrnn.RNN`'s XLA cluster). `mask` `(time, batch)`:
    a masked step keeps the states, h_t = m_t h~_t + (1 - m_t) h_{t-1} (c_t likewise),
    and outputs the kept h_t, as `keras.layers.RNN` does."""
    dtype = ops.convert_to_tensor(x).dtype
    weights = [ops.cast(w, dtype) for w in (kernel, recurrent_kernel)]
    bias = ops.zeros((kernel.shape[-1],), dtype) if bias is None else ops.cast(bias, dtype)
    args = [x, *weights, bias, ops.cast(h0, dtype), ops.cast(c0, dtype)]
    if mask is not None:
        args.append(ops.cast(mask, dtype)[..., None])
    stacked = _variant(mask is not None, input_gradient)(*args)
    outputs = stacked[:-1]
    return outputs, outputs[-1], stacked[-1]


_VARIANTS: dict = {}


def _variant(masked, input_gradient):
    """The custom-gradient function for (masked, input_gradient), made once."""
    key = (masked, input_gradient)
    if key not in _VARIANTS:
        if masked:

            def run_masked(x, kernel, recurrent_kernel, bias, h0, c0, mask):
                return _lstm_sequence_and_gradient(
                    x, kernel, recurrent_kernel, bias, h0, c0, mask, input_gradient
                )

            run = run_masked
        else:

            def run_unmasked(x, kernel, recurrent_kernel, bias, h0, c0):
                return _lstm_sequence_and_gradient(
                    x, kernel, recurrent_kernel, bias, h0, c0, None, input_gradient
                )

            run = run_unmasked

        _VARIANTS[key] = ops.custom_gradient(run)
    return _VARIANTS[key]


def _lstm_sequence_and_gradient(x, kernel, recurrent_kernel, bias, h0, c0, mask, input_gradient):
    steps, batch, features = ops.shape(x)
    units = recurrent_kernel.shape[0]
    flat_x = ops.reshape(x, (-1, features))

    # 1 in the sigmoid gates' columns, 2 in the candidate's: k σ(k z) - (k - 1) activates
    # all four gates in one elementwise pass (tanh(z) = 2σ(2z) - 1)
    ones = ops.ones((units,), x.dtype)
    scale = ops.concatenate([ones, ones, 2 * ones, ones])

    def forward(carry, per_step):
        (h, c), (x_t, *m) = carry, per_step
        z = ops.matmul(x_t, kernel) + bias + ops.matmul(h, recurrent_kernel)
        gates = scale * ops.sigmoid(scale * z) - (scale - 1)
        i, f, g, o = ops.split(gates, 4, axis=-1)
        new_c = f * c + i * g
        new_h = o * ops.tanh(new_c)
        if not m:
            return (new_h, new_c), (gates, new_c, new_h)
        # a masked step keeps the states; new_c is kept for the backward pass
        kept_h, kept_c = h + m[0] * (new_h - h), c + m[0] * (new_c - c)
        return (kept_h, kept_c), (gates, kept_c, kept_h, new_c)

    masks = [] if mask is None else [mask]
    widths = (4 * units, units, units) + (() if mask is None else (units,))
    (_, c_last), stacked = _time_loop(forward, (h0, c0), [x, *masks], widths)
    gates, cells, outputs = stacked[:3]
    new_cells = cells if mask is None else stacked[3]

    def backward(*args, upstream=None, variables=None):
        # TensorFlow and JAX pass the gradient by position, torch as `upstream`
        if upstream is None:
            (upstream,) = args
        # h_T is outputs[-1], so its gradient arrives with the outputs'
        d_outputs, d_c_last = upstream[:-1], upstream[-1]
        previous_c = ops.concatenate([c0[None], cells[:-1]], 0)
        previous_h = ops.concatenate([h0[None], outputs[:-1]], 0)
        # transposed once, before the loop (the module's docstring says why)
        recurrent_kernel_t = ops.transpose(recurrent_kernel)

        def step(carry, per_step):
            dh_next, dc_next = carry
            gates_t, c_t, c_previous, d_output, *m = per_step
            i, f, g, o = ops.split(gates_t, 4, axis=-1)
            tanh_c = ops.tanh(c_t)
            dh = d_output + dh_next
            if m:  # the kept states pass their gradient through a masked step
                kept_h, kept_c = (1 - m[0]) * dh, (1 - m[0]) * dc_next
                dh, dc_next = m[0] * dh, m[0] * dc_next
            dc = dc_next + dh * o * (1 - tanh_c * tanh_c)
            # the four gates in one pass: σ' = s(1 - s), tanh' = (1 - g)(1 + g)
            dz = (
                ops.concatenate([dc, dc, dc, dh], -1)
                * ops.concatenate([g, c_previous, i, tanh_c], -1)
                * (1 - gates_t)
                * (gates_t + (scale - 1))
            )
            dh_previous = ops.matmul(dz, recurrent_kernel_t)
            dc_previous = dc * f
            if m:
                dh_previous, dc_previous = dh_previous + kept_h, dc_previous + kept_c
            return (dh_previous, dc_previous), (dz,)

        (dh0, dc0), (dz,) = _time_loop(
            step,
            (ops.zeros_like(d_c_last), d_c_last),
            [gates, new_cells, previous_c, d_outputs, *masks],
            (4 * units,),
            reverse=True,
        )
        dz = ops.reshape(dz, (-1, 4 * units))
        d_kernel = ops.matmul(ops.transpose(flat_x), dz)
        d_recurrent = ops.matmul(ops.transpose(ops.reshape(previous_h, (-1, units))), dz)
        if input_gradient:
            dx = ops.reshape(ops.matmul(dz, ops.transpose(kernel)), (steps, batch, features))
        else:
            dx = ops.zeros_like(x)
        grads = (dx, d_kernel, d_recurrent, ops.sum(dz, 0), dh0, dc0)
        return grads if mask is None else (*grads, ops.zeros_like(mask))

    # one output (Keras' custom_gradient takes one on torch): the outputs, then c_T
    return ops.concatenate([outputs, c_last[None]], 0), backward
