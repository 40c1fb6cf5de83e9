"""Training to a wall-clock budget: learning-rate schedules whose length is set while
training runs (`WarmupCosineDecay`, `WarmupStableDecay`, `OneCycle`), and `TimeBudget`,
the callback that measures the speed of the first steps, stretches the schedule over
the budget and stops training when the budget is spent.

Keras' own schedules (`keras.optimizers.schedules.CosineDecay`) take their length as a
Python number fixed at construction; here it is a variable (`total_steps`), so a
callback can set it once the speed of the machine is known.
"""

import math
import time

import keras
from keras import ops

from kerasrnn.validation import check_int, check_number


def _check_positive(name, value):
    return check_number(name, value, "(0, inf)")


def _check_fraction(name, value):
    return check_number(name, value, "[0, 1)")


class BudgetSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A learning-rate schedule over `total_steps` steps, held in a variable so that
    `set_total_steps` (e.g. `TimeBudget`) can change the length during training.

    Subclasses define `shape(step, total_steps)`, the rate for a peak of 1, with
    `keras.ops` (both float32 tensors); steps past the end keep the final rate.

    Args:
        peak: the highest learning rate.
        total_steps: the schedule's length in optimizer steps (a first guess when a
            `TimeBudget` sets it).
        warmup: the fraction of `total_steps` spent rising to `peak`.
    """

    def __init__(self, peak, total_steps, warmup):
        self.warmup = _check_fraction("warmup", warmup)
        total_steps = check_int("total_steps", total_steps)
        # float32 holds every integer up to 2**24 steps exactly
        self.total_steps = keras.Variable(
            float(total_steps), dtype="float32", trainable=False, name="total_steps"
        )
        # the peak and a held rate are variables too, so that a compiled train step
        # follows `set_peak` and `hold` (on TensorFlow and PyTorch; JAX's holds their
        # values when traced)
        self._peak = keras.Variable(0.0, dtype="float32", trainable=False, name="peak")
        self._held = keras.Variable(0.0, dtype="float32", trainable=False, name="held_rate")
        self.set_peak(peak)

    @property
    def peak(self):
        """η_max, the highest learning rate."""
        return self._peak_value

    def set_total_steps(self, total_steps):
        """Sets the schedule's length (an integer >= 1)."""
        self.total_steps.assign(float(check_int("total_steps", total_steps)))

    def set_peak(self, peak):
        """Sets the highest rate (e.g. a `LearningRateFinder`'s pick). On JAX a compiled
        train step holds the peak it was traced with: set it before training, or call
        ``model.make_train_function(force=True)`` after."""
        self._peak_value = _check_positive("peak", peak)
        self._peak.assign(self._peak_value)

    def hold(self, rate=None):
        """Holds the learning rate at `rate` whatever the step; None follows the
        schedule again. `LearningRateFinder` sweeps the model's own optimizer this
        way, in the train step the run then uses."""
        self._held.assign(0.0 if rate is None else _check_positive("rate", rate))

    def shape(self, step, total_steps):
        """The rate for a peak of 1 at `step` of `total_steps` (float32 tensors)."""
        raise NotImplementedError

    def mean_fraction(self, steps=1000):
        """The mean rate over the schedule as a fraction of its peak, the mean of
        `shape` over `steps` steps: 0.5 for a cosine to 0, 0.875 for the trapezoid's
        defaults; a constant rate of ``mean_fraction() * peak`` takes as large a step
        in total."""
        steps = check_int("steps", steps)
        total = ops.convert_to_tensor(float(steps), dtype="float32")
        fractions = self.shape(ops.arange(steps, dtype="float32"), total)
        return float(ops.convert_to_numpy(ops.mean(fractions)))

    def __call__(self, step):
        total, peak, held = (
            ops.convert_to_tensor(v, dtype="float32")
            for v in (self.total_steps, self._peak, self._held)
        )
        scheduled = peak * self.shape(ops.cast(step, "float32"), total)
        return ops.where(held > 0.0, held, scheduled)

    def get_config(self):
        return {
            "peak": self.peak,
            "total_steps": int(round(float(ops.convert_to_numpy(self.total_steps)))),
            "warmup": self.warmup,
        }


