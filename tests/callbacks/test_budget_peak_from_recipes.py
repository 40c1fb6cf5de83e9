"""`kerasrnn.callbacks.find_budget_peak`'s rules (moved here from the recipes' tests,
which now test `recipes.training.find_peak`'s wiring of it): the pick is never below
the floor learning_rate / the schedule's mean fraction, which also stands where too few
steps fit in a tenth of the budget or the loss fell nowhere in the sweep."""

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import WarmupStableDecay, find_budget_peak
from kerasrnn.callbacks.lr_finder import BUDGET_MIN_STEPS


def _budget_model(peak, optimizer=keras.optimizers.Adam):
    schedule = WarmupStableDecay(peak, total_steps=100)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer(schedule), "mse")
    return model, schedule


def test_the_floor_when_too_few_steps_fit():
    model, schedule = _budget_model(0.003)
    x, y = np.ones((32, 2), "float32"), np.zeros((32, 1), "float32")
    # 6e-5 seconds: the sweep is cut to its fewest steps
    search = find_budget_peak(model, x, y, 8, 0.003, seconds=6e-5)
    assert search["planned_steps"] == 5 < BUDGET_MIN_STEPS
    floor = 0.003 / schedule.mean_fraction()  # the trapezoid's mean rate is 0.003
    assert search["pick"] == schedule.peak == pytest.approx(floor) and floor > 0.003
    assert "the floor" in search["rule"] and "under 20" in search["rule"]


def test_the_floor_when_the_loss_falls_nowhere_in_the_sweep():
    # SGD from 1 to 1e5 on (w1 + w2 + b)^2, which diverges above 1/3: every rate too high
    model, schedule = _budget_model(1000.0, keras.optimizers.SGD)
    x, y = np.ones((32, 2), "float32"), np.zeros((32, 1), "float32")
    search = find_budget_peak(model, x, y, 8, 1000.0, seconds=600.0)
    assert search["planned_steps"] == 100 and search["minimum_rate"] == search["rates"][0]
    assert search["pick"] == schedule.peak == pytest.approx(1000.0 / schedule.mean_fraction())
    assert "fell nowhere" in search["rule"]


def test_a_pick_below_the_floor_is_raised_to_it():
    # SGD on least squares, configured at half its divergence point 2 / L: the test
    # picks a tenth of where the loss stops falling, below the configured rate
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 2)).astype("float32")
    y = x @ np.array([[1.0], [-2.0]], "float32")
    model, schedule = _budget_model(0.4, keras.optimizers.SGD)
    search = find_budget_peak(model, x, y, 32, 0.4, seconds=600.0)
    assert search["pick"] == schedule.peak == pytest.approx(0.4 / schedule.mean_fraction())
    assert "is below it" in search["rule"], search["rule"]
