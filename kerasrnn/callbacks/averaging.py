"""Weight averaging: a running (Polyak) average, an exponential one, NT-ASGD, and
checkpoint averaging.

Keras keeps an exponential moving average of the weights as an optimizer option
(`use_ema=True`, with `keras.callbacks.SwapEMAWeights`); this module adds what it lacks:
the plain running average from a chosen step (Polyak & Juditsky 1992), an EMA callback
that starts late and ends in the model however training stops (`ExponentialAveraging`:
Keras' swap leaves the training weights in a model that stopped early), the running
average started by the non-monotone trigger of Merity et al. (2018) (NT-ASGD), and
OpenNMT's averaging of saved checkpoints.
"""

import os
import warnings

import keras
import numpy as np
from keras import ops

from kerasrnn.validation import check_int, check_number


def _snapshot(variables):
    """Copies of the variables' values (a TensorFlow variable converts to itself, not to
    a copy, and would follow later assignments)."""
    return [ops.copy(ops.convert_to_tensor(v)) for v in variables]


class PolyakAveraging(keras.callbacks.Callback):
    """Running average of the trainable weights from step `start` on (Polyak averaging).

    After each training batch k >= `start` (counting batches from 0 over the whole fit):

    .. math::  \\bar w_n = \\bar w_{n-1} + \\frac{w_k - \\bar w_{n-1}}{n}
        = \\frac{1}{n} \\sum_{j=1}^{n} w_{(j)}

    the plain mean of the n weights seen after each step since `start`. Validation
    (`validation_data` in `fit`, and `evaluate` during fit) runs with the averaged
    weights and the model gets the training weights back afterwards, so `val_loss` and
    checkpoints that follow the validation see the average; at the end of training the
    model keeps the averaged weights (`swap_at_end=False` keeps the last ones instead).
    The optimizer is untouched: with SGD this is averaged SGD (ASGD).

    With `swap_on_epoch=True` (as in `keras.callbacks.SwapEMAWeights`) the average is
    also in the model from the end of each epoch to the start of the next, so callbacks
    listed after this one (`ModelCheckpoint`, a recipe's evaluation) save and evaluate
    the averaged model.

    Args:
        start: the first batch (0-based, over the whole fit) whose weights enter the
            average; None starts no average until `start_averaging()` is called.
        swap_at_end: leave the averaged weights in the model when training ends.
        swap_on_epoch: hold the average in the model between epochs too.

    Example:

    >>> import numpy as np, keras
    >>> from kerasrnn.callbacks import PolyakAveraging
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> average = PolyakAveraging(start=2)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, epochs=1, verbose=0,
    ...               callbacks=[average])
    >>> average.count  # batches 2 and 3 of 4
    2
    """

    def __init__(self, start=0, swap_at_end=True, swap_on_epoch=False):
        super().__init__()
        self.start = None if start is None else check_int("start", start, minimum=0)
        self.swap_at_end = bool(swap_at_end)
        self.swap_on_epoch = bool(swap_on_epoch)
        self._swapped_for_test = False
        self.step = 0
        self.count = 0
        self.average = None
        self._saved = None

    def start_averaging(self):
        """Start the average at the next batch (NT-ASGD's switch)."""
        if self.start is None or self.start > self.step:
            self.start = self.step

    @property
    def averaging(self):
        return self.start is not None and self.step >= self.start

    def on_train_begin(self, logs=None):
        self.step, self.count, self.average = 0, 0, None

    def on_train_batch_end(self, batch, logs=None):
        if self.averaging:
            weights = _snapshot(self.model.trainable_variables)
            self.count += 1
            if self.average is None:
                self.average = [ops.cast(w, "float32") for w in weights]
            else:
                rate = self.rate(self.count)
                self.average = [
                    a + (ops.cast(w, "float32") - a) * rate for a, w in zip(self.average, weights)
                ]
        self.step += 1

    def rate(self, n):
        """The weight of the n-th averaged step's weights in the update: 1/n, the mean."""
        return 1.0 / n

    def get_state(self):
        """What a backup must keep for a resumed fit to go on averaging as if never
        stopped (`AtomicBackupAndRestore(stateful=...)` writes it): the counters, the
        average and, while the average is in the model (`swap_on_epoch`), the training
        weights, as NumPy arrays."""
        return {
            "step": self.step,
            "count": self.count,
            "start": self.start,
            "average": self.averaged_weights(),
            "training_weights": (
                None if self._saved is None else [ops.convert_to_numpy(w) for w in self._saved]
            ),
        }

    def set_state(self, state):
        """Takes back `get_state()`'s dict, in a fit resumed from a backup whose model
        weights were saved with it (so, with the average in the model, the next epoch
        swaps the saved training weights back in)."""
        self.step, self.count, self.start = state["step"], state["count"], state["start"]
        average, training = state["average"], state["training_weights"]
        self.average = None if average is None else [ops.convert_to_tensor(a) for a in average]
        self._saved = None
        if training is not None:
            variables = self.model.trainable_variables
            self._saved = [ops.convert_to_tensor(w, v.dtype) for w, v in zip(training, variables)]

    def averaged_weights(self):
        """The averaged trainable weights (NumPy), or None before the first average."""
        if self.average is None:
            return None
        return [ops.convert_to_numpy(a) for a in self.average]

    def swap_in(self):
        """Puts the average in the model, keeping the training weights to swap back."""
        if self.average is None or self._saved is not None:
            return
        variables = self.model.trainable_variables
        self._saved = _snapshot(variables)
        for variable, average in zip(variables, self.average):
            # a copy: JAX's fit donates the variables' buffers, which would delete the average
            variable.assign(ops.copy(ops.cast(average, variable.dtype)))

    def swap_out(self):
        """Gives the model its training weights back after `swap_in`."""
        if self._saved is None:
            return
        for variable, value in zip(self.model.trainable_variables, self._saved):
            variable.assign(value)
        self._saved = None

    def on_test_begin(self, logs=None):
        self._swapped_for_test = self._saved is None  # not already in (swap_on_epoch)
        self.swap_in()

    def on_test_end(self, logs=None):
        if self._swapped_for_test:
            self.swap_out()

    def on_epoch_begin(self, epoch, logs=None):
        self.swap_out()

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch:
            self.swap_in()

    def on_train_end(self, logs=None):
        if self.swap_at_end:
            self.swap_in()
            self._saved = None  # the average stays
        else:
            self.swap_out()


