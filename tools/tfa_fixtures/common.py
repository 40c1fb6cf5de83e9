"""What the TensorFlow Addons fixture scripts share: seeds, weights, inputs and the writer.

These scripts run only in the reference environment of README.md (TF 2.15, TFA 0.23); the
test suite reads the `.npz` files they write and never needs TensorFlow Addons.
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tfa"

# Small shapes: every fixture stays a few kilobytes.
BATCH, TIME, FEATURES, UNITS = 3, 6, 5, 4


def rng(seed):
    """One NumPy generator per fixture, so adding a fixture never changes another."""
    return np.random.default_rng(seed)


def seeded_weights(layer, generator, scale=0.5):
    """Replaces every weight of a built tf.keras layer by N(0, scale^2) draws.

    Layer-norm gains are drawn around 1 so the normalisation stays recognisable.
    Returns the weights as {tfa weight name: array}, in the layer's weight order.
    """
    values = {}
    arrays = []
    for weight in layer.weights:
        name = weight.name.split(":")[0]
        value = generator.normal(0.0, scale, weight.shape)
        if name.endswith("gamma"):
            value = 1.0 + value
        arrays.append(value.astype("float32"))
        values[name] = arrays[-1]
    layer.set_weights(arrays)
    return values


def sequence_inputs(generator, batch=BATCH, time=TIME, features=FEATURES):
    """Inputs (batch, time, features) and a mask with right padding and a hole."""
    x = generator.normal(size=(batch, time, features)).astype("float32")
    mask = np.ones((batch, time), bool)
    mask[1, time - 2 :] = False
    mask[2, 1] = False
    return x, mask


def save(name, **arrays):
    """Writes tests/fixtures/tfa/NAME.npz (compressed, float64 stored as float32)."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = {}
    for key, value in arrays.items():
        value = np.asarray(value)
        if value.dtype == np.float64:
            value = value.astype("float32")
        out[key] = value
    path = FIXTURES / f"{name}.npz"
    np.savez_compressed(path, **out)
    print(f"{path.relative_to(REPO)}: {path.stat().st_size} bytes, {sorted(out)}")
    return path


def versions():
    """The versions a fixture was made with, stored beside its arrays."""
    import tensorflow as tf
    import tensorflow_addons as tfa

    return np.array(f"tensorflow {tf.__version__}, tensorflow-addons {tfa.__version__}")
