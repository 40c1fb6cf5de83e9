"""The learning-rate range test (Smith 2017, "Cyclical Learning Rates for Training
Neural Networks", section 3.3): train a few steps with a rate that grows exponentially,
watch the loss, and take the peak rate from where it stops falling.

`LearningRateFinder.find(model, x, y)` runs the test on the model's own compiled loss
and optimizer, and puts the weights and the optimizer's state back afterwards, so the
model is as before and the run goes on with the train step the sweep compiled.
"""

import contextlib
import math
import time

import keras
import numpy as np

from kerasrnn.callbacks.budget import budget_schedule
from kerasrnn.validation import check_int, check_number


class LearningRateSearch(dict):
    """What `LearningRateFinder.find` measured, a dict (JSON-ready) with attribute
    access: ``rates``, ``losses`` (each step's training loss), ``smoothed`` (their
    bias-corrected moving average), ``minimum_rate`` (the rate of the lowest smoothed
    loss), ``pick`` (the rate the rule chose), ``rule`` (the rule in words), ``steps``
    (taken), ``planned_steps`` (N, after a time limit's cut), ``diverged`` (stopped
    early by the divergence test) and ``seconds``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def line(self):
        """One line for a log: the sweep, where it ended, and the pick."""
        end = "diverged" if self.diverged else "no divergence"
        return (
            f"learning-rate range test: {self.steps} steps from {self.rates[0]:.3g} to "
            f"{self.rates[-1]:.3g} ({end}), lowest smoothed loss {min(self.smoothed):.4g} "
            f"at {self.minimum_rate:.3g}; peak {self.pick:.3g} ({self.rule}), "
            f"{self.seconds:.1f} s"
        )


class LearningRateFinder:
    """The learning-rate range test.

    Step k of N (k = 0 .. N-1) trains one batch at the rate

    .. math::

        \\eta_k = \\eta_{lo} \\left(\\eta_{hi} / \\eta_{lo}\\right)^{k / (N - 1)}

    and records its loss ℓ_k; the curve is smoothed by a bias-corrected exponential
    moving average (β = `smoothing`):

    .. math::

        s_k = \\beta s_{k-1} + (1 - \\beta)\\, \\ell_k, \\qquad
        \\hat s_k = s_k / (1 - \\beta^{k+1})

    The sweep stops early (it *diverged*) when ℓ_k is not finite or
    ŝ_k > `divergence` · min_{j≤k} ŝ_j. The pick is a `fraction` of the rate with the
    lowest smoothed loss,

    .. math::

        \\eta^* = f\\, \\eta_{k^*}, \\qquad k^* = \\arg\\min_k \\hat s_k

    (fastai's ``lr_min`` rule with f = 0.1): at η_{k*} the loss has stopped falling, as
    the rate nears the edge of stability (for gradient descent on a quadratic, the
    divergence point 2 / L of the largest curvature L); a tenth of it keeps a margin
    below that edge for a whole run, not a single step.

    The sweep trains with the model's own optimizer, its rate held at η_k (a constant
    rate assigned, a `BudgetSchedule` through `hold`), so the train step it compiles
    is the one training then uses; the weights (and non-trainable state) and the
    optimizer's variables (its step count and moments) are restored exactly
    afterwards. On JAX, whose compiled step holds the rate it was traced with, and for
    other schedules, it trains a copy of the optimizer instead (same class and
    options, a fresh state), which compiles a train step of its own.

    Args:
        min_rate: η_lo, the first rate.
        max_rate: η_hi, the last rate (> `min_rate`).
        steps: N, the most steps (one batch each) the sweep takes, >= 5.
        smoothing: β, in [0, 1).
        divergence: the factor over the lowest smoothed loss that stops the sweep, > 1.
        fraction: f, the pick as a fraction of the loss-minimising rate, in (0, 1].
        max_seconds: a time limit on the steps after the first (None: none); the
            first step's compile is not counted, as training then runs the train
            step it compiled. After the first step and `TIMED_STEPS` more, N is cut
            to the steps that fit in it at their speed (at least `TIMED_STEPS` + 2),
            so the sweep still ends at η_hi; the rates of the steps already taken
            stay as they were.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.callbacks import LearningRateFinder
    >>> x = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
    >>> y = x @ np.ones((4, 1), "float32")
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    >>> model.compile(keras.optimizers.SGD(0.01), "mse")
    >>> before = model.get_weights()
    >>> search = LearningRateFinder(1e-4, 10.0, steps=60).find(model, x, y, batch_size=32)
    >>> 1e-3 < search.pick < 1.0, search.diverged  # SGD on this quadratic diverges near 1
    (True, True)
    >>> all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    True
    """

    def __init__(
        self,
        min_rate=1e-7,
        max_rate=10.0,
        steps=100,
        smoothing=0.9,
        divergence=4.0,
        fraction=0.1,
        max_seconds=None,
    ):
        self.min_rate = check_number("min_rate", min_rate, "(0, inf)")
        self.max_rate = check_number("max_rate", max_rate, "(0, inf)")
        if self.max_rate <= self.min_rate:
            raise ValueError(
                f"`max_rate` must be above `min_rate`, got min_rate={min_rate!r}, "
                f"max_rate={max_rate!r}."
            )
        self.steps = check_int("steps", steps, minimum=5)
        self.smoothing = check_number("smoothing", smoothing, "[0, 1)")
        self.divergence = check_number("divergence", divergence, "(1, inf)")
        self.fraction = check_number("fraction", fraction, "(0, 1]")
        self.max_seconds = check_number("max_seconds", max_seconds, "(0, inf)", allow_none=True)

    def rate(self, k, steps=None):
        """η_k, the rate of step k of a sweep of `steps` (None: `steps`)."""
        n = steps or self.steps
        return self.min_rate * (self.max_rate / self.min_rate) ** (k / (n - 1))

    @property
    def rule(self):
        return f"{self.fraction:g} x the loss-minimising rate"

    def find(self, model, x, y=None, batch_size=None):
        """Runs the sweep on the compiled `model` and returns a `LearningRateSearch`.

        `x`, `y` and `batch_size` are what `model.fit` takes: arrays (nested structures
        too) with `y` and `batch_size`, or a `tf.data.Dataset` of batches, read again
        from the start when the sweep is longer (another iterable must hold enough
        batches).
        """
        optimizer = getattr(model, "optimizer", None)
        if optimizer is None:
            raise ValueError("the model is not compiled: call `model.compile(...)` first.")
        if y is not None and batch_size is None:
            raise ValueError("with arrays, give `batch_size`.")
        began = time.monotonic()
        saved = [np.array(v) for v in model.get_weights()]
        if hasattr(x, "repeat") and hasattr(x, "element_spec"):  # a tf.data.Dataset
            x = x.repeat()
        hold = _rate_holder(model)
        record = _Record(self, hold)
        if hold is None:
            # a copy of the optimizer (its options, a fresh state) whose rate is the
            # ramp: the model's own optimizer, and a schedule it may hold, are not touched
            sweep = type(optimizer).from_config(
                {**optimizer.get_config(), "learning_rate": record.ramp}
            )
            model.optimizer = sweep
            model.make_train_function(force=True)
        else:
            state = [np.array(keras.ops.convert_to_numpy(v)) for v in optimizer.variables]
        try:
            # one step per epoch: each epoch's logged loss is that step's alone (Keras
            # logs the mean since the epoch began)
            model.fit(
                x,
                y,
                batch_size=batch_size,
                epochs=self.steps,
                steps_per_epoch=1,
                shuffle=False,
                verbose=0,
                callbacks=[record],
            )
        finally:
            if hold is None:
                model.optimizer = optimizer
                model.make_train_function(force=True)
            else:
                hold(None)
                for variable, value in zip(optimizer.variables, state):
                    variable.assign(value)
            model.set_weights(saved)
        if not record.smoothed:
            raise ValueError(
                "the learning-rate range test got no finite loss: the data is empty or the "
                f"loss is not finite even at min_rate={self.min_rate:g}; lower `min_rate`."
            )
        best = int(np.argmin(record.smoothed))
        return LearningRateSearch(
            rates=record.rates,
            losses=record.losses,
            smoothed=record.smoothed,
            minimum_rate=record.rates[best],
            pick=self.fraction * record.rates[best],
            rule=self.rule,
            steps=len(record.losses),
            planned_steps=record.length,
            diverged=record.diverged,
            seconds=time.monotonic() - began,
        )


def _rate_holder(model):
    """``hold(rate)``, which sets the rate of the model's own optimizer inside its
    compiled train step (None: back to its own), or None where the sweep needs a copy
    of the optimizer: on JAX, for a schedule other than a `BudgetSchedule`, and for an
    optimizer not built yet on a model not built (its state could not be put back)."""
    optimizer = model.optimizer
    schedule = budget_schedule(optimizer)
    constant = optimizer.learning_rate if schedule is None else None
    if keras.backend.backend() == "jax" or not (
        schedule is not None or isinstance(constant, keras.Variable)
    ):
        return None
    if not optimizer.built:
        if not (model.built and model.trainable_variables):
            return None
        strategy = getattr(model, "distribute_strategy", None)  # TensorFlow's
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            optimizer.build(model.trainable_variables)
    if schedule is not None:
        return schedule.hold
    configured = float(keras.ops.convert_to_numpy(constant))

    def hold(rate):
        optimizer.learning_rate = configured if rate is None else rate

    return hold


class _ExponentialRamp(keras.optimizers.schedules.LearningRateSchedule):
    """η_k of `LearningRateFinder`, k the optimizer's step (its copy starts at 0); the
    sweep's length is a variable, which a time limit cuts."""

    def __init__(self, low, high, steps):
        self.low, self.high = low, high
        self.length = keras.Variable(float(steps), dtype="float32", trainable=False)

    def __call__(self, step):
        progress = keras.ops.cast(step, "float32") / (self.length - 1.0)
        return self.low * keras.ops.exp(progress * math.log(self.high / self.low))

    def get_config(self):
        return {"low": self.low, "high": self.high}


