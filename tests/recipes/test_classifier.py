"""recipes.classifier: its model, the Naive Bayes option, tensorflow-datasets data, the
resume of an interrupted run, the command line on the shared run and bad input."""

import json
import shutil

import keras
import numpy as np
import pytest

from recipes import classifier, common
from tests.conftest import CLASSIFIER_LABELS, CLASSIFIER_TEXTS, main_json

TINY = {
    "embedding_dim": 8,
    "units": 8,
    "batch_size": 16,
    "epochs": 1,
    "verbose": 0,
    "valid_fraction": 0.0,
    "bucket_boundaries": [],
}


def _config(tmp_path, **overrides):
    return common.load_config(
        classifier.DEFAULTS, overrides={**TINY, "output_dir": str(tmp_path / "run"), **overrides}
    )


def _tsv(path, texts, labels):
    path.write_text("".join(f"{label}\t{text}\n" for text, label in zip(texts, labels)))
    return path


def test_padding_never_changes_the_prediction(tmp_path):
    # ("last" is covered by test_common; "mean" by the pooling layer's tests.)
    config = _config(tmp_path, pooling="max", num_layers=2, cell="gru")
    model = classifier.build_model(config, vocab_size=20, num_classes=3)
    ids = np.array([[5, 6, 7, 8, 0, 0, 0]], "int32")
    full = model.predict(ids, verbose=0)
    np.testing.assert_allclose(model.predict(ids[:, :4], verbose=0), full, atol=1e-6)
    assert full.shape == (1, 3) and np.isclose(full.sum(), 1, atol=1e-5)


@pytest.mark.large
def test_naive_bayes_from_a_config_file_multiplies_the_expert_in(tmp_path, capsys):
    """``train --config`` with ``naive_bayes: 2``: best.keras is the classifier times the
    expert counted on the training and (naive_bayes_counts_valid) validation texts."""
    texts = ["good film", "bad film", "great fun", "dull plot"] * 4
    labels = ["pos", "neg", "pos", "neg"] * 4
    train = _tsv(tmp_path / "train.tsv", texts, labels)
    valid = _tsv(tmp_path / "valid.tsv", ["fun film"], ["pos"])
    options = tmp_path / "c.json"
    settings = {"naive_bayes": 2, "naive_bayes_buckets": 101, "naive_bayes_counts_valid": True}
    options.write_text(json.dumps({**TINY, **settings, "pooling": "mean", "cell": "simple"}))
    run = tmp_path / "run"
    flags = ["--config", str(options), "--train", str(train), "--valid", str(valid)]
    results = main_json(classifier, "train", *flags, "--output-dir", str(run))
    assert results["train_examples"] == 16 and results["labels"] == ["neg", "pos"]
    assert json.loads((run / "results.json").read_text())["labels"] == ["neg", "pos"]

    trained = classifier.RECIPE.load(common.saved_config(classifier.OPTIONS, str(run)))
    expert = trained.get_layer("naive_bayes")
    assert (expert.order, expert.buckets) == (2, 101)
    fun_film = trained.preprocessor.vocabulary.encode(["fun", "film"])
    bigram = expert.ngram_rows(fun_film)[-1]  # only in the validation sentence
    assert np.abs(np.asarray(expert.log_likelihood)[bigram]).min() > 0
    ids = np.array([[5, 6, 0], [7, 8, 9]], "int32")
    without = keras.Model(trained.inputs, trained.get_layer("classes").output)
    rnn, scores = without.predict(ids, verbose=0), np.asarray(expert.scores(ids))
    assert np.abs(scores).max() > 0  # the counted table survived saving
    np.testing.assert_allclose(
        trained.predict(ids, verbose=0),
        keras.ops.softmax(np.log(rnn) + expert.scale * scores).numpy(),
        rtol=1e-5,
    )
    # predict prints the product's label and probabilities
    rows = main_json(classifier, "predict", "--output-dir", str(run), "fun film")
    probabilities = trained.predict(trained.preprocessor.encode(["fun film"]), verbose=0)[0]
    np.testing.assert_allclose(
        [rows[0]["probabilities"][k] for k in ("neg", "pos")], probabilities, rtol=1e-5
    )
    for bad, match in (
        ({"naive_bayes": 3}, "`naive_bayes`"),
        ({"naive_bayes_scale": -1}, "`naive_bayes_scale`"),
    ):
        splits = {"train": (texts, labels), "valid": None, "test": None}
        with pytest.raises(common.ConfigError, match=match):
            classifier.train(_config(tmp_path, output_dir=str(tmp_path / "bad"), **bad), splits)


def test_predict_and_evaluate_on_the_shared_run(tiny_classifier, tmp_path):
    """The shared run: a blank and an unknown input still get a label and probabilities
    summing to 1; evaluate's accuracy is that of predict's labels (computed here)."""
    flags = ["--output-dir", str(tiny_classifier)]
    rows = main_json(classifier, "predict", *flags, "", "zzzq unknownword", CLASSIFIER_TEXTS[0])
    assert [r["text"] for r in rows] == ["", "zzzq unknownword", CLASSIFIER_TEXTS[0]]
    for row in rows:
        assert row["label"] in ("neg", "pos") and set(row["probabilities"]) == {"neg", "pos"}
        assert sum(row["probabilities"].values()) == pytest.approx(1, abs=1e-5)
        assert row["probability"] == max(row["probabilities"].values())
    listed = tmp_path / "inputs.txt"
    listed.write_text("zzzq unknownword\n")
    assert main_json(classifier, "predict", *flags, "--input", str(listed)) == rows[1:2]
    assert main_json(classifier, "predict", *flags) == []

    run = shutil.copytree(tiny_classifier, tmp_path / "run")  # evaluate writes into it
    texts, labels = CLASSIFIER_TEXTS[:8], CLASSIFIER_LABELS[:8]
    test = _tsv(tmp_path / "test.tsv", texts, labels)
    scores = main_json(classifier, "evaluate", "--output-dir", str(run), "--test", str(test))
    predicted = [r["label"] for r in main_json(classifier, "predict", *flags, *texts)]
    assert scores["examples"] == 8
    assert scores["accuracy"] == pytest.approx(np.mean([p == g for p, g in zip(predicted, labels)]))
    assert set(scores["per_class"]) == {"neg", "pos"}
    assert json.loads((run / "evaluation.json").read_text()) == scores


