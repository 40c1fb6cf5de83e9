"""Small `keras.ops` helpers that several kerasrnn modules share (every backend).

* `NEG_INF` -- the finite "minus infinity" of masked logits and scores;
* `scan` -- `ops.scan` over several time-major sequences at once (the CRF's forward
  algorithm and Viterbi, scheduled sampling's step-wise decoder);
* `padding_mask`, `lengths_from_mask` -- ids -> the mask of real tokens -> lengths.
"""

import numpy as np
from keras import ops

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

    return ops.scan(unpack, init, packed, reverse=reverse)


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
