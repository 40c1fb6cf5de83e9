"""ULMFiT's fine-tuning pieces against their definitions: the slanted triangular
schedule (the paper's equation in NumPy), the per-group step sizes of the
discriminative optimizers after one step, and which groups gradual unfreezing trains
in each epoch."""

import math

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import (
    DiscriminativeAdam,
    DiscriminativeSGD,
    GradualUnfreezing,
    SlantedTriangular,
    discriminative_factors,
)


def stlr_reference(t, peak, total, cut_frac, ratio):
    """Howard & Ruder 2018, eq. 3, written out (steps past T keep the last rate)."""
    cut = math.floor(total * cut_frac)
    if t < cut:
        p = t / cut
    else:
        p = max(1 - (t - cut) / (cut * (1 / cut_frac - 1)), 0.0)
    return peak * (1 + p * (ratio - 1)) / ratio


@pytest.mark.parametrize("total, cut_frac, ratio", [(100, 0.1, 32), (37, 0.25, 8), (10, 0.3, 1)])
def test_slanted_triangular_follows_the_equation(total, cut_frac, ratio):
    schedule = SlantedTriangular(0.01, total, cut_frac, ratio)
    for t in range(total + 3):
        want = stlr_reference(t, 0.01, total, cut_frac, ratio)
        assert float(schedule(t)) == pytest.approx(want, rel=1e-5, abs=1e-9), t
    assert float(schedule(math.floor(total * cut_frac))) == pytest.approx(0.01)


def test_slanted_triangular_serialises_and_stretches():
    schedule = SlantedTriangular(0.5, 40, cut_frac=0.2, ratio=10)
    config = schedule.get_config()
    assert config == {"peak": 0.5, "total_steps": 40, "cut_frac": 0.2, "ratio": 10.0}
    again = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert float(again(13)) == pytest.approx(float(schedule(13)))
    schedule.set_total_steps(80)  # what TimeBudget does
    assert float(schedule(16)) == pytest.approx(stlr_reference(16, 0.5, 80, 0.2, 10))
    with pytest.raises(ValueError, match="ratio"):
        SlantedTriangular(0.5, 40, ratio=0.5)


def three_groups():
    inputs = keras.Input((3,))
    x = keras.layers.Dense(4, name="low")(inputs)
    x = keras.layers.Dense(4, name="mid")(x)
    model = keras.Model(inputs, keras.layers.Dense(2, name="top")(x))  # paths: "low/kernel"
    return model, [[model.get_layer("low")], [model.get_layer("mid")], [model.get_layer("top")]]


def numpy_gradients(weights, x, y):
    """The MSE's gradients for `three_groups`' weights (three linear layers), by hand."""
    k1, b1, k2, b2, k3, b3 = weights
    h1 = x @ k1 + b1
    h2 = h1 @ k2 + b2
    d3 = 2 * (h2 @ k3 + b3 - y) / y.size
    d2 = d3 @ k3.T
    d1 = d2 @ k2.T
    grads = [x.T @ d1, d1.sum(0), h1.T @ d2, d2.sum(0), h2.T @ d3, d3.sum(0)]
    return [g.astype("float32") for g in grads]


def one_step(model, optimizer, x, y):
    """Weights before, gradients (NumPy), weights after one optimizer step on the MSE."""
    before = [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]
    grads = numpy_gradients(before, x, y)
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], model.trainable_variables)
    after = [keras.ops.convert_to_numpy(v) for v in model.trainable_variables]
    return before, grads, after


def test_discriminative_factors_divide_by_the_decay_per_group():
    model, groups = three_groups()
    factors = discriminative_factors(groups, decay=2.6)
    assert factors["low/kernel"] == pytest.approx(1 / 2.6**2)
    assert factors["mid/bias"] == pytest.approx(1 / 2.6)
    assert factors["top/kernel"] == 1.0
    assert discriminative_factors([["a"], ["b"]], 4.0) == {"a": 0.25, "b": 1.0}


