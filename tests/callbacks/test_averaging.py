"""Weight averaging against its definitions: the running average, the EMA callback and
Keras' EMA equal NumPy averages of the weights recorded after each step; NT-ASGD
switches at the epoch its rule names; checkpoint averaging equals the NumPy mean of the
files."""

import os

import keras
import numpy as np
import pytest

from kerasrnn.callbacks import (
    NTASGD,
    ExponentialAveraging,
    PolyakAveraging,
    StartAveraging,
    average_checkpoints,
)
from tests.callbacks.test_callbacks import _Stop

X = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")


def tiny_model():
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.05), "mse")
    return model


class Record(keras.callbacks.Callback):
    """The trainable weights after each training batch (listed before the averager, so
    it reads them before anything else runs)."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append([np.array(v) for v in self.model.get_weights()])


def mean_of(steps):
    return [np.mean([step[i] for step in steps], axis=0) for i in range(len(steps[0]))]


def fit(model, callbacks, epochs=3, **kwargs):
    return model.fit(
        X, Y, batch_size=4, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks, **kwargs
    )


def test_polyak_average_is_the_mean_of_the_weights_after_each_step():
    record, average = Record(), PolyakAveraging(start=1, swap_at_end=True)
    model = tiny_model()
    history = fit(model, [record, average], epochs=2, validation_data=(X, Y))
    assert average.count == len(record.steps) - 1 == 3
    expected = mean_of(record.steps[1:])
    for got, want in zip(average.averaged_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    for got, want in zip(model.get_weights(), expected):  # the model ends averaged
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    # the last validation ran with the average ...
    np.testing.assert_allclose(
        history.history["val_loss"][-1], model.evaluate(X, Y, verbose=0), rtol=1e-5
    )
    # ... and training went on from its own weights, exactly as without the callback
    plain = Record()
    fit(tiny_model(), [plain], epochs=2, validation_data=(X, Y))
    for ours, theirs in zip(record.steps, plain.steps):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_polyak_average_is_what_later_callbacks_save_with_swap_on_epoch(tmp_path):
    record, average = Record(), PolyakAveraging(start=1, swap_on_epoch=True)
    path = os.path.join(tmp_path, "epoch{epoch}.weights.h5")
    save = keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
    fit(tiny_model(), [record, average, save], epochs=2)
    saved = tiny_model()
    for epoch, steps in ((1, record.steps[1:2]), (2, record.steps[1:])):
        saved.load_weights(path.format(epoch=epoch))
        for got, want in zip(saved.get_weights(), mean_of(steps)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    plain = Record()  # and training went on from its own weights
    fit(tiny_model(), [plain], epochs=2)
    for ours, theirs in zip(record.steps, plain.steps):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_keras_ema_is_the_exponential_average_of_the_weights_after_each_step():
    """What the docs point to for EMA: Keras' optimizer option, a_1 = w_1,
    a_k = m a_{k-1} + (1 - m) w_k; SwapEMAWeights evaluates with it."""
    momentum = 0.7
    model = tiny_model()
    model.compile(keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=momentum), "mse")
    record = Record()
    fit(model, [record], epochs=2)
    expected = [w.copy() for w in record.steps[0]]
    for step in record.steps[1:]:
        expected = [momentum * a + (1 - momentum) * w for a, w in zip(expected, step)]
    model.optimizer.finalize_variable_values(model.trainable_variables)
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def ema_of(steps, momentum):
    """r_n = max(1 - m, 1/n), written out."""
    average = [w.astype("float64") for w in steps[0]]
    for n, step in enumerate(steps[1:], start=2):
        rate = max(1 - momentum, 1 / n)
        average = [a + rate * (w - a) for a, w in zip(average, step)]
    return average


class StopAfter(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            self.model.stop_training = True


@pytest.mark.parametrize("momentum", [0.0, 0.6, 0.9])
def test_exponential_average_is_the_mean_then_the_ema_of_the_weights(momentum):
    # 0.6: a mean of 2 steps, then EMA; 0.9: a mean of all 5 (1 / (1 - m) = 10 > 5)
    record, average = Record(), ExponentialAveraging(momentum, start=1)
    model = tiny_model()
    history = fit(model, [record, average], epochs=3, validation_data=(X, Y))
    assert average.count == len(record.steps) - 1 == 5
    expected = ema_of(record.steps[1:], momentum)
    for got, want in zip(model.get_weights(), expected):  # the model ends averaged
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        history.history["val_loss"][-1], model.evaluate(X, Y, verbose=0), rtol=1e-5
    )
    plain = Record()  # training went on from its own weights
    fit(tiny_model(), [plain], epochs=3, validation_data=(X, Y))
    for ours, theirs in zip(record.steps, plain.steps):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_exponential_average_stays_in_a_model_that_stops_early():
    """Where Keras' SwapEMAWeights(swap_on_epoch=True) ends with the training weights:
    a fit stopped before its last epoch."""
    record, average = Record(), ExponentialAveraging(0.5, swap_on_epoch=True)
    model = tiny_model()
    fit(model, [record, average, StopAfter(1)], epochs=5)
    assert len(record.steps) == 4
    for got, want in zip(model.get_weights(), ema_of(record.steps, 0.5)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_keras_swap_ema_weights_ends_with_the_training_weights_after_early_stopping():
    """Why ExponentialAveraging exists (docs/regularization.md says so): Keras'
    SwapEMAWeights(swap_on_epoch=True) swaps back only at the planned last epoch. When
    this fails, Keras has mended it and the docs should say so."""
    model = tiny_model()
    model.compile(keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=0.5), "mse")
    record = Record()
    swap = keras.callbacks.SwapEMAWeights(swap_on_epoch=True)
    fit(model, [record, swap, StopAfter(1)], epochs=5)
    for got, last in zip(model.get_weights(), record.steps[-1]):
        np.testing.assert_allclose(got, last, rtol=1e-6)


@pytest.mark.parametrize("momentum", [-0.1, 1.0])
def test_exponential_average_names_a_momentum_out_of_range(momentum):
    with pytest.raises(ValueError, match=r"`momentum` must be in \[0, 1\)"):
        ExponentialAveraging(momentum)


class Scripted(keras.callbacks.Callback):
    """Logs scripted validation values, one per epoch (before NT-ASGD reads them)."""

    def __init__(self, values):
        super().__init__()
        self.values = values

    def on_epoch_end(self, epoch, logs=None):
        logs["scripted"] = self.values[epoch]


def awd_lstm_trigger(values, nonmono):
    """AWD-LSTM's main.py, transcribed: the epoch (0-based) at which it switches to ASGD."""
    best_val_loss = []
    for epoch, val_loss in enumerate(values):
        if len(best_val_loss) > nonmono and val_loss > min(best_val_loss[:-nonmono]):
            return epoch
        best_val_loss.append(val_loss)
    return None


