"""ScalarMix against NumPy: gamma * sum_j softmax(s)_j h_j, optionally layer-normalised."""

import keras
import numpy as np
import pytest

from kerasrnn.layers import ScalarMix


def np_mix(layers, s, gamma, layer_norm=False, eps=1e-6):
    weights = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    total = 0.0
    for w, h in zip(weights, layers):
        if layer_norm:
            h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + eps)
        total = total + w * h
    return gamma * total


@pytest.mark.parametrize("layer_norm", [False, True])
def test_matches_numpy(layer_norm):
    rng = np.random.default_rng(0)
    layers = [rng.normal(k, k + 1, (2, 5, 6)).astype("float32") for k in range(3)]
    mix = ScalarMix(layer_norm=layer_norm)
    mix(layers)
    s, gamma = rng.normal(size=3).astype("float32"), np.float32(1.7)
    mix.set_weights([s, gamma])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(mix(layers)),
        np_mix(layers, s, gamma, layer_norm),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.large
def test_starts_as_the_average_and_learns_the_useful_layer():
    rng = np.random.default_rng(1)
    layers = [rng.normal(size=(256, 4)).astype("float32") for _ in range(3)]
    inputs = [keras.Input((4,)) for _ in range(3)]
    model = keras.Model(inputs, ScalarMix(name="mix")(inputs))
    np.testing.assert_allclose(model.predict(layers, verbose=0), np.mean(layers, 0), atol=1e-6)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    model.fit(layers, 2.0 * layers[1], epochs=150, verbose=0)
    s, gamma = model.get_layer("mix").get_weights()
    weights = np.exp(s) / np.exp(s).sum()
    assert weights[1] > 0.95 and abs(gamma * weights[1] - 2.0) < 0.1


def test_mask_passes_and_keras_file_round_trip(tmp_path):
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inputs)
    a = keras.layers.Dense(4)(x)
    mixed = ScalarMix(layer_norm=True)([x, a])
    pooled = keras.layers.GlobalAveragePooling1D()(mixed)  # uses the mask
    model = keras.Model(inputs, pooled)
    ids = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])
    short = keras.Model(inputs, mixed).predict(ids[:1, :2], verbose=0)
    np.testing.assert_allclose(model.predict(ids, verbose=0)[0], short[0].mean(0), rtol=1e-5)
    path = str(tmp_path / "mix.keras")
    model.save(path)
    np.testing.assert_allclose(
        keras.saving.load_model(path).predict(ids, verbose=0), model.predict(ids, verbose=0)
    )


def test_bad_input_errors():
    with pytest.raises(ValueError, match="one shape"):
        ScalarMix()([np.zeros((2, 3), "float32"), np.zeros((2, 4), "float32")])
    with pytest.raises(ValueError, match="list of layer outputs"):
        ScalarMix()(np.zeros((2, 3), "float32"))
