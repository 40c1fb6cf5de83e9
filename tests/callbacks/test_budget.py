"""Time-budgeted training: the schedules against their definitions (NumPy, Keras'
CosineDecay, PyTorch's OneCycleLR) and `TimeBudget` against the wall clock."""

import math
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import OneCycle, TimeBudget, WarmupCosineDecay, WarmupStableDecay


def cosine_reference(t, peak, total, warmup, alpha):
    t = min(t, total)
    w = warmup * total
    if t < w:
        return peak * t / w
    return peak * (alpha + (1 - alpha) * 0.5 * (1 + math.cos(math.pi * (t - w) / (total - w))))


def one_cycle_reference(t, peak, total, warmup, div, final_div):
    """PyTorch's OneCycleLR (two phases, cos), written out."""
    t = min(t, total - 1)
    up = warmup * total - 1
    start, end = peak / div, peak / (div * final_div)

    def anneal(a, b, p):
        return b + (a - b) / 2 * (math.cos(math.pi * p) + 1)

    if t <= up:
        return anneal(start, peak, t / up)
    return anneal(peak, end, (t - up) / (total - 1 - up))


def values(schedule, steps):
    return np.array([float(keras.ops.convert_to_numpy(schedule(t))) for t in steps])


@pytest.mark.parametrize("warmup, alpha", [(0.1, 0.0), (0.0, 0.2), (0.25, 0.05)])
def test_warmup_cosine_matches_its_formula_and_keras(warmup, alpha):
    total = 40
    schedule = WarmupCosineDecay(0.5, total, warmup=warmup, alpha=alpha)
    steps = range(0, 45)
    expected = [cosine_reference(t, 0.5, total, warmup, alpha) for t in steps]
    np.testing.assert_allclose(values(schedule, steps), expected, rtol=1e-5, atol=1e-7)
    w = int(warmup * total)
    keras_schedule = keras.optimizers.schedules.CosineDecay(
        0.0, total - w, alpha=alpha, warmup_target=0.5 if w else None, warmup_steps=w
    )
    if not w:
        keras_schedule = keras.optimizers.schedules.CosineDecay(0.5, total, alpha=alpha)
    inside = range(0, total + 3)
    np.testing.assert_allclose(values(schedule, inside), values(keras_schedule, inside), atol=1e-6)


def wsd_reference(t, peak, total, warmup, decay, alpha):
    t = min(t, total)
    w, d = warmup * total, decay * total
    if t < w:
        return peak * t / w
    if t < total - d:
        return peak
    return peak * (alpha + (1 - alpha) * (total - t) / d)


@pytest.mark.parametrize(
    "warmup, decay, alpha", [(0.1, 0.2, 0.0), (0.0, 0.5, 0.1), (0.3, 0.7, 0.0)]
)
def test_warmup_stable_decay_matches_its_formula(warmup, decay, alpha):
    total = 40
    schedule = WarmupStableDecay(0.5, total, warmup=warmup, decay=decay, alpha=alpha)
    steps = range(0, 45)
    expected = [wsd_reference(t, 0.5, total, warmup, decay, alpha) for t in steps]
    np.testing.assert_allclose(values(schedule, steps), expected, rtol=1e-5, atol=1e-7)
    # the mean rate the docstring states, over the steps 0 .. T - 1
    mean = 0.5 * (1 - warmup / 2 - (1 - alpha) * decay / 2)
    assert np.mean(values(schedule, range(total))) == pytest.approx(mean, abs=0.5 / total)
    schedule.set_peak(1.0)
    np.testing.assert_allclose(values(schedule, steps), 2 * np.array(expected), rtol=1e-5)
    again = WarmupStableDecay.from_config(schedule.get_config())
    np.testing.assert_allclose(values(again, steps), values(schedule, steps))
    with pytest.raises(ValueError, match="`warmup` \\+ `decay` must be at most 1"):
        WarmupStableDecay(0.5, total, warmup=0.5, decay=0.6)


@pytest.mark.parametrize("warmup, div, final_div", [(0.3, 25.0, 1e4), (0.5, 10.0, 100.0)])
def test_one_cycle_matches_pytorch(warmup, div, final_div):
    total = 30
    schedule = OneCycle(0.2, total, warmup=warmup, div=div, final_div=final_div)
    got = values(schedule, range(total))
    expected = [one_cycle_reference(t, 0.2, total, warmup, div, final_div) for t in range(total)]
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    torch = pytest.importorskip("torch")
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=0.2)
    reference = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=0.2,
        total_steps=total,
        pct_start=warmup,
        div_factor=div,
        final_div_factor=final_div,
        cycle_momentum=False,
    )
    rates = []
    for _ in range(total):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        reference.step() if len(rates) < total else None
    np.testing.assert_allclose(got, rates, rtol=1e-5)