@keras.saving.register_keras_serializable(package="kerasrnn")
class WarmupCosineDecay(BudgetSchedule):
    """Linear warmup to `peak`, then a cosine decay to ``alpha * peak`` at the last
    step (Loshchilov & Hutter 2017, without restarts; Keras' `CosineDecay` with
    ``initial_learning_rate=0, warmup_target=peak``). With T = `total_steps`,
    W = `warmup` T and step t (clipped to T, as Keras does):

    .. math::

        \\eta_t = \\begin{cases}
            \\eta_{max}\\, t / W & t < W \\\\
            \\eta_{max} \\left(\\alpha + (1 - \\alpha)\\,
                \\tfrac12 \\left(1 + \\cos \\frac{\\pi (t - W)}{T - W}\\right)\\right) & t \\ge W
        \\end{cases}

    Args:
        peak: η_max, the rate at the end of the warmup.
        total_steps: T.
        warmup: W / T, in [0, 1).
        alpha: the final rate as a fraction of `peak`.

    Example:

    >>> from kerasrnn.callbacks import WarmupCosineDecay
    >>> schedule = WarmupCosineDecay(1.0, total_steps=10, warmup=0.2)
    >>> [round(float(schedule(t)), 3) for t in (0, 1, 2, 6, 10)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(self, peak, total_steps, warmup=0.05, alpha=0.0):
        super().__init__(peak, total_steps, warmup)
        self.alpha = _check_fraction("alpha", alpha) if alpha != 1 else 1.0

    def shape(self, step, total):
        warmup = self.warmup * total
        rising = step / ops.maximum(warmup, 1e-9)
        progress = ops.clip((step - warmup) / ops.maximum(total - warmup, 1e-9), 0.0, 1.0)
        cosine = 0.5 * (1.0 + ops.cos(math.pi * progress))
        falling = self.alpha + (1.0 - self.alpha) * cosine
        return ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@keras.saving.register_keras_serializable(package="kerasrnn")
class WarmupStableDecay(BudgetSchedule):
    """Warmup, stable, decay (the trapezoid of Zhai et al. 2022 and Hu et al. 2024; a
    linear cooldown as Hägele et al. 2024 measure it): a linear rise to `peak`, the
    peak held, then a linear fall to ``alpha * peak`` over the last `decay` of the
    steps. With T = `total_steps`, W = `warmup` T, D = `decay` T and step t (clipped
    to T):

    .. math::

        \\eta_t = \\eta_{max} \\begin{cases}
            t / W & t < W \\\\
            1 & W \\le t < T - D \\\\
            \\alpha + (1 - \\alpha)\\, (T - t) / D & t \\ge T - D
        \\end{cases}

    Its mean rate, about ``peak (1 - warmup / 2 - (1 - alpha) decay / 2)`` (0.875 peak
    for the defaults), stays near a constant schedule's, where the cosine's is half the
    peak; the cooldown still anneals the weights at the end.

    Args:
        peak: η_max.
        total_steps: T.
        warmup: W / T, in [0, 1).
        decay: D / T, in (0, 1]; ``warmup + decay <= 1``.
        alpha: the final rate as a fraction of `peak`, in [0, 1).

    Example:

    >>> from kerasrnn.callbacks import WarmupStableDecay
    >>> schedule = WarmupStableDecay(1.0, total_steps=10, warmup=0.2, decay=0.4)
    >>> [round(float(schedule(t)), 3) for t in (0, 1, 2, 5, 6, 8, 10)]
    [0.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.0]
    """

    def __init__(self, peak, total_steps, warmup=0.05, decay=0.2, alpha=0.0):
        super().__init__(peak, total_steps, warmup)
        self.decay = check_number("decay", decay, "(0, 1]")
        if self.warmup + self.decay > 1:
            raise ValueError(
                f"`warmup` + `decay` must be at most 1 (the fractions of the steps rising "
                f"and falling), got warmup={warmup!r}, decay={decay!r}."
            )
        self.alpha = _check_fraction("alpha", alpha)

    def shape(self, step, total):
        step = ops.minimum(step, total)
        warmup = self.warmup * total
        rising = step / ops.maximum(warmup, 1e-9)
        left = (total - step) / ops.maximum(self.decay * total, 1e-9)  # 1 -> 0 in the decay
        falling = self.alpha + (1.0 - self.alpha) * ops.clip(left, 0.0, 1.0)
        return ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {**super().get_config(), "decay": self.decay, "alpha": self.alpha}


@keras.saving.register_keras_serializable(package="kerasrnn")
class OneCycle(BudgetSchedule):
    """The one-cycle policy (Smith & Topin 2018) as PyTorch's ``OneCycleLR`` defines it
    (two phases, cosine annealing): from ``peak / div`` up to `peak` over the first
    `warmup` of the steps, then down to ``peak / (div * final_div)`` at the last step.
    With T = `total_steps`, U = `warmup` T - 1 and step t (clipped to T - 1, as PyTorch
    ends), for
    cos(a, b, p) = b + (a - b)(1 + cos πp) / 2:

    .. math::

        \\eta_t = \\begin{cases}
            \\cos(\\eta_{max} / d,\\ \\eta_{max},\\ t / U) & t \\le U \\\\
            \\cos(\\eta_{max},\\ \\eta_{max} / (d\\, d_f),\\ (t - U) / (T - 1 - U)) & t > U
        \\end{cases}

    Args:
        peak: η_max.
        total_steps: T.
        warmup: the rising fraction (PyTorch's ``pct_start``).
        div: d, the first rate is ``peak / div`` (PyTorch's ``div_factor``).
        final_div: d_f, the last rate is ``peak / (div * final_div)``
            (``final_div_factor``).

    Example:

    >>> from kerasrnn.callbacks import OneCycle
    >>> schedule = OneCycle(1.0, total_steps=11, warmup=2 / 11, div=10.0, final_div=10.0)
    >>> [round(float(schedule(t)), 3) for t in (0, 1, 10)]
    [0.1, 1.0, 0.01]
    """

    def __init__(self, peak, total_steps, warmup=0.3, div=25.0, final_div=1e4):
        super().__init__(peak, total_steps, warmup)
        self.div = _check_positive("div", div)
        self.final_div = _check_positive("final_div", final_div)

    def shape(self, step, total):
        peak = 1.0
        start, end = peak / self.div, peak / (self.div * self.final_div)
        up = ops.maximum(self.warmup * total - 1.0, 1e-9)  # U, PyTorch's first end step
        step = ops.minimum(step, total - 1.0)

        def anneal(a, b, progress):
            return b + (a - b) * 0.5 * (1.0 + ops.cos(math.pi * ops.clip(progress, 0.0, 1.0)))

        rising = anneal(start, peak, step / up)
        falling = anneal(peak, end, (step - up) / ops.maximum(total - 1.0 - up, 1e-9))
        return ops.where(step <= up, rising, falling)

    def get_config(self):
        return {**super().get_config(), "div": self.div, "final_div": self.final_div}


def budget_schedule(optimizer):
    """The `BudgetSchedule` that `optimizer` takes its learning rate from, or None (no
    optimizer, a constant rate, another schedule)."""
    # Keras keeps the schedule it was given as `_learning_rate`; its public
    # `learning_rate` is the schedule's value at the current step
    rate = getattr(optimizer, "_learning_rate", None)
    return rate if isinstance(rate, BudgetSchedule) else None


@keras.saving.register_keras_serializable(package="kerasrnn")
class TimeBudget(keras.callbacks.Callback):
    """Fits training into a wall-clock budget of `minutes` (measured from the start of
    `fit`).

    * After the first (compiling) step it times `measure_steps` more steps; from their
      mean time per step s it sets the schedule's length so that it ends when the
      budget does: ``total_steps = k + (budget - elapsed) / s`` (k: the steps done,
      counting from the optimizer's step at the start of `fit`). At each epoch end the
      length is set again from the mean time per step since the first one, which then
      includes the validation passes.
    * After every batch it stops training (``model.stop_training``) when one more step
      and one more epoch end (validation and the epoch-end callbacks, as long as the
      last ones took) would not fit in what is left, so a long epoch cannot overrun;
      Keras then runs the epoch's validation and ends `fit`. `epochs` becomes a cap.
      Before the first epoch end its time is unknown (none is reserved), so a budget
      that ends within the first epoch overruns by that epoch end.

    Without a `BudgetSchedule` (none given, and the optimizer's learning rate is not
    one) it only stops training.

    Args:
        minutes: the budget, > 0.
        schedule: the `BudgetSchedule` to stretch; None: the model's optimizer's
            learning rate when it is one.
        measure_steps: steps timed after the first before the schedule is set.
        spent_seconds: seconds of the budget already spent before `fit` (e.g. by a
            `LearningRateFinder`): the clock starts that much earlier.

    Attributes:
        summary: after `fit`, ``{minutes, seconds_used, steps, planned_steps,
            stopped_by_budget}`` (the steps taken in this `fit`, the schedule's length).

    Example:

    >>> import numpy as np, keras
    >>> from kerasrnn.callbacks import TimeBudget, WarmupCosineDecay
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(keras.optimizers.SGD(WarmupCosineDecay(0.1, total_steps=100)), "mse")
    >>> budget = TimeBudget(minutes=0.02)  # 1.2 seconds
    >>> _ = model.fit(np.ones((64, 2)), np.ones((64, 1)), batch_size=4, epochs=10**6,
    ...               verbose=0, callbacks=[budget])
    >>> budget.summary["stopped_by_budget"], budget.summary["seconds_used"] < 1.2 + 1
    (True, True)
    """

    def __init__(self, minutes, schedule=None, measure_steps=10, spent_seconds=0.0):
        super().__init__()
        self.minutes = _check_positive("minutes", minutes)
        self.spent_seconds = check_number("spent_seconds", spent_seconds, "[0, inf)")
        if schedule is not None and not isinstance(schedule, BudgetSchedule):
            raise TypeError(
                "`schedule` must be a kerasrnn.callbacks.BudgetSchedule (WarmupCosineDecay, "
                f"OneCycle) or None, got {type(schedule).__name__}."
            )
        self.schedule = schedule
        self.measure_steps = check_int("measure_steps", measure_steps)
        self.summary = None

    @property
    def seconds(self):
        return 60.0 * self.minutes

    def _schedule(self):
        if self.schedule is not None:
            return self.schedule
        return budget_schedule(getattr(self.model, "optimizer", None))

    def _set_length(self, seconds_per_step, now):
        schedule = self._schedule()
        if schedule is None or seconds_per_step <= 0:
            return
        left = max(self.seconds - (now - self.began), 0.0)
        total = self.offset + self.steps + max(int(left / seconds_per_step), 1)
        jax = keras.backend.backend() == "jax"
        if self.planned and abs(total - self.planned) <= (0.05 if jax else 0.01) * self.planned:
            return  # not worth the change (on JAX, a retrace)
        schedule.set_total_steps(total)
        self.planned = total
        if jax:
            # JAX's compiled step holds the value it was traced with: trace it again
            self.model.make_train_function(force=True)

    def on_train_begin(self, logs=None):
        self.began = time.monotonic() - self.spent_seconds
        self.first_done = None
        self.steps = 0
        self.epoch_end_seconds = 0.0
        self.last_batch_end = None
        self.stopped = False
        self.planned = None
        try:
            self.offset = int(ops.convert_to_numpy(self.model.optimizer.iterations))
        except (AttributeError, TypeError, ValueError):  # no optimizer built yet
            self.offset = 0

    def on_train_batch_end(self, batch, logs=None):
        now = time.monotonic()
        self.steps += 1
        if self.steps == 1:
            self.first_done = now
            per_step = 0.0  # unknown: the first step's time is mostly compiling
        else:
            per_step = (now - self.first_done) / (self.steps - 1)
        if self.steps == 1 + self.measure_steps:
            self._set_length(per_step, now)
        if now - self.began + per_step + self.epoch_end_seconds >= self.seconds:
            self.stopped = True
            self.model.stop_training = True
        self.last_batch_end = time.monotonic()

    def on_epoch_begin(self, epoch, logs=None):
        if self.last_batch_end is not None:  # validation, evaluations, checkpoints
            self.epoch_end_seconds = time.monotonic() - self.last_batch_end

    def on_epoch_end(self, epoch, logs=None):
        now = time.monotonic()
        if self.steps > 1 + self.measure_steps and not self.stopped:
            self._set_length((now - self.first_done) / (self.steps - 1), now)

    def on_train_end(self, logs=None):
        self.summary = {
            "minutes": self.minutes,
            "seconds_used": time.monotonic() - self.began,
            "steps": self.steps,
            "planned_steps": self.planned,
            "stopped_by_budget": self.stopped,
        }

    def get_config(self):
        return {
            "minutes": self.minutes,
            "measure_steps": self.measure_steps,
            "spent_seconds": self.spent_seconds,
        }
