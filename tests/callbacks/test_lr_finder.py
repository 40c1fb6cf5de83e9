"""The learning-rate range test on a problem whose good rates are known: least squares
with SGD, which diverges above 2 / L (L: the largest eigenvalue of the loss's Hessian)."""

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import LearningRateFinder, LearningRateSearch, WarmupStableDecay


def least_squares(seed=0, n=1024):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, 4)) * [1.0, 2.0, 0.5, 1.5]).astype("float32")
    y = (x @ rng.normal(size=(4, 1)) + 0.3 * rng.normal(size=(n, 1))).astype("float32")
    # Keras' mse is mean((x w + b - y)^2): its Hessian in (w, b) is 2 [x 1]^T [x 1] / n
    xb = np.concatenate([x, np.ones((n, 1))], axis=1)
    divergence = 2.0 / np.linalg.eigvalsh(2.0 * xb.T @ xb / n).max()
    return x, y, divergence


def dense_model(optimizer):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    return model


@pytest.fixture(scope="module")
def problem():
    return least_squares()


def test_the_pick_lies_below_the_divergence_point_and_far_above_a_tiny_rate(problem):
    x, y, divergence = problem
    keras.utils.set_random_seed(1)
    model = dense_model(keras.optimizers.SGD())
    finder = LearningRateFinder(1e-5, 10.0, steps=80)
    search = finder.find(model, x, y, batch_size=32)
    assert search.diverged and search.rates[-1] < 10.0  # stopped early, past 2 / L
    assert search.rates[-1] > divergence
    assert 1e-3 < search.pick < divergence, (search.pick, divergence)
    assert search.pick == pytest.approx(0.1 * search.minimum_rate)
    # the curve as the docstring defines it: exponential rates, bias-corrected EMA
    k = np.arange(search.steps)
    np.testing.assert_allclose(search.rates, 1e-5 * (1e6) ** (k / 79), rtol=1e-9)
    ema, smoothed = 0.0, []
    for i, loss in enumerate(search.losses):
        ema = 0.9 * ema + 0.1 * loss
        smoothed.append(ema / (1 - 0.9 ** (i + 1)))
    np.testing.assert_allclose(search.smoothed, smoothed, rtol=1e-9)
    assert search.minimum_rate == search.rates[int(np.argmin(smoothed))]
    assert smoothed[-1] > 4 * min(smoothed)  # the divergence test stopped it
    assert "learning-rate range test" in search.line() and "\n" not in search.line()


def test_weights_and_optimizer_state_are_restored_exactly_and_datasets_work(problem):
    import tensorflow as tf

    x, y, _ = problem
    model = dense_model(keras.optimizers.Adam(1e-3))
    model.fit(x[:64], y[:64], batch_size=16, epochs=1, verbose=0)  # a state to keep
    weights = [np.array(w) for w in model.get_weights()]
    state = [np.array(keras.ops.convert_to_numpy(v)) for v in model.optimizer.variables]
    data = tf.data.Dataset.from_tensor_slices((x[:96], y[:96])).batch(32)  # 3 batches, reread
    search = LearningRateFinder(1e-4, 1.0, steps=12).find(model, data)
    assert isinstance(search, LearningRateSearch) and search.steps == 12
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)
    for before, after in zip(state, model.optimizer.variables):
        np.testing.assert_array_equal(before, keras.ops.convert_to_numpy(after))
    # training goes on with the model's own optimizer, from its own step count
    model.fit(x[:16], y[:16], batch_size=16, epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 5


def test_a_budget_schedule_is_swept_in_the_train_step_the_run_then_uses(problem):
    x, y, divergence = problem
    keras.utils.set_random_seed(1)
    schedule = WarmupStableDecay(0.01, total_steps=100)  # its rate at step 0 is 0
    model = dense_model(keras.optimizers.SGD(schedule))
    search = LearningRateFinder(1e-5, 10.0, steps=80).find(model, x, y, batch_size=32)
    # the held rates made SGD diverge past 2 / L, as with a constant rate
    assert search.diverged and 1e-3 < search.pick < divergence
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 0
    step = model.train_function
    schedule.set_peak(search.pick)
    model.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    assert float(schedule(50)) == pytest.approx(search.pick, rel=1e-6)  # no rate held
    if keras.backend.backend() != "jax":  # JAX sweeps a copy, with its own train step
        assert step is not None and model.train_function is step


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"min_rate": 0.0}, "`min_rate` must be a number > 0"),
        ({"min_rate": 1.0, "max_rate": 0.5}, "`max_rate` must be above `min_rate`"),
        ({"steps": 2}, "`steps` must be an integer >= 5"),
        ({"smoothing": 1.0}, "`smoothing` must be in \\[0, 1\\)"),
        ({"divergence": 1.0}, "`divergence` must be a number > 1"),
        ({"fraction": 0.0}, "`fraction` must be in \\(0, 1\\]"),
    ],
)
def test_bad_arguments_get_one_line_errors(arguments, message):
    with pytest.raises(ValueError, match=message) as error:
        LearningRateFinder(**arguments)
    assert "\n" not in str(error.value)


def test_an_uncompiled_model_or_missing_batch_size_is_refused(problem):
    x, y, _ = problem
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="not compiled"):
        LearningRateFinder().find(model, x, y, batch_size=8)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="give `batch_size`"):
        LearningRateFinder().find(model, x, y)


def test_a_time_limit_cuts_the_sweep_and_it_still_ends_at_the_last_rate(problem):
    x, y, _ = problem
    model = dense_model(keras.optimizers.SGD())
    finder = LearningRateFinder(1e-5, 1e-2, steps=1000, max_seconds=1e-3)
    search = finder.find(model, x, y, batch_size=32)
    assert search.planned_steps == search.steps == 5  # the least a cut leaves
    # the first 4 steps' rates were those of the 1000-step sweep, the last is max_rate
    np.testing.assert_allclose(search.rates[:4], [finder.rate(k) for k in range(4)])
    assert search.rates[-1] == pytest.approx(1e-2)
    roomy = LearningRateFinder(1e-5, 1e-2, steps=8, max_seconds=600.0)
    assert roomy.find(model, x, y, batch_size=32).planned_steps == 8  # no cut
