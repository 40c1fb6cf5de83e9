"""The recipes' shared training options: `time_budget` (a schedule over a wall-clock
budget) and `averaging`, on the cheapest recipe."""

import json
import math

import keras
import numpy as np
import pytest

from recipes import classifier, common
from tests.callbacks.test_callbacks import _Stop

TINY = {
    "embedding_dim": 8,
    "units": 8,
    "batch_size": 4,
    "verbose": 0,
    "valid_fraction": 0.0,
    "bucket_boundaries": [],
    "patience": 0,
    "cell": "simple",  # the quickest to compile: the budget counts the compiling step
    "bidirectional": False,
}


def _splits():
    texts = ["good film", "bad film", "great fun", "dull plot"] * 4
    labels = ["pos", "neg", "pos", "neg"] * 4
    return {"train": (texts, labels), "valid": (texts[:4], labels[:4]), "test": None}


@pytest.mark.large
def test_time_budget_stops_a_long_run_within_the_budget_and_reports_it(tmp_path):
    minutes = 6.0 / 60
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            **TINY,
            "output_dir": str(tmp_path / "run"),
            "epochs": 100000,
            "time_budget": minutes,
            "budget_schedule": "one_cycle",
            "find_lr": False,  # the range test's compiling alone may take the 6 seconds
        },
    )
    results = classifier.train(config, _splits())
    used = results["time_budget"]
    assert used["stopped_by_budget"] and used["minutes"] == minutes
    # the last step and the last epoch's end after it (seconds on a loaded machine)
    assert used["seconds_used"] <= 6.0 + 4.0
    assert results["history"]["epochs_run"] < 100000
    assert used["steps"] >= 4 * (results["history"]["epochs_run"] - 1) + 1
    if used["steps"] > 11:  # the schedule is set after the first step and 10 timed ones
        assert used["planned_steps"] >= used["steps"] * 0.5, used
    with open(tmp_path / "run" / "results.json", encoding="utf-8") as f:
        assert json.load(f)["time_budget"]["steps"] == used["steps"]
    assert (tmp_path / "run" / "best.keras").exists()  # reloads: the schedule serialises
    schedule = classifier.RECIPE.load(config).optimizer.get_config()["learning_rate"]
    assert schedule["class_name"] == "OneCycle"


def test_find_lr_picks_the_peak_inside_the_budget_and_reports_its_curve(tmp_path, capsys):
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            **TINY,
            "output_dir": str(tmp_path / "run"),
            "epochs": 1,  # ends it first: the range test and the schedule, not the stop
            "time_budget": 5.0,  # the range test may take 30 s of it
            "budget_schedule": "wsd",
        },  # find_lr: on by default with a time budget
    )
    results = classifier.train(config, _splits())
    search, used = results["find_lr"], results["time_budget"]
    assert search["rates"][0] == pytest.approx(config["learning_rate"] * 1e-3)
    assert len(search["rates"]) == len(search["losses"]) == search["steps"] <= 100
    assert search["pick"] == pytest.approx(0.1 * search["minimum_rate"])
    assert 0 < search["seconds"] <= used["seconds_used"]  # counted in the budget
    lines = [x for x in capsys.readouterr().err.splitlines() if "range test" in x]
    assert len(lines) == 1 and f"peak {search['pick']:.3g}" in lines[0]
    with open(tmp_path / "run" / "results.json", encoding="utf-8") as f:
        assert json.load(f)["find_lr"]["pick"] == search["pick"]
    saved = keras.saving.load_model(tmp_path / "run" / "best.keras").optimizer.get_config()
    assert saved["learning_rate"]["class_name"] == "WarmupStableDecay"
    assert saved["learning_rate"]["config"]["peak"] == pytest.approx(search["pick"])


