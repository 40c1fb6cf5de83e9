"""kerasrnn.ops: the packed scan against a Python loop (mixed dtypes and shapes,
reverse, an unknown number of steps), the masks."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import ops as kops


def np_(x):
    return ops.convert_to_numpy(x)


def reference(init, xs, ids, reverse):
    carry, ys = init.copy(), []
    order = range(len(xs))[::-1] if reverse else range(len(xs))
    for t in order:
        carry = carry * 0.5 + xs[t].sum(-1) + ids[t]
        ys.append(carry.copy())
    return carry, np.stack(ys[::-1] if reverse else ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_unpacks_each_sequence_with_its_shape_and_dtype(reverse):
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(5, 3, 2, 4)).astype("float32")  # (time, batch, 2, 4)
    ids = rng.integers(0, 100, size=(5, 3)).astype("int32")
    seen = []

    def step(carry, parts):
        x, i = parts
        seen.append((tuple(x.shape), keras.backend.standardize_dtype(i.dtype)))
        carry = carry * 0.5 + ops.sum(x, axis=(-2, -1)) + ops.cast(i, "float32")
        return carry, carry

    carry, ys = kops.scan(step, np.zeros(3, "float32"), [xs, ids], reverse=reverse)
    want_carry, want_ys = reference(np.zeros(3), xs.reshape(5, 3, 8), ids, reverse)
    np.testing.assert_allclose(np_(carry), want_carry, rtol=1e-5)
    np.testing.assert_allclose(np_(ys), want_ys, rtol=1e-5)
    assert seen[0] == ((3, 2, 4), "int32")


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function")
def test_scan_over_an_unknown_number_of_steps():
    import tensorflow as tf

    def run(xs, ids):
        return kops.scan(
            lambda c, p: (c + p[0] + ops.cast(p[1], "float32"),) * 2, tf.zeros([2]), [xs, ids]
        )[0]

    spec = [tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None, 2], tf.int32)]
    xs, ids = np.ones((4, 2), "float32"), np.full((4, 2), 2, "int32")
    np.testing.assert_allclose(tf.function(run, input_signature=spec)(xs, ids), [12, 12])


def test_masks_and_negative_infinity():
    ids = np.array([[5, 6, 0], [7, 0, 0]])
    np.testing.assert_array_equal(np_(kops.padding_mask(ids)), ids != 0)
    np.testing.assert_array_equal(np_(kops.padding_mask(ids, pad_id=5)), ids != 5)
    np.testing.assert_array_equal(np_(kops.lengths_from_mask(kops.padding_mask(ids))), [2, 1])
    # exp(NEG_INF) underflows to 0 in float32 while NEG_INF - NEG_INF stays finite
    logits = ops.convert_to_tensor([0.0, kops.NEG_INF], "float32")
    np.testing.assert_array_equal(np_(ops.softmax(logits)), [1.0, 0.0])
    assert np.isfinite(np_(logits[1] - logits[1]))