@pytest.mark.parametrize(
    "values, patience",
    [([5.0, 4.0, 3.0, 3.5, 3.2, 3.1, 3.0, 2.9], 2), ([5.0, 4.0, 4.5, 3.0, 2.0, 1.0, 2.5, 0.5], 1)],
)
def test_nt_asgd_switches_at_the_epoch_of_the_rule_and_averages_from_then(values, patience):
    trigger = awd_lstm_trigger(values, patience)
    assert trigger == {2: 5, 1: 6}[patience]  # the cases do trigger, not at the first epoch
    record, rule = Record(), NTASGD(patience=patience, monitor="scripted")
    model = tiny_model()
    fit(model, [record, Scripted(values), rule], epochs=len(values))
    assert rule.triggered_epoch == trigger
    start = 2 * (trigger + 1)  # two batches per epoch; averaging from the next batch
    assert rule.count == len(record.steps) - start
    for got, want in zip(model.get_weights(), mean_of(record.steps[start:])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_nt_asgd_names_a_missing_monitor():
    with pytest.raises(ValueError, match="'val_loss'.*validation_data"):
        fit(tiny_model(), [NTASGD()], epochs=1)


def _interrupted_then_resumed(make_average, folder, stop):
    """The weights and the averager after 5 epochs: interrupted at `stop` and resumed by
    a fresh model and callbacks (a re-run), or uninterrupted with stop=None."""
    from kerasrnn.callbacks import AtomicBackupAndRestore

    def run(stop_at):
        model, average = tiny_model(), make_average()
        backup = AtomicBackupAndRestore(str(folder), stateful=[average])
        # _Stop after the backup: killed once epoch stop_at - 1 is backed up
        callbacks = [average, backup] + ([_Stop(stop_at - 1)] if stop_at is not None else [])
        fit(model, callbacks, epochs=5, validation_data=(X, Y))
        return model, average

    if stop is not None:
        with pytest.raises(KeyboardInterrupt):
            run(stop)
        assert sorted(os.listdir(folder)) == [
            "latest.weights.h5",
            "state_0.npz",
            "training_metadata.json",
        ]
    return run(None)


@pytest.mark.parametrize(
    "make_average",
    [
        lambda: PolyakAveraging(start=3, swap_on_epoch=True),
        lambda: ExponentialAveraging(0.5, start=1),
        # mode max on a falling val_loss: the rule fires at the end of epoch 1
        lambda: NTASGD(patience=0, mode="max", swap_on_epoch=True),
    ],
    ids=["polyak", "ema", "nt-asgd"],
)
@pytest.mark.parametrize("stop", [1, 3])
def test_a_resumed_fit_averages_as_if_never_interrupted(tmp_path, make_average, stop):
    # the backup keeps the averager's state (counters, average, the training weights
    # while the average is in the model, NT-ASGD's history): the resumed run ends with
    # the uninterrupted run's weights and average
    whole, whole_average = _interrupted_then_resumed(make_average, tmp_path / "a", None)
    resumed, resumed_average = _interrupted_then_resumed(make_average, tmp_path / "b", stop)
    assert resumed_average.count == whole_average.count > 0
    for got, want in zip(resumed.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    if isinstance(whole_average, NTASGD):
        assert resumed_average.history == whole_average.history
        assert resumed_average.triggered_epoch == whole_average.triggered_epoch


@pytest.mark.parametrize("suffix", [".weights.h5", ".keras"])
def test_checkpoint_average_is_the_numpy_mean(tmp_path, suffix):
    model, paths, saved = tiny_model(), [], []
    for k in range(3):
        fit(model, [], epochs=1)
        path = os.path.join(tmp_path, f"epoch{k}{suffix}")
        model.save_weights(path) if suffix == ".weights.h5" else model.save(path)
        paths.append(path)
        saved.append(model.get_weights())
    averaged = average_checkpoints(paths, tiny_model() if suffix == ".weights.h5" else None)
    for got, want in zip(averaged.get_weights(), mean_of(saved)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # evaluated with the averaged weights
    w1, b1, w2, b2 = mean_of(saved)
    np.testing.assert_allclose(
        averaged.evaluate(X, Y, verbose=0), np.mean(((X @ w1 + b1) @ w2 + b2 - Y) ** 2), rtol=1e-5
    )


def test_checkpoint_average_names_the_file_that_does_not_fit(tmp_path):
    model = tiny_model()
    good = os.path.join(tmp_path, "good.weights.h5")
    model.save_weights(good)
    other = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5), keras.layers.Dense(1)])
    bad = os.path.join(tmp_path, "bad.weights.h5")
    other.save_weights(bad)
    with pytest.raises(ValueError, match="bad.weights.h5") as error:
        average_checkpoints([good, bad], model)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="no such file 'missing.keras'"):
        average_checkpoints(["missing.keras"])
    with pytest.raises(ValueError, match="pass the model"):
        average_checkpoints([good])