def test_length_is_a_variable_and_serialises():
    schedule = WarmupCosineDecay(1.0, 10, warmup=0.2, alpha=0.1)
    schedule.set_total_steps(100)
    np.testing.assert_allclose(
        values(schedule, [20, 60]), [1.0, cosine_reference(60, 1, 100, 0.2, 0.1)], rtol=1e-5
    )
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert isinstance(again, WarmupCosineDecay)
    assert again.get_config() == {"peak": 1.0, "total_steps": 100, "warmup": 0.2, "alpha": 0.1}


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: WarmupCosineDecay(0.0, 10), "peak"),
        (lambda: WarmupCosineDecay(1.0, 0), "total_steps"),
        (lambda: OneCycle(1.0, 10, warmup=1.0), "warmup"),
        (lambda: TimeBudget(0), "minutes"),
        (lambda: TimeBudget(1, schedule=0.1), "schedule"),
    ],
)
def test_bad_arguments_name_themselves(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


class Slow(keras.callbacks.Callback):
    """A fixed cost per step, so the speed TimeBudget measures is known."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def on_train_begin(self, logs=None):
        self.began, self.ends = time.monotonic(), []

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)
        self.ends.append(time.monotonic())


def tiny_model(schedule):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(schedule), "mse")
    return model


@pytest.mark.parametrize("rows, epochs", [(16, 10**6), (40000, 1)])  # many epochs; one long
def test_time_budget_stops_within_the_budget(rows, epochs):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(rows, 3)), rng.normal(size=(rows, 1))
    schedule = WarmupCosineDecay(0.01, 10**6)
    budget = TimeBudget(minutes=1.5 / 60, measure_steps=5)
    model = tiny_model(schedule)
    began = time.monotonic()
    model.fit(
        x,
        y,
        batch_size=4,
        epochs=epochs,
        verbose=0,
        validation_data=(x[:8], y[:8]),
        callbacks=[Slow(0.01), budget],
    )
    wall = time.monotonic() - began
    summary = budget.summary
    assert summary["stopped_by_budget"]
    # + the last step and the first validation (its time, compiling included, is
    # unknown until it has run once)
    assert summary["seconds_used"] <= 1.5 + 1.0
    assert wall <= 1.5 + 1.5
    assert summary["seconds_used"] >= 1.5 * 0.6  # it used the budget, not a fraction
    assert summary["steps"] >= 3


def test_time_budget_sets_the_length_from_the_measured_speed():
    """With 40 ms per step after the compiling one, the schedule must span about
    1 + (budget - first step) / 40 ms steps, and end near its last step when the budget
    stops training."""
    x, y = np.ones((8, 3)), np.ones((8, 1))
    schedule = OneCycle(0.01, 10**6, warmup=0.3)
    budget = TimeBudget(minutes=2.0 / 60, measure_steps=4)
    model = tiny_model(schedule)  # TimeBudget finds it through the optimizer
    slow = Slow(0.04)
    model.fit(x, y, batch_size=8, epochs=10**6, verbose=0, callbacks=[slow, budget])
    summary = budget.summary
    planned = summary["planned_steps"]
    first = slow.ends[0] - slow.began
    per_step = float(np.mean(np.diff(slow.ends)))
    assert per_step >= 0.04
    assert abs(planned - (1 + (2.0 - first) / per_step)) <= 0.2 * planned + 2
    assert abs(planned - summary["steps"]) <= 0.2 * planned + 2
    assert float(keras.ops.convert_to_numpy(schedule.total_steps)) == planned


@pytest.mark.large
def test_a_model_saved_with_a_schedule_loads_after_import_kerasrnn_alone(tmp_path):
    """DESIGN: `import kerasrnn` is enough to load any `.keras` file a recipe wrote (a
    --time-budget run's optimizer holds a WarmupCosineDecay)."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(WarmupCosineDecay(0.1, 10, warmup=0.2)), "mse")
    model.fit(np.zeros((4, 2)), np.zeros((4, 1)), verbose=0)
    model.save(tmp_path / "m.keras")
    code = (
        "import sys, keras, kerasrnn; "
        f"m = keras.saving.load_model({str(tmp_path / 'm.keras')!r}); "
        "print(m.optimizer.get_config()['learning_rate']['class_name'])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "WarmupCosineDecay"


def test_mean_fraction_is_the_mean_rate_over_the_peak():
    assert WarmupCosineDecay(3.0, 10, warmup=0.05).mean_fraction() == pytest.approx(0.5, abs=2e-3)
    trapezoid = WarmupStableDecay(3.0, 10, warmup=0.05, decay=0.2)
    assert trapezoid.mean_fraction() == pytest.approx(1 - 0.05 / 2 - 0.2 / 2, abs=2e-3)
    steps = np.arange(1000, dtype="float32")
    one_cycle = OneCycle(2.0, 1000)
    assert one_cycle.mean_fraction() == pytest.approx(np.mean(values(one_cycle, steps)) / 2.0)
