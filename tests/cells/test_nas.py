"""NASCell beyond the TFA fixture (tests/compat): shapes, states, masking, saving, errors."""

import keras
import numpy as np
import pytest

import kerasrnn


def test_projection_sets_output_and_state_widths():
    cell = kerasrnn.NASCell(6, projection=3, use_bias=True)
    layer = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    y, h, c = layer(np.ones((2, 4, 5), "float32"))
    assert tuple(y.shape) == (2, 4, 3) and tuple(h.shape) == (2, 3) and tuple(c.shape) == (2, 6)
    assert [w.name for w in cell.weights] == [
        "kernel",
        "recurrent_kernel",
        "bias",
        "projection_kernel",
    ]
    assert tuple(cell.recurrent_kernel.shape) == (3, 48)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y[:, -1]), keras.ops.convert_to_numpy(h))


def test_padded_steps_leave_the_states_alone():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[True] * 3 + [False] * 2, [True] * 5])
    layer = kerasrnn.RNN(kerasrnn.NASCell(4), return_state=True)
    _, h, c = layer(x, mask=mask)
    _, h_short, c_short = layer(x[:1, :3])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(c)[0], keras.ops.convert_to_numpy(c_short)[0], atol=1e-6
    )


def test_config_and_keras_file_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    model = keras.Sequential(
        [keras.Input((5, 3)), kerasrnn.RNN(kerasrnn.NASCell(4, projection=2, use_bias=True))]
    )
    model.set_weights([rng.normal(0, 0.5, w.shape) for w in model.get_weights()])
    path = tmp_path / "nas.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    config = loaded.layers[0].cell.get_config()
    assert config["projection"] == 2 and config["use_bias"] and "activation" not in config


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="projection"):
        kerasrnn.NASCell(4, projection=0)
    with pytest.raises(ValueError, match="activation"):
        kerasrnn.NASCell(4, activation="relu")