def test_start_averaging_without_a_rule_starts_after_the_first_epoch():
    record, average = Record(), PolyakAveraging(start=None)
    model = tiny_model()
    history = fit(model, [record, average, StartAveraging(average)], epochs=3)
    # epoch 1's two steps are not averaged; epochs 2 and 3's four are
    assert average.count == 4 and len(record.steps) == 6
    for got, want in zip(average.averaged_weights(), mean_of(record.steps[2:])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert history.history["averaged_steps"] == [0, 2, 4]


@pytest.mark.parametrize(
    "values,patience",
    [([5.0, 4.0, 3.0, 3.5, 4.5, 2.0], 2), ([3.0, 2.0, 1.0, 0.5], 1), ([1.0, 2.0, 0.5, 3.0], 1)],
)
def test_start_averaging_starts_where_its_nt_asgd_rule_triggers(values, patience):
    """A given validation history, fed epoch by epoch: averaging starts after the epoch
    AWD-LSTM's own test names (`awd_lstm_trigger`), and the history stays the values
    seen until then."""
    average = PolyakAveraging(start=None)
    start = StartAveraging(average, NTASGD(patience=patience, monitor="valid_perplexity"))
    average.set_model(tiny_model())
    average.on_train_begin()
    start.on_train_begin()
    started = None
    for epoch, value in enumerate(values):
        average.on_train_batch_end(0)  # one step per epoch
        logs = {"valid_perplexity": value}
        start.on_epoch_end(epoch, logs)
        assert logs["averaged_steps"] == average.count
        if started is None and average.start is not None:
            started = epoch
    assert started == awd_lstm_trigger(values, patience)
    assert {5.0: 4, 3.0: None, 1.0: 3}[values[0]] == started  # the cases differ
    # the values up to the one that triggered: the rule reads none after the start
    seen = values if started is None else values[: started + 1]
    assert start.get_state() == {"history": seen}
    assert average.count == (0 if started is None else len(values) - started - 1)
    # the history a backup keeps comes back
    again = StartAveraging(PolyakAveraging(start=None), NTASGD(patience, "valid_perplexity"))
    again.set_state({"history": [9.0, 8.0]})
    assert again.rule.history == [9.0, 8.0] and again.get_state() == {"history": [9.0, 8.0]}
    assert StartAveraging(average).get_state() == {"history": []}


def test_start_averaging_names_a_missing_monitor():
    start = StartAveraging(PolyakAveraging(start=None), NTASGD(monitor="valid_perplexity"))
    with pytest.raises(ValueError, match="monitors 'valid_perplexity', which the epoch's logs"):
        start.on_epoch_end(0, {"loss": 1.0})
