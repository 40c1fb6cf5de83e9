"""Fine-tuning a pretrained network the ULMFiT way (Howard & Ruder 2018): the slanted
triangular learning-rate schedule (`SlantedTriangular`), discriminative learning rates
per layer group (`DiscriminativeAdam`, `DiscriminativeSGD`, `discriminative_factors`)
and gradual unfreezing from the top (`GradualUnfreezing`).

Why an optimizer subclass for the per-group rates: with Adam, scaling a group's
gradients by a factor changes nothing (Adam's step m / sqrt(v) is invariant to the
gradient's scale), so the factor must multiply the learning rate itself. Keras 3 has no
per-variable learning rate, but every optimizer calls ``update_step(gradient, variable,
learning_rate)`` once per variable on every backend; overriding it to multiply the rate
by the variable's factor is the smallest change, keeps `model.fit`, XLA and
``.keras`` saving working, and serialises (the factors are in `get_config`).
"""

import keras
from keras import ops

from kerasrnn.callbacks.budget import BudgetSchedule
from kerasrnn.validation import check_int, check_number


@keras.saving.register_keras_serializable(package="kerasrnn")
class SlantedTriangular(BudgetSchedule):
    """The slanted triangular learning rate (Howard & Ruder 2018, eq. 3): a short linear
    rise to `peak` over the first `cut_frac` of the T steps, then a long linear decay
    back to ``peak / ratio``:

    .. math::

        cut = \\lfloor T \\cdot cut\\_frac \\rfloor, \\qquad
        p = \\begin{cases}
            t / cut & t < cut \\\\
            1 - \\frac{t - cut}{cut \\cdot (1 / cut\\_frac - 1)} & t \\ge cut
        \\end{cases}, \\qquad
        \\eta_t = \\eta_{max} \\frac{1 + p\\,(ratio - 1)}{ratio}

    Steps past T keep the last rate (p clipped at 0). The length T is a variable, so a
    `TimeBudget` can stretch the schedule over a wall-clock budget.

    Args:
        peak: η_max (the paper: 0.01).
        total_steps: T, the optimizer steps of the whole training.
        cut_frac: the fraction of steps spent rising (the paper: 0.1).
        ratio: how much smaller the lowest rate is than η_max (the paper: 32).

    Example:

    >>> from kerasrnn.callbacks import SlantedTriangular
    >>> schedule = SlantedTriangular(1.0, total_steps=100, cut_frac=0.1, ratio=32)
    >>> [round(float(schedule(t)), 4) for t in (0, 5, 10, 55, 100)]
    [0.0312, 0.5156, 1.0, 0.5156, 0.0312]
    """

    def __init__(self, peak, total_steps, cut_frac=0.1, ratio=32.0):
        super().__init__(peak, total_steps, cut_frac)
        self.ratio = check_number("ratio", ratio, "(0, inf)")
        if self.ratio < 1 or not self.warmup > 0:
            raise ValueError(
                f"`ratio` must be >= 1 and `cut_frac` > 0, got ratio={ratio!r}, "
                f"cut_frac={cut_frac!r}."
            )

    @property
    def cut_frac(self):
        return self.warmup

    def shape(self, step, total):
        cut = ops.maximum(ops.floor(total * self.warmup), 1.0)
        rising = step / cut
        falling = 1.0 - (step - cut) / ops.maximum(cut * (1.0 / self.warmup - 1.0), 1e-9)
        p = ops.clip(ops.where(step < cut, rising, falling), 0.0, 1.0)
        return (1.0 + p * (self.ratio - 1.0)) / self.ratio

    def get_config(self):
        config = super().get_config()
        config["cut_frac"] = config.pop("warmup")
        return {**config, "ratio": self.ratio}


def _factor_of(path, factors):
    """The factor of the longest key of `factors` that is `path` or a folder of it."""
    best, factor = -1, 1.0
    for prefix, value in factors.items():
        prefix = prefix.rstrip("/")
        if (path == prefix or path.startswith(prefix + "/")) and len(prefix) > best:
            best, factor = len(prefix), float(value)
    return factor


class DiscriminativeRates:
    """Mixin of `DiscriminativeAdam` / `DiscriminativeSGD`: the step of variable v uses
    the learning rate ``factor(v) * η_t``, where ``factor(v)`` is the value of the
    longest key of `factors` that is v's path (``variable.path``, e.g.
    ``"rnn/rnn_0/lstm_cell/kernel"``) or a folder of it (``"rnn/rnn_0"``); 1 for a
    variable no key names. Weight decay is not scaled."""

    def _init_factors(self, factors):
        factors = dict(factors or {})
        for key, value in factors.items():
            if not isinstance(key, str) or isinstance(value, bool):
                raise ValueError(
                    f"`factors` maps variable paths (str) to numbers, got {key!r}: {value!r}."
                )
            check_number(f"factors[{key!r}]", value, "(0, inf)")
        self.factors = factors
        self._factors_by_key = {}

    def build(self, variables):
        super().build(variables)
        self._factors_by_key = {
            self._var_key(v): _factor_of(v.path, self.factors) for v in variables
        }

    def update_step(self, gradient, variable, learning_rate):
        factor = self._factors_by_key.get(self._var_key(variable), 1.0)
        if factor != 1.0:
            learning_rate = learning_rate * factor
        return super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        return {**super().get_config(), "factors": dict(self.factors)}


