"""ESNCell beyond the TFA fixture (tests/compat): the reservoir it draws, leaky integration,
fixed weights, saving and errors."""

import keras
import numpy as np
import pytest

import kerasrnn
from kerasrnn.cells.esn import scale_spectral_radius


def reservoir(**kwargs):
    cell = kerasrnn.ESNCell(200, **kwargs)
    cell.build((None, 3))
    return cell, keras.ops.convert_to_numpy(cell.recurrent_kernel)


def test_reservoir_is_sparse_and_scaled_to_the_spectral_radius():
    cell, u = reservoir(connectivity=0.2, spectral_radius=0.7, seed=3)
    assert abs((u != 0).mean() - 0.2) < 0.02
    assert np.isclose(np.abs(np.linalg.eigvals(u)).max(), 0.7, atol=1e-4)
    assert cell.trainable_weights == [] and len(cell.non_trainable_weights) == 3
    _, same = reservoir(
        connectivity=0.2,
        spectral_radius=0.7,
        seed=3,
        recurrent_initializer=keras.initializers.GlorotUniform(seed=5),
    )
    _, again = reservoir(
        connectivity=0.2,
        spectral_radius=0.7,
        seed=3,
        recurrent_initializer=keras.initializers.GlorotUniform(seed=5),
    )
    np.testing.assert_array_equal(same, again)  # seeded: the same reservoir


def test_norm2_bounds_the_radius_by_the_frobenius_norm():
    _, u = reservoir(connectivity=0.3, spectral_radius=0.9, use_norm2=True)
    assert np.isclose(np.sqrt((u**2).sum()), 0.9, atol=1e-5)
    assert np.abs(np.linalg.eigvals(u)).max() <= 0.9 + 1e-6


def test_zero_matrix_stays_zero():
    zero = keras.ops.convert_to_numpy(scale_spectral_radius(np.zeros((3, 3), "float32"), 0.9))
    np.testing.assert_array_equal(zero, 0.0)


def test_leaky_integration_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 3)).astype("float32")
    cell = kerasrnn.ESNCell(5, leaky=0.3, connectivity=0.5, seed=1)
    y = keras.ops.convert_to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    w, u, b = (keras.ops.convert_to_numpy(v) for v in cell.weights)
    h = np.zeros((2, 5))
    for t in range(6):
        h = 0.7 * h + 0.3 * np.tanh(x[:, t] @ w + h @ u + b)
        np.testing.assert_allclose(y[:, t], h, atol=1e-5)


def test_keras_file_round_trip(tmp_path):
    x = np.random.default_rng(2).normal(size=(2, 4, 3)).astype("float32")
    model = keras.Sequential(
        [keras.Input((4, 3)), kerasrnn.RNN(kerasrnn.ESNCell(6, leaky=0.5, use_norm2=True))]
    )
    path = tmp_path / "esn.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    assert loaded.layers[0].cell.get_config()["leaky"] == 0.5


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"connectivity": 0.0}, "connectivity"),
        ({"leaky": 1.5}, "leaky"),
        ({"spectral_radius": 0.0}, "spectral_radius"),
    ],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kerasrnn.ESNCell(4, **kwargs)