def test_find_lr_and_the_wsd_schedule_on_the_command_line(tmp_path, capsys):
    args = ["train", "--train", str(tmp_path / "missing.tsv"), "--time-budget", "1"]
    args += ["--output-dir", str(tmp_path / "run")]
    config = common.load_config(classifier.DEFAULTS, overrides={"budget_schedule": "wsd"})
    assert config["find_lr"] is True and config["budget_schedule"] == "wsd"
    assert classifier.main([*args, "--no-find-lr", "--budget-schedule", "wsd"]) == 2
    assert "missing.tsv" in capsys.readouterr().err  # parsed; then the data is missing
    with pytest.raises(SystemExit) as exit_:
        classifier.main([*args, "--budget-schedule", "trapezoid"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "invalid choice 'trapezoid' (choose from cosine, wsd, one_cycle, constant)" in err[-1]
    with pytest.raises(common.ConfigError, match="find_lr"):
        common.load_config(classifier.DEFAULTS, overrides={"find_lr": "often"})


class Spy(keras.callbacks.Callback):
    """The trainable weights after every step (as the optimizer left them) and at every
    epoch end (what the checkpoints save)."""

    def on_train_begin(self, logs=None):
        self.steps, self.ends = [], []

    def weights(self):
        return [np.array(w) for w in self.model.trainable_weights]

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(self.weights())

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(self.weights())


def expected_average(steps, averaging, momentum):
    """The mean of `steps`, or for ``ema`` r_n = max(1 - m, 1/n) written out."""
    if averaging != "ema":
        return np.mean(steps, axis=0)
    average = steps[0].astype("float64")
    for n, step in enumerate(steps[1:], start=2):
        average += max(1 - momentum, 1 / n) * (step - average)
    return average


# ("polyak" differs from "ema" only in its rate, which the callbacks' tests check.)
@pytest.mark.parametrize("averaging", ["ntasgd", "ema"])
def test_averaging_puts_the_average_of_the_steps_weights_in_the_checkpoints(tmp_path, averaging):
    # ntasgd with patience 2 (interval 0): it switches on at the first epoch whose
    # validation loss is worse than the best before, and early stopping leaves at least
    # one epoch after it; a learning rate of 1 makes one likely within 4 epochs
    # ema: a momentum of 0.5 turns from the mean to the EMA after two steps
    epochs = 3 if averaging == "ema" else 4
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            **TINY,
            "output_dir": str(tmp_path / "run"),
            "epochs": epochs,
            "averaging": averaging,
            "patience": 0 if averaging == "ema" else 2,
            "ema_momentum": 0.5,
            "learning_rate": 1.0 if averaging == "ntasgd" else 0.01,
        },
    )
    spy = Spy()
    classifier.train(config, _splits(), callbacks=[spy])
    per_epoch = len(spy.steps) // len(spy.ends)
    rows = json.load(open(tmp_path / "run" / "history.json", encoding="utf-8"))["rows"]
    # the classifier monitors val_accuracy (higher is better): NT-ASGD's rule reads it
    scores = [row["val_accuracy"] for row in rows]
    if averaging == "ema":
        first = 1  # from the second epoch on
    else:
        # the first epoch after one worse than an earlier one (none: never averaged,
        # and every epoch's checkpoint holds its last step's own weights)
        worse = [k for k in range(1, len(scores)) if scores[k] < max(scores[:k])]
        first = worse[0] + 1 if worse else len(spy.ends)
    # each row says how many steps the epoch's validation averaged
    assert [row["averaged_steps"] for row in rows] == [
        max(0, (k + 1 - first) * per_epoch) for k in range(len(rows))
    ]
    for k in range(len(spy.ends)):
        taken = spy.steps[first * per_epoch : (k + 1) * per_epoch]
        expected = spy.steps[(k + 1) * per_epoch - 1] if k < first else None
        for j, held in enumerate(spy.ends[k]):
            if expected is not None:  # not averaging yet: the step's own weights
                np.testing.assert_allclose(held, expected[j], rtol=1e-6)
            else:
                average = expected_average([step[j] for step in taken], averaging, 0.5)
                np.testing.assert_allclose(held, average, rtol=1e-4, atol=1e-6)


@pytest.mark.large
def test_a_run_resumed_from_its_backup_goes_on_with_its_average(tmp_path):
    # the backup holds the average (AtomicBackupAndRestore(stateful=...)): the re-run's
    # epochs go on averaging (4 steps an epoch) instead of starting a new average
    config = common.load_config(
        classifier.DEFAULTS,
        overrides={
            **TINY,
            "output_dir": str(tmp_path / "run"),
            "epochs": 4,
            "averaging": "ema",
            "ema_momentum": 0.5,
        },
    )
    with pytest.raises(KeyboardInterrupt):
        # extra callbacks come after the backup: killed once epoch 2 is backed up
        classifier.train(config, _splits(), callbacks=[_Stop(1)])
    assert (tmp_path / "run" / "backup" / "state_0.npz").exists()
    classifier.train(config, _splits())
    rows = json.load(open(tmp_path / "run" / "history.json", encoding="utf-8"))["rows"]
    assert [row["averaged_steps"] for row in rows] == [0, 4, 8, 12]