@keras.saving.register_keras_serializable(package="kerasrnn")
class DiscriminativeAdam(DiscriminativeRates, keras.optimizers.Adam):
    """Adam with a learning-rate factor per layer group (ULMFiT's discriminative
    fine-tuning): variable v of group l steps with η_l = factor_l · η_t (see
    `DiscriminativeRates`; `discriminative_factors` gives the paper's η_{l-1} = η_l / 2.6).

    Args:
        learning_rate: η_t, a float or a schedule (e.g. `SlantedTriangular`).
        factors: ``{variable path or folder: factor}``.
        **kwargs: `keras.optimizers.Adam`'s arguments.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.callbacks import DiscriminativeAdam
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="low"),
    ...                           keras.layers.Dense(1, name="top")])
    >>> model.compile(DiscriminativeAdam(0.01, factors={"low": 1 / 2.6}), "mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    """

    def __init__(self, learning_rate=0.001, factors=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._init_factors(factors)


@keras.saving.register_keras_serializable(package="kerasrnn")
class DiscriminativeSGD(DiscriminativeRates, keras.optimizers.SGD):
    """SGD with a learning-rate factor per layer group: θ_l ← θ_l − factor_l · η_t ·
    ∇θ_l (see `DiscriminativeAdam`).

    Args:
        learning_rate: η_t, a float or a schedule.
        factors: ``{variable path or folder: factor}``.
        **kwargs: `keras.optimizers.SGD`'s arguments.

    Example:

    >>> from kerasrnn.callbacks import DiscriminativeSGD
    >>> DiscriminativeSGD(0.1, factors={"embedding": 0.5}).factors
    {'embedding': 0.5}
    """

    def __init__(self, learning_rate=0.01, factors=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._init_factors(factors)


def discriminative_factors(groups, decay=2.6):
    """``{path: factor}`` for `DiscriminativeAdam`: `groups` lists the layer groups
    from the bottom (e.g. the embedding) to the top (the classifier head), each a list
    of layers or variable paths; the top group gets 1 and each lower one the factor of
    the group above divided by `decay` (ULMFiT: η_{l-1} = η_l / 2.6).

    Example:

    >>> from kerasrnn.callbacks import discriminative_factors
    >>> discriminative_factors([["embedding"], ["rnn/rnn_0"], ["classes"]], decay=2.0)
    {'embedding': 0.25, 'rnn/rnn_0': 0.5, 'classes': 1.0}
    """
    check_number("decay", decay, "(0, inf)")
    top = len(groups) - 1
    factors = {}
    for level, group in enumerate(groups):
        for member in group:
            paths = [member] if isinstance(member, str) else [v.path for v in member.weights]
            for path in paths:
                factors[path] = float(decay) ** (level - top)
    return factors


class GradualUnfreezing(keras.callbacks.Callback):
    """Gradual unfreezing (ULMFiT): `groups` lists layer groups from the bottom to the
    top; in epoch e (0-based) only the top ``e + 1`` groups are trainable, so the top
    group trains alone first and one more group joins at each epoch, until all train.
    Layers in no group are left as they are.

    At the start of `fit` every group is made trainable and the optimizer built on all
    the variables (Keras' optimizers refuse variables they were not built with), then
    the lower groups are frozen; each change re-makes the training function so that the
    new trainable set is traced. Between epochs (at each epoch end, where checkpoints
    are written) and when training ends, all groups are trainable again.
    Runs on the TensorFlow and PyTorch backends; on JAX, whose `fit` fixes the trainable
    variables for the whole call, it raises at the start of `fit`: there, call `fit`
    once per stage with the groups' `trainable` set by hand.

    Args:
        groups: lists of `keras.layers.Layer`, bottom first.
        start: the number of top groups trainable in the first epoch.

    Attributes:
        trainable_groups: ``{epoch: number of trainable top groups}`` of the epochs run.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.callbacks import GradualUnfreezing
    >>> low, top = keras.layers.Dense(2), keras.layers.Dense(1)
    >>> model = keras.Sequential([keras.Input((2,)), low, top])
    >>> model.compile("adam", "mse")
    >>> unfreeze = GradualUnfreezing([[low], [top]])
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0,
    ...               callbacks=[unfreeze])
    >>> unfreeze.trainable_groups
    {0: 1, 1: 2}
    """

    def __init__(self, groups, start=1):
        super().__init__()
        self.groups = [list(group) for group in groups]
        if not self.groups or not all(self.groups):
            raise ValueError("`groups` must be a non-empty list of non-empty layer lists.")
        self.start = check_int("start", start)
        self.trainable_groups = {}
        self._count = None

    def _set(self, count):
        top = len(self.groups) - count
        for level, group in enumerate(self.groups):
            for layer in group:
                layer.trainable = level >= top

    def on_train_begin(self, logs=None):
        if keras.backend.backend() == "jax":
            raise RuntimeError(
                "GradualUnfreezing cannot change the trainable variables inside one JAX "
                "`fit` call: call fit once per stage, setting the groups' `trainable` "
                "yourself, or use the TensorFlow or PyTorch backend."
            )
        self._count = None
        self._set(len(self.groups))
        optimizer = self.model.optimizer
        if not optimizer.built:
            optimizer.build(self.model.trainable_variables)

    def on_epoch_begin(self, epoch, logs=None):
        count = min(len(self.groups), self.start + epoch)
        self.trainable_groups[epoch] = count
        self._set(count)
        if count != self._count:  # trace the step with the new trainable variables
            self._count = count
            self.model.make_train_function(force=True)

    def on_epoch_end(self, epoch, logs=None):
        # Every group is trainable again between epochs (the traced step still trains
        # only this epoch's groups), so a checkpoint saves an ordinary model whose
        # optimizer state covers all the variables.
        self._set(len(self.groups))

    def on_train_end(self, logs=None):
        self._set(len(self.groups))