class ExponentialAveraging(PolyakAveraging):
    """Exponential moving average (EMA) of the trainable weights from step `start` on.

    The n-th averaged step moves the average towards the weights by

    .. math::  \\bar w_n = \\bar w_{n-1} + r_n (w_k - \\bar w_{n-1}), \\qquad
        r_n = \\max\\left(1 - m, \\frac{1}{n}\\right)

    (m = `momentum`): the plain mean of the first 1 / (1 - m) steps, then an EMA that
    forgets them. An EMA started from the first weights (Keras' ``use_ema``: r_1 = 1,
    then r = 1 - m) still gives them the share m^(n-1) after n steps (0.9 after 100
    steps at m = 0.999); here every step has the share 1/n while n <= 1 / (1 - m).
    Validation, `swap_on_epoch` and `swap_at_end` are those of `PolyakAveraging`.

    Keras' optimizer option (`use_ema=True` with `keras.callbacks.SwapEMAWeights`) keeps
    an EMA too, but leaves the training weights in the model when a `swap_on_epoch=True`
    fit stops before its last epoch (early stopping, `TimeBudget`): the swap back is only
    done at the planned last epoch. This callback ends with the average however training
    stops, works with any optimizer, and can start late (`start`, `start_averaging()`).

    Args:
        momentum: m, in [0, 1); the average spans about 1 / (1 - m) steps.
        start: the first batch (0-based, over the whole fit) whose weights enter the
            average; None starts no average until `start_averaging()` is called.
        swap_at_end: leave the averaged weights in the model when training ends.
        swap_on_epoch: hold the average in the model between epochs too.

    Example:

    >>> from kerasrnn.callbacks import ExponentialAveraging
    >>> average = ExponentialAveraging(momentum=0.9)
    >>> [round(average.rate(n), 3) for n in (1, 2, 5, 10, 11, 100)]
    [1.0, 0.5, 0.2, 0.1, 0.1, 0.1]
    """

    def __init__(self, momentum=0.999, start=0, swap_at_end=True, swap_on_epoch=False):
        super().__init__(start=start, swap_at_end=swap_at_end, swap_on_epoch=swap_on_epoch)
        # (the average spans about 1 / (1 - momentum) steps)
        self.momentum = check_number("momentum", momentum, "[0, 1)")

    def rate(self, n):
        return max(1.0 - self.momentum, 1.0 / n)


