"""The TF Addons switches of the layer-normalised cells against NumPy (the forms that
tests/compat checks against TFA's own outputs), their weights and their configs."""

import keras
import numpy as np

import kerasrnn
from tests.cells.reference import layer_norm, sigmoid


def test_bias_after_norm_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    cell = kerasrnn.LayerNormSimpleRNNCell(4, bias_after_norm=True, norm_epsilon=1e-5)
    layer = kerasrnn.RNN(cell, return_sequences=True)
    layer(x)
    for w in cell.weights:
        w.assign(rng.normal(1.0 if w.name == "norm_gamma" else 0.0, 0.5, w.shape))
    y = keras.ops.convert_to_numpy(layer(x))
    w, u, b, g = (keras.ops.convert_to_numpy(v) for v in cell.weights)
    assert [v.name for v in cell.weights][-1] == "norm_gamma"  # no beta
    h = np.zeros((2, 4))
    for t in range(5):
        h = np.tanh(layer_norm(x[:, t] @ w + h @ u, g, 0.0, 1e-5) + b)
        np.testing.assert_allclose(y[:, t], h, atol=1e-5)


def test_carry_normalized_state_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    cell = kerasrnn.LayerNormLSTMCell(4, carry_normalized_state=True)
    layer = kerasrnn.RNN(cell, return_sequences=True, return_state=True)
    layer(x)
    for w in cell.weights:
        w.assign(rng.normal(1.0 if "gamma" in w.name else 0.0, 0.5, w.shape))
    y, _, c_last = (keras.ops.convert_to_numpy(t) for t in layer(x))
    p = {v.name: keras.ops.convert_to_numpy(v) for v in cell.weights}
    h, c = np.zeros((2, 4)), np.zeros((2, 4))
    for t in range(5):
        z = (
            layer_norm(x[:, t] @ p["kernel"], p["input_norm_gamma"], p["input_norm_beta"], 1e-3)
            + layer_norm(
                h @ p["recurrent_kernel"], p["recurrent_norm_gamma"], p["recurrent_norm_beta"], 1e-3
            )
            + p["bias"]
        )
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        c = layer_norm(c, p["cell_norm_gamma"], p["cell_norm_beta"], 1e-3)  # carried
        h = sigmoid(o) * np.tanh(c)
        np.testing.assert_allclose(y[:, t], h, atol=1e-5)
    np.testing.assert_allclose(c_last, c, atol=1e-5)


def test_options_round_trip_through_config():
    for cell in (
        kerasrnn.LayerNormSimpleRNNCell(3, bias_after_norm=True, norm_epsilon=1e-5),
        kerasrnn.LayerNormLSTMCell(3, carry_normalized_state=True),
    ):
        again = type(cell).from_config(cell.get_config())
        assert again.get_config() == cell.get_config()
    # configs written before the options existed load as the earlier (default) forms
    config = kerasrnn.LayerNormSimpleRNNCell(3).get_config()
    del config["bias_after_norm"]
    assert kerasrnn.LayerNormSimpleRNNCell.from_config(config).bias_after_norm is False