TIMED_STEPS = 3  # steps timed after the first before a time limit cuts the sweep


class _Record(keras.callbacks.Callback):
    """Each step's rate and loss, their smoothed curve, the divergence stop and the
    time limit."""

    def __init__(self, finder, hold):
        super().__init__()
        self.finder, self.hold = finder, hold
        self.length = finder.steps
        # the copy of the optimizer takes its rate from the ramp; the own one is held
        self.ramp = _ExponentialRamp(finder.min_rate, finder.max_rate, finder.steps)
        self.rates, self.losses, self.smoothed = [], [], []
        self.average, self.diverged = 0.0, False

    def on_train_begin(self, logs=None):
        self.first_done = None

    def on_epoch_begin(self, epoch, logs=None):
        self.rates.append(self.finder.rate(epoch, self.length))
        if self.hold is not None:
            self.hold(self.rates[-1])

    def _cut(self, k):
        now = time.monotonic()
        if k == 0:
            self.first_done = now
        if self.finder.max_seconds is None or k != TIMED_STEPS:
            return
        per_step = (now - self.first_done) / TIMED_STEPS
        left = self.finder.max_seconds - (now - self.first_done)
        fit = k + 1 + int(max(left, 0.0) / max(per_step, 1e-9))
        length = max(min(fit, self.finder.steps), TIMED_STEPS + 2)
        if length < self.length:
            self.length = length
            self.ramp.length.assign(float(length))
            if self.hold is None and keras.backend.backend() == "jax":
                # its compiled step holds the old length
                self.model.make_train_function(force=True)

    def on_epoch_end(self, epoch, logs=None):
        loss = float(np.asarray((logs or {})["loss"]))
        self.losses.append(loss)
        self._cut(epoch)
        beta = self.finder.smoothing
        if math.isfinite(loss):
            self.average = beta * self.average + (1 - beta) * loss
            self.smoothed.append(self.average / (1 - beta ** len(self.losses)))
        diverged = not math.isfinite(loss) or (
            len(self.smoothed) > 1
            and self.smoothed[-1] > self.finder.divergence * min(self.smoothed)
        )
        self.diverged = self.diverged or diverged
        if diverged or len(self.losses) >= self.length:
            self.model.stop_training = True