class NTASGD(PolyakAveraging):
    """Non-monotonically triggered averaging (NT-ASGD, Merity et al. 2018).

    Training runs as given (SGD in the paper) until the monitored validation value has
    not improved on the best one of more than `patience` epochs ago: at the end of epoch
    k, with v_1 .. v_{k-1} the earlier values,

    .. math::  k - 1 > n \\quad\\text{and}\\quad v_k > \\min(v_1, \\dots, v_{k-1-n})

    (n = `patience`; AWD-LSTM's ``len(best_val_loss) > nonmono and val_loss >
    min(best_val_loss[:-nonmono])``). From the next batch on the weights are averaged as
    in `PolyakAveraging`, validation runs with the average (so the values monitored after
    the switch are the averaged model's), and the model ends with the averaged weights.

    Args:
        patience: n, the non-monotone interval in epochs (AWD-LSTM: 5).
        monitor: the logged validation value (lower is better unless `mode="max"`).
        mode: "min" or "max".
        swap_on_epoch: hold the average in the model between epochs, for the callbacks
            after this one (see `PolyakAveraging`).

    Attributes:
        triggered_epoch: the 0-based epoch at whose end averaging was switched on (None
            before).

    Example:

    >>> from kerasrnn.callbacks import NTASGD
    >>> rule = NTASGD(patience=1)
    >>> [rule.should_trigger(history, value) for history, value in
    ...  [([5.0], 4.0), ([5.0, 4.0], 4.5), ([5.0, 4.0], 6.0)]]
    [False, False, True]
    """

    def __init__(self, patience=5, monitor="val_loss", mode="min", swap_on_epoch=False):
        super().__init__(start=None, swap_on_epoch=swap_on_epoch)
        self.patience = check_int("patience", patience, minimum=0)
        if mode not in ("min", "max"):
            raise ValueError(f'`mode` must be "min" or "max"; got mode={mode!r}.')
        self.monitor, self.mode = monitor, mode
        self.history = []
        self.triggered_epoch = None

    def should_trigger(self, history, value):
        """The rule: `value` worse than the best of `history` before its last n entries."""
        n = self.patience
        if len(history) <= n:
            return False
        earlier = history[: len(history) - n]
        if self.mode == "min":
            return value > min(earlier)
        return value < max(earlier)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.start, self.history, self.triggered_epoch = None, [], None

    def get_state(self):
        return {**super().get_state(), "history": self.history, "triggered": self.triggered_epoch}

    def set_state(self, state):
        super().set_state(state)
        self.history, self.triggered_epoch = list(state["history"]), state["triggered"]

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.monitor not in logs:
            raise ValueError(
                f"NTASGD monitors {self.monitor!r}, which the epoch's logs lack (they have "
                f"{sorted(logs)}); pass validation_data to fit or set monitor=."
            )
        value = float(logs[self.monitor])
        if self.triggered_epoch is None and self.should_trigger(self.history, value):
            self.triggered_epoch = epoch
            self.start_averaging()
        self.history.append(value)
        super().on_epoch_end(epoch, logs)


def _weights_of(path, model):
    """The weights stored in `path` (a `.keras` or `.weights.h5` file), as NumPy arrays in
    `model.weights` order; one-line errors naming the file."""
    if not os.path.isfile(path):
        raise ValueError(f"average_checkpoints: no such file {path!r}.")
    try:
        if path.endswith(".weights.h5"):
            with warnings.catch_warnings():
                # the optimizer's slots do not enter the average; Keras warns when a
                # file's optimizer state does not match the model's
                warnings.filterwarnings("ignore", "Skipping variable loading for optimizer")
                model.load_weights(path)
            return [np.asarray(w) for w in model.get_weights()]
        if path.endswith(".keras"):
            return [np.asarray(w) for w in keras.saving.load_model(path).get_weights()]
    except Exception as error:  # Keras' own message is many lines deep
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise ValueError(
            f"average_checkpoints: {path!r} does not load into this architecture ({first})."
        ) from None
    raise ValueError(f"average_checkpoints: {path!r} is neither a .keras nor a .weights.h5 file.")


