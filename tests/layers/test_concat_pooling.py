"""ConcatPooling1D against NumPy: [last ; max ; mean] over the unmasked steps."""

import keras
import numpy as np

from kerasrnn.layers import ConcatPooling1D


def reference(x, mask):
    rows = []
    for xb, mb in zip(x, mask):
        steps = np.flatnonzero(mb)
        if len(steps) == 0:
            rows.append(np.zeros(3 * x.shape[2]))
            continue
        kept = xb[steps]
        rows.append(np.concatenate([xb[steps[-1]], kept.max(0), kept.mean(0)]))
    return np.array(rows)


def test_concat_pooling_with_a_mask_matches_numpy():
    rng = np.random.RandomState(0)
    x = rng.randn(4, 6, 3).astype("float32") - 5.0  # all negative: max must skip pads
    mask = np.array(
        [[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 0, 1, 1, 0, 0]], bool
    )
    x[~mask] = 100.0  # padded values must never appear
    out = keras.ops.convert_to_numpy(ConcatPooling1D()(x, mask=mask))
    np.testing.assert_allclose(out, reference(x, mask), rtol=1e-6, atol=1e-6)
    no_mask = keras.ops.convert_to_numpy(ConcatPooling1D()(x))
    np.testing.assert_allclose(no_mask, reference(x, np.ones_like(mask)), rtol=1e-6)


def test_concat_pooling_takes_the_embedding_mask_in_a_model():
    ids = keras.Input((None,), dtype="int32")
    seq = keras.layers.Embedding(9, 2, mask_zero=True)(ids)
    model = keras.Model(ids, ConcatPooling1D(name="concat")(seq))
    tokens = np.array([[3, 4, 5, 0, 0], [7, 0, 0, 0, 0]], "int32")
    table = model.layers[1].get_weights()[0]
    want = reference(table[tokens], tokens != 0)
    np.testing.assert_allclose(model.predict(tokens, verbose=0), want, rtol=1e-6)
    assert model.output.shape == (None, 6)
    again = ConcatPooling1D.from_config(model.get_layer("concat").get_config())
    assert again.name == "concat"