def test_sgd_step_of_each_group_is_its_factor_times_the_rate():
    model, groups = three_groups()
    x = np.random.RandomState(0).randn(5, 3).astype("float32")
    y = np.random.RandomState(1).randn(5, 2).astype("float32")
    factors = discriminative_factors(groups, decay=2.6)
    optimizer = DiscriminativeSGD(0.1, factors=factors)
    before, grads, after = one_step(model, optimizer, x, y)
    for v, b, g, a in zip(model.trainable_variables, before, grads, after):
        eta = 0.1 * factors[v.path]
        np.testing.assert_allclose(a, b - eta * g, rtol=1e-5, atol=1e-7, err_msg=v.path)


def test_adam_first_step_of_each_group_is_its_factor_times_the_rate():
    # Keras' Adam's first step is lr * sqrt(1 - b2) / (1 - b1) * m / (sqrt(v) + eps)
    # = lr * g / (|g| + eps / sqrt(1 - b2)): the factor must scale the rate (scaling the
    # gradient would cancel out)
    model, _ = three_groups()
    x = np.random.RandomState(0).randn(5, 3).astype("float32")
    y = np.random.RandomState(1).randn(5, 2).astype("float32")
    factors = {"low": 0.25, "mid/kernel": 0.5}  # folders and exact paths
    optimizer = DiscriminativeAdam(0.01, factors=factors, epsilon=1e-7)
    before, grads, after = one_step(model, optimizer, x, y)
    want = {"low/kernel": 0.25, "low/bias": 0.25, "mid/kernel": 0.5, "mid/bias": 1.0}
    for v, b, g, a in zip(model.trainable_variables, before, grads, after):
        step = 0.01 * want.get(v.path, 1.0) * g / (np.abs(g) + 1e-7 / np.sqrt(1 - 0.999))
        np.testing.assert_allclose(a, b - step, rtol=1e-4, atol=1e-7, err_msg=v.path)


def test_discriminative_adam_saves_and_loads_with_the_model(tmp_path):
    model, groups = three_groups()
    schedule = SlantedTriangular(0.01, 20)
    model.compile(DiscriminativeAdam(schedule, factors=discriminative_factors(groups)), "mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.optimizer, DiscriminativeAdam)
    assert loaded.optimizer.factors == model.optimizer.factors
    assert isinstance(loaded.optimizer._learning_rate, SlantedTriangular)
    with pytest.raises(ValueError, match="factors"):
        DiscriminativeAdam(0.1, factors={"low": -1.0})


class Trainable(keras.callbacks.Callback):
    """Records which layers were trainable in each epoch (after `GradualUnfreezing`'s
    epoch start) and which moved."""

    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        self.rows = []

    def on_epoch_begin(self, epoch, logs=None):
        self.before = {layer.name: layer.get_weights()[0].copy() for layer in self.layers}
        self.trainable = {layer.name: layer.trainable for layer in self.layers}

    def on_epoch_end(self, epoch, logs=None):
        self.rows.append(
            {
                layer.name: (
                    self.trainable[layer.name],
                    not np.allclose(layer.get_weights()[0], self.before[layer.name]),
                )
                for layer in self.layers
            }
        )


def test_gradual_unfreezing_trains_one_more_group_from_the_top_each_epoch():
    model, groups = three_groups()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    unfreeze = GradualUnfreezing(groups)
    record = Trainable([g[0] for g in groups])
    x = np.random.RandomState(0).randn(8, 3).astype("float32")
    y = np.random.RandomState(1).randn(8, 2).astype("float32")
    if keras.backend.backend() == "jax":
        with pytest.raises(RuntimeError, match="call fit once per stage"):
            model.fit(x, y, epochs=2, verbose=0, callbacks=[unfreeze])
        return
    model.fit(x, y, epochs=4, batch_size=4, verbose=0, callbacks=[unfreeze, record])
    assert unfreeze.trainable_groups == {0: 1, 1: 2, 2: 3, 3: 3}
    # (trainable, weights changed) per epoch: frozen layers do not move
    assert record.rows == [
        {"low": (False, False), "mid": (False, False), "top": (True, True)},
        {"low": (False, False), "mid": (True, True), "top": (True, True)},
        {"low": (True, True), "mid": (True, True), "top": (True, True)},
        {"low": (True, True), "mid": (True, True), "top": (True, True)},
    ]
    assert all(g[0].trainable for g in groups)  # all trainable at the end
    with pytest.raises(ValueError, match="groups"):
        GradualUnfreezing([])
