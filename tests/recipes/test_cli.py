"""The recipes' shared command line and training flow (recipes.common.Recipe): option
help and choices from one table, the docs generated from it, --version, JSON on stdout,
rounded results, train --continue and the training curves."""

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

from recipes import classifier, cli_docs, common

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
TINY = {
    "embedding_dim": 8,
    "units": 8,
    "batch_size": 8,
    "epochs": 1,
    "verbose": 0,
    "bucket_boundaries": [],
    "patience": 0,
}
TEXTS = ["good film", "bad film", "great fun", "dull plot", "fine acting", "poor script"] * 4
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"] * 4


def _recipes():
    return cli_docs.recipes()


def test_every_option_has_help_and_sane_choices():
    for recipe in _recipes():
        assert set(common.COMMON_OPTIONS) <= set(recipe.options), recipe.name
        for key, option in recipe.options.items():
            assert isinstance(option, common.Option), (recipe.name, key)
            assert len(option.help.split()) >= 3, (recipe.name, key, option.help)
            if option.choices is not None:
                assert option.default in option.choices, (recipe.name, key)
        # The module's DEFAULTS are the table's defaults.
        module = sys.modules[type(recipe).__module__]
        assert module.DEFAULTS == common.defaults_of(recipe.options)


def test_help_shows_what_an_option_does_its_values_and_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        classifier.main(["train", "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "--pooling STR sentence vector: the last states, or the mean or max of the "
        "unmasked states of the last layer, or concat: [last ; max ; mean] of them "
        "(ULMFiT's concat pooling, for one direction); one of last, mean, max, concat "
        "(default: last)"
    ) in out
    assert "--continue" in out


def test_docs_list_every_option_of_every_recipe():
    with open(cli_docs.PAGE, encoding="utf-8") as f:
        page = f.read()
    # Generated from the option tables: `python -m recipes.cli_docs` rewrites it.
    assert cli_docs.updated(page) == page, "docs/cli.md is stale: python -m recipes.cli_docs"
    for recipe in _recipes():
        for key in recipe.options:
            flag = "--" + key.replace("_", "-")
            rows = [line for line in page.splitlines() if line.startswith(f"| `{flag}` |")]
            assert rows, (recipe.name, flag)


def test_unknown_choices_are_rejected_at_parse_time_with_the_allowed_list(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        classifier.main(["train", "--cell", "transformer", "--train", "missing.tsv"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        "argument --cell: invalid choice 'transformer' (choose from lstm, gru, simple, "
        "layer_norm_lstm, layer_norm_simple)"
    ) in err
    with pytest.raises(SystemExit):
        classifier.main(["train", "--naive-bayes", "3"])
    assert "choose from 0, 1, 2" in capsys.readouterr().err
    # A config file's value is checked too (before any data is read).
    config = tmp_path / "c.yaml"
    config.write_text("pooling: median\n")
    assert classifier.main(["train", "--config", str(config), "--train", "missing.tsv"]) == 2
    assert "`pooling` must be one of ['last', 'mean', 'max', 'concat'], got 'median'" in (
        capsys.readouterr().err
    )


def test_version(capsys):
    import kerasrnn

    with pytest.raises(SystemExit) as exit_:
        classifier.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"recipes.classifier {kerasrnn.__version__}"


def test_results_are_rounded():
    assert common.tidy(100.00000000000004) == 100.0
    assert common.tidy(
        {"a": [0.1 + 0.2, np.float32(1 / 3)], "b": float("nan"), "c": 3, "d": True}
    ) == {"a": [0.3, 0.33333334], "b": None, "c": 3, "d": True}


def test_stdout_holds_only_the_json_result(tmp_path):
    """`... > results.json` is JSON: progress bars and logs go to stderr."""
    data = tmp_path / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.classifier",
            "train",
            "--train",
            str(data),
            "--output-dir",
            str(tmp_path / "run"),
            "--embedding-dim",
            "8",
            "--units",
            "8",
            "--epochs",
            "2",
            "--verbose",
            "1",
            "--batch-size",
            "8",
            "--bucket-boundaries",
            "[]",
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)  # the whole of stdout
    assert result["train_examples"] > 0 and len(result["history"]["loss"]) == 2
    assert "Epoch 1/2" in done.stderr  # Keras' progress went to stderr
    # No float in the results carries more than 8 significant digits.
    for text in (done.stdout, (tmp_path / "run" / "results.json").read_text()):
        assert not re.search(r"\d\.\d{9,}", text), text


class _StartState(keras.callbacks.Callback):
    """The weights and optimizer step count a `fit` starts from."""

    def on_train_begin(self, logs=None):
        self.weights = [w.copy() for w in self.model.get_weights()]
        self.iterations = int(self.model.optimizer.iterations)


def _png(path):
    """(width, height) of a PNG file, read by matplotlib (which fails on a broken one)."""
    import matplotlib.image

    assert open(path, "rb").read(4) == b"\x89PNG", path
    height, width = matplotlib.image.imread(path).shape[:2]
    return width, height


def test_continue_extends_a_finished_run_from_its_last_epoch(tmp_path, capsys):
    run = tmp_path / "run"
    data = tmp_path / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    config = common.load_config(
        classifier.OPTIONS,
        overrides={**TINY, "output_dir": str(run), "train": str(data), "valid": str(data)},
    )
    first = classifier.train(config)
    assert first["history"]["epochs_run"] == 1 and not (run / "backup").exists()
    steps = -(-len(TEXTS) // TINY["batch_size"])
    after_one = keras.saving.load_model(run / "best.keras").get_weights()

    start = _StartState()
    stored = common.saved_config(classifier.OPTIONS, str(run), {"epochs": 2})
    second = classifier.train(stored, callbacks=[start], continue_run=True)
    # It started from epoch 1's weights and optimizer state, not from scratch.
    assert start.iterations == steps
    for restored, saved in zip(start.weights, after_one):
        np.testing.assert_array_equal(restored, saved)
    history = second["history"]
    assert (history["first_epoch"], history["epochs_run"]) == (2, 1)
    assert len(history["loss"]) == len(history["val_accuracy"]) == 2
    assert history["loss"][0] == first["history"]["loss"][0]
    saved = json.loads((run / "results.json").read_text())
    assert saved["history"]["loss"] == history["loss"]
    assert [r["epoch"] for r in json.loads((run / "history.json").read_text())["rows"]] == [1, 2]
    import h5py

    # The saved optimizer went on counting: 2 epochs of steps.
    with h5py.File(run / "last.weights.h5") as f:
        found = []
        f.visititems(
            lambda name, obj: found.append(obj[()]) if name.endswith("optimizer/vars/0") else None
        )
    assert int(found[0]) == 2 * steps
    width, height = _png(run / "training_curves.png")
    assert width > 400 and height > 200

    # Through the command line: `train --continue` with the stored config.
    code = classifier.main(["train", "--continue", "--output-dir", str(run), "--epochs", "3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and len(out["history"]["loss"]) == 3
    # Not more epochs than trained: a one-line error.
    assert classifier.main(["train", "--continue", "--output-dir", str(run), "--epochs", "3"]) == 2
    assert "has trained 3 epoch(s); --continue needs `epochs` above that" in (
        capsys.readouterr().err
    )