def average_checkpoints(paths, model=None):
    """Averages the weights of several checkpoints of one architecture into a model.

    OpenNMT's ``average_models``: every floating-point weight becomes the mean over the
    files,

    .. math::  \\bar w = \\frac{1}{K} \\sum_{k=1}^{K} w^{(k)}

    (in float64, then cast back); integer weights (counters) are the last file's, and
    so is the optimizer state that `.weights.h5` files carry (it is not averaged).
    Evaluate the result like any model (`model.evaluate`, or a recipe's evaluation).

    Args:
        paths: two or more `.keras` / `.weights.h5` files of the same architecture.
        model: the model that receives the average; None loads the first `.keras` file
            (a list of only `.weights.h5` files needs a model).

    Returns:
        The model, holding the averaged weights.

    Example:

    >>> import os, tempfile, numpy as np, keras
    >>> from kerasrnn.callbacks import average_checkpoints
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
    >>> folder = tempfile.mkdtemp()
    >>> for k, value in enumerate([1.0, 3.0]):
    ...     model.set_weights([np.array([[value]])])
    ...     model.save_weights(os.path.join(folder, f"{k}.weights.h5"))
    >>> paths = [os.path.join(folder, f"{k}.weights.h5") for k in range(2)]
    >>> average_checkpoints(paths, model).get_weights()[0].tolist()
    [[2.0]]
    """
    paths = [os.fspath(path) for path in ([paths] if isinstance(paths, str) else paths)]
    if not paths:
        raise ValueError("average_checkpoints: give at least one checkpoint file.")
    if model is None:
        first = next((p for p in paths if p.endswith(".keras")), None)
        if first is None:
            raise ValueError(
                "average_checkpoints: only .weights.h5 files were given; pass the model "
                "(the architecture) as model=."
            )
        if not os.path.isfile(first):
            raise ValueError(f"average_checkpoints: no such file {first!r}.")
        model = keras.saving.load_model(first)
    reference = [np.asarray(w) for w in model.get_weights()]
    names = [w.path for w in model.weights]
    total = None
    last = None
    for path in paths:
        weights = _weights_of(path, model)
        if len(weights) != len(reference):
            raise ValueError(
                f"average_checkpoints: {path!r} holds {len(weights)} weights, the model "
                f"{len(reference)}; average checkpoints of one architecture."
            )
        for name, w, r in zip(names, weights, reference):
            if w.shape != r.shape:
                raise ValueError(
                    f"average_checkpoints: weight {name!r} of {path!r} has shape "
                    f"{w.shape}, the model's {r.shape}; average checkpoints of one "
                    f"architecture."
                )
        floats = [w.astype("float64") for w in weights]
        total = floats if total is None else [t + w for t, w in zip(total, floats)]
        last = weights
    assert total is not None and last is not None
    averaged = [
        (t / len(paths)).astype(r.dtype) if np.issubdtype(r.dtype, np.floating) else w
        for t, r, w in zip(total, reference, last)
    ]
    model.set_weights(averaged)
    return model


class StartAveraging(keras.callbacks.Callback):
    """Starts a weight average that waits to be started (`PolyakAveraging` or
    `ExponentialAveraging` with ``start=None``) at the end of an epoch: the first one,
    or with an `NTASGD` `rule` the first whose monitored value the rule triggers on.

    It is a callback of its own so that it can come after the callbacks that put the
    monitored value into the logs (a per-epoch evaluation), while the average comes
    before them (with ``swap_on_epoch``, so that they see the averaged weights). Each
    epoch's logs get ``averaged_steps``: how many steps' weights the average holds (0
    until it starts). The rule's validation history joins a `BackupAndRestore` backup
    (`get_state` / `set_state`).

    Args:
        average: the `PolyakAveraging` (or `ExponentialAveraging`) to start.
        rule: None (start after the first epoch), or an `NTASGD` whose `should_trigger`
            on its `monitor` (which the logs must hold) decides the epoch.

    Example:

    >>> import keras, numpy as np
    >>> from kerasrnn.callbacks import PolyakAveraging, StartAveraging
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> average = PolyakAveraging(start=None)
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0,
    ...               callbacks=[average, StartAveraging(average)])
    >>> average.count > 0
    True
    """

    def __init__(self, average, rule=None):
        super().__init__()
        self.average, self.rule = average, rule

    def on_train_begin(self, logs=None):
        if self.rule is not None:
            self.rule.history = []

    def get_state(self):
        return {"history": [] if self.rule is None else list(self.rule.history)}

    def set_state(self, state):
        if self.rule is not None:
            self.rule.history = list(state["history"])

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["averaged_steps"] = self.average.count
        if self.average.start is not None:
            return
        if self.rule is None:
            self.average.start_averaging()
            return
        monitor = self.rule.monitor
        if monitor not in (logs or {}):
            raise ValueError(
                f"StartAveraging's NT-ASGD rule monitors {monitor!r}, which the epoch's "
                "logs lack: give validation data (or a callback before this one that "
                "logs it)."
            )
        value = float(logs[monitor])
        if self.rule.should_trigger(self.rule.history, value):
            self.average.start_averaging()
        self.rule.history.append(value)
