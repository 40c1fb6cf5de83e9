"""Small `keras.ops` helpers that several kerasrnn modules share (every backend).

* `NEG_INF` -- the finite "minus infinity" of masked logits and scores;
* `scan` -- `ops.scan` over several time-major sequences at once (the CRF's forward
  algorithm and Viterbi, scheduled sampling's step-wise decoder), and `scans_as_loops`,
  under which it traces as a plain `while_loop` (for the ONNX converter);
* `padding_mask`, `lengths_from_mask` -- ids -> the mask of real tokens -> lengths;
* `right_padding` -- a mask read as right padding, as the fused recurrent kernels read it.
"""

import contextlib
import contextvars
from typing import Any, NamedTuple

import keras
import numpy as np
from keras import ops

# Whether `scan` runs as a while_loop with its outputs in buffers (`scans_as_loops`).
_SCANS_AS_LOOPS = contextvars.ContextVar("kerasrnn_scans_as_loops", default=False)


@contextlib.contextmanager
def scans_as_loops():
    """Within this context `scan` runs as a `keras.ops.while_loop` whose carries are
    the loop's values and whose per-step outputs are written into buffers allocated
    before it (`keras.ops.scatter_update`), instead of `keras.ops.scan`; the results
    are the same. The ONNX writer traces models so: on TensorFlow, `keras.ops.scan`
    keeps its carry in a one-element `TensorArray`, which tf2onnx's loop conversion
    does not recognise, while this loop becomes an ONNX `Loop` of ordinary operators
    (`ScatterND` for the writes) with the model's dynamic batch and length."""
    token = _SCANS_AS_LOOPS.set(True)
    try:
        yield
    finally:
        _SCANS_AS_LOOPS.reset(token)


# A finite "minus infinity" for logits and log-probabilities: exp() of it underflows to
# 0 in float32, and, unlike -inf, sums and differences of it stay finite (no nan).
NEG_INF = -1e9


def scan(step, init, sequences, reverse=False):
    """`keras.ops.scan` over several time-major sequences `(time, batch, ...)`, all
    passed to `step` as one tuple: ``carry, y = step(carry, (x1_t, x2_t, ...))``.

    Keras' TensorFlow scan checks the static lengths of several sequences against each
    other and fails when the length is unknown (a `tf.function` over variable-length
    batches, e.g. a serving signature or `fit` on `padded_batch` batches), so the
    sequences travel packed into one tensor (of the first sequence's dtype) and are
    unpacked, with their shapes and dtypes, at each step. Integer ids packed with
    float32 values stay exact below 2**24.

    Args:
        step: ``(carry, xs) -> (carry, y)`` as for `keras.ops.scan`, with `xs` a tuple
            of one `(batch, ...)` slice per sequence.
        init: the initial carry.
        sequences: a list of time-major tensors with the same first two dimensions.
        reverse: scan from the last step to the first.

    Returns:
        `(final carry, stacked ys)` as `keras.ops.scan`.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.ops import scan
    >>> x = np.arange(6, dtype="float32").reshape(3, 2)  # (time, batch)
    >>> carry, ys = scan(lambda c, xs: (c + xs[0] * xs[1], c), np.zeros(2, "float32"),
    ...                  [x, np.full((3, 2), 2.0, "float32")])
    >>> keras.ops.convert_to_numpy(carry).tolist()
    [12.0, 18.0]
    """
    dtype = sequences[0].dtype
    specs, flat = [], []
    for x in sequences:
        tail = tuple(x.shape[2:])
        size = int(np.prod(tail)) if tail else 1
        specs.append((tail, size, x.dtype))
        shape = ops.shape(x)
        flat.append(ops.reshape(ops.cast(x, dtype), (shape[0], shape[1], size)))
    packed = ops.concatenate(flat, axis=-1)

    def unpack(carry, row):
        parts, offset = [], 0
        for tail, size, x_dtype in specs:
            part = row[:, offset : offset + size]
            part = ops.reshape(part, (-1,) + tail) if tail else part[:, 0]
            parts.append(ops.cast(part, x_dtype))
            offset += size
        return step(carry, tuple(parts))

    if _SCANS_AS_LOOPS.get():
        return _loop_scan(unpack, init, ops.flip(packed, axis=0) if reverse else packed, reverse)
    return ops.scan(unpack, init, packed, reverse=reverse)