# The range test of `find_budget_peak`: five decades around the configured rate, which
# gives the optimizer's scale (SGD's 1 against Adam's 1e-3), not the peak.
BUDGET_RANGE = (1e-3, 1e2)
BUDGET_STEPS = 100
# The sweep's share of the budget: on a slow machine it is cut to the steps that fit;
# fewer than BUDGET_MIN_STEPS (under 4 a decade) make too coarse a curve to trust, and
# the peak stays at the floor.
BUDGET_SHARE = 0.1
BUDGET_MIN_STEPS = 20
# A lowest loss in the sweep's first tenth says the loss fell nowhere in the range
# (noise decided, or every rate was too high): a tenth of its bottom rate is no pick.
BUDGET_EDGE = 0.1


def set_peak(model, rate):
    """Sets `rate` as the peak of the optimizer's `BudgetSchedule`, or as its rate when
    it has a constant one."""
    schedule = budget_schedule(model.optimizer)
    if schedule is not None:
        schedule.set_peak(rate)
    else:
        model.optimizer.learning_rate = rate


def find_budget_peak(model, x, y=None, batch_size=None, learning_rate=1e-3, seconds=600.0):
    """The peak rate of a time-budgeted run, by the range test: a `LearningRateFinder`
    over ``learning_rate * [1e-3, 1e2]`` (100 steps, at most a tenth of the budget's
    `seconds`) on the compiled `model` (the weights put back), its pick set as the peak
    of the optimizer's budget schedule (`set_peak`).

    The pick is never below the floor ``learning_rate / schedule.mean_fraction()``,
    whose schedule takes `learning_rate` on average (a cosine's mean is half its peak),
    so a budgeted run never learns with less than the fixed schedule; the floor also
    stands where the test cannot pick: fewer than 20 steps fit in the tenth of the
    budget, or the lowest loss came in the sweep's first tenth (the loss fell nowhere).

    Args:
        model: a compiled model whose optimizer takes its rate from a
            `BudgetSchedule` (or a constant rate).
        x, y, batch_size: the training data, as `model.fit` takes them.
        learning_rate: the configured rate (the range's centre and the floor's).
        seconds: the run's whole budget.

    Returns:
        The `LearningRateSearch`, its ``pick`` and ``rule`` those set.
    """
    low, high = BUDGET_RANGE
    finder = LearningRateFinder(
        learning_rate * low, learning_rate * high, BUDGET_STEPS, max_seconds=BUDGET_SHARE * seconds
    )
    search = finder.find(model, x, y, batch_size=batch_size)
    schedule = budget_schedule(model.optimizer)
    floor = learning_rate / (schedule.mean_fraction() if schedule is not None else 1.0)
    lowest = search.rates.index(search.minimum_rate)
    if search.planned_steps < BUDGET_MIN_STEPS:
        why = (
            f"{BUDGET_SHARE:.0%} of the budget held {search.planned_steps} steps, "
            f"under {BUDGET_MIN_STEPS}"
        )
    elif lowest < BUDGET_EDGE * search.planned_steps:
        why = (
            f"the lowest loss came at step {lowest + 1} of {search.planned_steps}, so "
            "the loss fell nowhere in the sweep"
        )
    elif search.pick < floor:
        why = f"the test's {search.pick:.3g} ({search.rule}) is below it"
    else:
        why = None
    if why is not None:
        search.update(pick=floor, rule=f"the floor, learning_rate / mean fraction: {why}")
    set_peak(model, search.pick)
    return search