def test_reads_a_tensorflow_datasets_dataset(tiny_classifier, tmp_path):
    """``tfds:NAME[:SPLIT]`` data specs: train's splits and evaluate's --test."""
    import tensorflow_datasets as tfds

    config = _config(
        tmp_path,
        train="tfds:imdb_reviews",
        test="tfds:imdb_reviews:test",
        tfds_data_dir=str(tmp_path / "tfds"),
    )
    run = shutil.copytree(tiny_classifier, tmp_path / "run")
    with tfds.testing.mock_data(num_examples=32):
        splits = classifier.RECIPE.load_splits(config)
        flags = ["--output-dir", str(run), "--tfds-data-dir", str(tmp_path / "tfds")]
        scores = main_json(classifier, "evaluate", *flags, "--test", "tfds:imdb_reviews:test")
    texts, labels = splits["train"]
    assert len(texts) == len(labels) == 32 and set(labels) <= {"neg", "pos"}
    assert all(isinstance(t, str) for t in texts) and len(splits["test"][0]) == 32
    assert splits["valid"] is None  # valid_fraction 0
    assert scores["examples"] == 32 and set(scores["per_class"]) == {"neg", "pos"}


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            raise KeyboardInterrupt("simulated kill after the first epoch")


@pytest.mark.large
def test_backup_and_restore_resumes_an_interrupted_run(tmp_path):
    texts = ["good film", "bad film", "great fun", "dull plot"] * 8
    labels = ["pos", "neg", "pos", "neg"] * 8
    splits = {"train": (texts, labels), "valid": (texts, labels), "test": None}
    config = _config(tmp_path, epochs=2)
    with pytest.raises(KeyboardInterrupt):
        classifier.train(config, splits, callbacks=[_Interrupt()])
    assert (tmp_path / "run" / "backup").exists()
    resumed = classifier.train(config, splits)
    assert resumed["history"]["first_epoch"] == 2 and resumed["history"]["epochs_run"] == 1
    assert len(resumed["history"]["loss"]) == 2  # epoch 1's row kept from the backup
    assert not (tmp_path / "run" / "backup").exists()  # removed after a completed run


def _cli(capsys, *argv):
    code = classifier.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_bad_input(tmp_path, capsys):
    good = tmp_path / "train.tsv"
    good.write_text("pos\tgood\nneg\tbad\n")
    run = ["--output-dir", tmp_path / "run"]
    code, _, err = _cli(capsys, "train", "--train", tmp_path / "missing.tsv", *run)
    assert code == 2 and "data file not found" in err and "missing.tsv" in err
    (tmp_path / "empty.tsv").write_text("")
    code, _, err = _cli(capsys, "train", "--train", tmp_path / "empty.tsv", *run)
    assert code == 2 and "empty.tsv: the file contains no examples" in err
    (tmp_path / "one.tsv").write_text("pos\tgood\npos\tfine\n")
    code, _, err = _cli(capsys, "train", "--train", tmp_path / "one.tsv", *run)
    assert code == 2 and "a single label ['pos']; a classifier needs 2+" in err
    (tmp_path / "c.yaml").write_text("unitz: 3\n")
    code, _, err = _cli(capsys, "train", "--config", tmp_path / "c.yaml", *run)
    assert code == 2 and "unknown config key(s) ['unitz']" in err
    (tmp_path / "test.tsv").write_text("pos\tgood\nmaybe\tfine\n")
    code, _, err = _cli(
        capsys,
        "train",
        "--train",
        good,
        "--test",
        tmp_path / "test.tsv",
        "--valid-fraction",
        "0",
        *run,
    )
    assert code == 2 and "label set mismatch: the test data (" in err
    assert "test.tsv) has label(s) ['maybe']" in err
    with pytest.raises(SystemExit) as exit_:  # at parse time, before any data is read
        classifier.main(["train", "--train", str(good), "--valid-fraction", "1.5"])
    assert exit_.value.code == 2
    assert "argument --valid-fraction: must be a number in [0, 1)" in capsys.readouterr().err
    code, _, err = _cli(capsys, "predict", "--output-dir", tmp_path / "never-trained", "hi")
    assert code == 2 and "config.json" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        classifier.main(["train", "--no-such-flag", "1"])


def test_evaluate_names_labels_the_run_never_saw(tiny_classifier, tmp_path, capsys):
    run = shutil.copytree(tiny_classifier, tmp_path / "run")
    other = _tsv(tmp_path / "other.tsv", ["fine"], ["maybe"])
    code, _, err = _cli(capsys, "evaluate", "--output-dir", run, "--test", other)
    assert code == 2 and err.count("\n") == 1
    assert "label set mismatch: the evaluation data has label(s) ['maybe']" in err
    code, _, err = _cli(capsys, "evaluate", "--output-dir", run)
    assert code == 2 and "evaluate needs `--test`" in err