def _loop_scan(step, init, xs, reverse):
    """`ops.scan(step, init, xs)` as a `while_loop` (`scans_as_loops`): the outputs of
    each step go into buffers of shape (time, ...), made from a trace of the first
    step's outputs. With `reverse` `xs` comes flipped, and so do the outputs."""
    length = ops.shape(xs)[0]
    _, first = step(init, xs[0])  # traced for the outputs' shapes and dtypes only
    buffers = [ops.zeros((length, *ops.shape(y)), dtype=y.dtype) for y in keras.tree.flatten(first)]

    def body(t, carry, buffers):
        carry, ys = step(carry, ops.take(xs, t, axis=0))
        index = ops.reshape(t, (1, 1))
        buffers = [
            ops.scatter_update(buffer, index, y[None])
            for buffer, y in zip(buffers, keras.tree.flatten(ys))
        ]
        return t + 1, carry, buffers

    _, carry, buffers = ops.while_loop(
        lambda t, carry, buffers: t < length, body, (ops.zeros((), "int32"), init, buffers)
    )
    if reverse:
        buffers = [ops.flip(buffer, axis=0) for buffer in buffers]
    return carry, keras.tree.pack_sequence_as(first, buffers)


def padding_mask(ids, pad_id=0):
    """`ids != pad_id`: true at real tokens (bool, the shape of `ids`).

    Example:

    >>> import keras
    >>> from kerasrnn.ops import padding_mask
    >>> keras.ops.convert_to_numpy(padding_mask([[5, 6, 0]])).tolist()
    [[True, True, False]]
    """
    return ops.not_equal(ops.convert_to_tensor(ids), pad_id)


def lengths_from_mask(mask):
    """The number of true entries per row of a `(batch, time)` mask, int32 `(batch,)`.

    Example:

    >>> import keras
    >>> from kerasrnn.ops import lengths_from_mask
    >>> mask = [[True, True, False], [True, False, False]]
    >>> keras.ops.convert_to_numpy(lengths_from_mask(mask)).tolist()
    [2, 1]
    """
    return ops.sum(ops.cast(ops.convert_to_tensor(mask), "int32"), axis=-1)


class RightPadding(NamedTuple):
    """A `(batch, time)` mask read as right padding (`right_padding`)."""

    steps: Any  # n_t: the real steps up to and including t, int32 (batch, time)
    lengths: Any  # L = n_T: the real steps of each row, int32 (batch,)
    right_padded: Any  # whether each row's real steps come first, bool (batch,)


def right_padding(mask):
    """A `(batch, time)` mask m read as right padding, the layout of the kernels that
    take one length per row (cuDNN's `sequence_lengths`, ONNX's `sequence_lens`):

    .. math::  n_t = \\sum_{s \\le t} m_s, \\qquad L = n_T, \\qquad
               \\text{right padded} \\iff m_t = [t < L] \\ \\text{for every } t

    n_t counts a row's real steps up to and including t: at step t `keras.layers.RNN`
    outputs what it output after the row's n_t-th real step (zeros while n_t = 0, or at
    every masked step with `zero_output_for_mask`). L is the row's length
    (`lengths_from_mask`). A length-based kernel reads a right-padded row exactly and
    any other row (left padding, holes) wrongly; gathering each row's real steps to the
    front, in order, makes any mask right padded.

    Returns:
        `RightPadding(steps, lengths, right_padded)`: n_t int32 `(batch, time)`, L int32
        `(batch,)`, and bool `(batch,)`.

    Example:

    >>> import keras
    >>> from kerasrnn.ops import right_padding
    >>> padding = right_padding([[True, True, False], [False, True, True]])
    >>> keras.ops.convert_to_numpy(padding.steps).tolist()
    [[1, 2, 2], [0, 1, 2]]
    >>> keras.ops.convert_to_numpy(padding.lengths).tolist()
    [2, 2]
    >>> keras.ops.convert_to_numpy(padding.right_padded).tolist()
    [True, False]
    """
    mask = ops.cast(ops.convert_to_tensor(mask), "int32")
    steps = ops.cast(ops.cumsum(mask, axis=-1), "int32")
    lengths = lengths_from_mask(mask)
    positions = ops.arange(ops.shape(mask)[-1], dtype="int32")
    prefix = ops.cast(ops.less(positions, lengths[..., None]), "int32")
    return RightPadding(steps, lengths, ops.all(ops.equal(mask, prefix), axis=-1))