@pytest.mark.large
def test_language_model_with_awd_regularisers_and_a_budget_trains_saves_and_loads(tmp_path):
    from kerasrnn.layers import ActivationRegularization, EmbeddingDropout, WeightDrop
    from recipes import language_model

    lines = ["the cat sat on a mat", "the dog ran on a log"] * 20
    files = {}
    for split in ("train", "valid", "test"):
        files[split] = tmp_path / f"{split}.txt"
        files[split].write_text("\n".join(lines) + "\n")
    overrides = dict(
        units=8,
        num_layers=2,
        steps=5,
        batch_size=4,
        epochs=1,
        verbose=0,
        output_dir=str(tmp_path / "run"),
        train_file=str(files["train"]),
        valid_file=str(files["valid"]),
        test_file=str(files["test"]),
        weight_drop=0.5,
        embedding_dropout=0.1,
        locked_dropout=0.3,
        ar_alpha=2.0,
        tar_beta=1.0,
        jit_compile=False,  # quicker to compile
        time_budget=1.0,  # epochs=1 ends it first: the budget's schedule, not its stop
        find_lr=False,  # the peak is `learning_rate`
    )
    config = common.load_config(language_model.DEFAULTS, overrides=overrides)
    results = language_model.train(config)
    assert not results["time_budget"]["stopped_by_budget"]
    assert results["time_budget"]["steps"] > 0
    assert 0 < results["epochs"][0]["learning_rate"] < config["learning_rate"]  # warmup
    assert math.isfinite(results["test"]["perplexity"])
    model = keras.saving.load_model(tmp_path / "run" / "best.keras", compile=False).backbone
    assert isinstance(model.get_layer("embedding"), EmbeddingDropout)
    assert all(isinstance(model.get_layer(f"rnn_{i}").cell, WeightDrop) for i in range(2))
    assert isinstance(model.get_layer("locked_dropout_in"), keras.layers.SpatialDropout1D)
    assert {model.get_layer("tar").beta, model.get_layer("ar").alpha} == {1.0, 2.0}
    assert isinstance(model.get_layer("ar"), ActivationRegularization)
    for bad in ({"weight_drop": 1.0}, {"ar_alpha": -1.0}):
        with pytest.raises(common.ConfigError, match=next(iter(bad))):
            common.load_config(language_model.DEFAULTS, overrides={**overrides, **bad})


def test_find_peak_is_off_without_find_lr_and_a_continue_keeps_its_first_pick(tmp_path):
    """The recipes' range test (`recipes.training.find_peak`; its rules are
    `kerasrnn.callbacks.find_budget_peak`'s: tests/callbacks/test_budget_peak_from_recipes.py):
    a continued run takes the pick its first run wrote into results.json, no new sweep."""
    from kerasrnn.callbacks import WarmupStableDecay
    from recipes.training import find_peak

    schedule = WarmupStableDecay(0.003, total_steps=100)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(schedule), "mse")
    config = {"output_dir": str(tmp_path), "time_budget": 1.0, "find_lr": True}
    config.update(learning_rate=0.003, batch_size=8)
    data = (np.ones((32, 2), "float32"), np.zeros((32, 1), "float32"))
    assert find_peak(model, {**config, "find_lr": False}, data) is None
    assert find_peak(model, {**config, "time_budget": 0.0}, data) is None
    assert schedule.peak == 0.003
    earlier = {"rates": [0.01], "losses": [1.0], "steps": 1, "pick": 0.02, "rule": "r"}
    (tmp_path / "results.json").write_text(json.dumps({"find_lr": earlier}))
    again = find_peak(model, config, data, continue_run=True)
    assert schedule.peak == again["pick"] == 0.02 and again["seconds"] == 0.0
