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


# ---- find_budget_peak: the floor rules, on a fake search --------------------------------
def _fake_search(planned_steps, lowest, pick):
    """A `LearningRateSearch` of `planned_steps` rates whose smoothed loss is lowest at
    step `lowest` (0-based), with `pick` as the test's pick."""
    rates = [1e-4 * 1.1**k for k in range(planned_steps)]
    smoothed = [abs(k - lowest) + 1.0 for k in range(planned_steps)]
    return LearningRateSearch(
        rates=rates,
        losses=smoothed,
        smoothed=smoothed,
        minimum_rate=rates[lowest],
        pick=pick,
        rule="0.1 x the loss-minimising rate",
        steps=planned_steps,
        planned_steps=planned_steps,
        diverged=False,
        seconds=0.1,
    )


@pytest.mark.parametrize(
    "planned,lowest,pick,floored,why",
    [
        (100, 60, 0.5, False, None),  # a pick above the floor stands
        (100, 60, 1e-4, True, "is below it"),
        (19, 10, 0.5, True, "held 19 steps, under 20"),
        (100, 9, 0.5, True, "the lowest loss came at step 10 of 100"),
        (100, 10, 0.5, False, None),  # step 11 of 100: not in the first tenth
    ],
)
def test_find_budget_peak_keeps_the_floor_where_the_test_cannot_pick(
    monkeypatch, planned, lowest, pick, floored, why
):
    from kerasrnn.callbacks import WarmupCosineDecay, find_budget_peak

    seen = {}

    def find(finder, model, x, y=None, batch_size=None):
        seen.update(low=finder.min_rate, high=finder.max_rate, seconds=finder.max_seconds)
        return _fake_search(planned, lowest, pick)

    monkeypatch.setattr(LearningRateFinder, "find", find)
    schedule = WarmupCosineDecay(1e-3, 100, warmup=0.1)
    model = dense_model(keras.optimizers.SGD(schedule))
    search = find_budget_peak(model, None, learning_rate=0.01, seconds=300.0)
    # the sweep: five decades around the configured rate, a tenth of the budget
    assert seen == pytest.approx({"low": 1e-5, "high": 1.0, "seconds": 30.0})
    floor = 0.01 / schedule.mean_fraction()
    assert 1.8 < floor / 0.01 < 2.2  # a cosine's mean is about half its peak
    if floored:
        assert search.pick == pytest.approx(floor)
        assert search.rule.startswith("the floor, learning_rate / mean fraction: ")
        assert why in search.rule
    else:
        assert search.pick == pick and search.rule == "0.1 x the loss-minimising rate"
    assert schedule.peak == pytest.approx(search.pick)  # set as the schedule's peak


def test_set_peak_sets_a_constant_rate_without_a_budget_schedule():
    from kerasrnn.callbacks import WarmupCosineDecay, set_peak

    constant = dense_model(keras.optimizers.Adam(1e-3))
    set_peak(constant, 0.02)
    np.testing.assert_allclose(float(constant.optimizer.learning_rate), 0.02)
    schedule = WarmupCosineDecay(1e-3, 10, warmup=0.0)
    scheduled = dense_model(keras.optimizers.Adam(schedule))
    set_peak(scheduled, 0.02)
    assert schedule.peak == pytest.approx(0.02)
    np.testing.assert_allclose(float(schedule(0)), 0.02, rtol=1e-6)  # no warmup: the peak


def test_find_budget_peak_on_a_real_sweep_picks_within_the_range(problem):
    """A short real sweep (no fake): its pick is the test's or the floor, and the
    weights are as before."""
    from kerasrnn.callbacks import find_budget_peak

    x, y, _ = problem
    model = dense_model(keras.optimizers.SGD(WarmupStableDecay(0.01, 200, warmup=0.1)))
    before = model.get_weights()
    search = find_budget_peak(model, x, y, batch_size=64, learning_rate=0.01, seconds=600.0)
    floor = 0.01 / WarmupStableDecay(0.01, 200, warmup=0.1).mean_fraction()
    assert search.planned_steps == 100 and search.pick >= floor * (1 - 1e-6)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
