"""recipes.classifier: model, learning, resume, command line and bad input."""

import json

import keras
import numpy as np
import pytest

from kerasrnn.layers import MaskedPooling1D
from recipes import classifier, common

TINY = {
    "embedding_dim": 16,
    "units": 8,
    "batch_size": 16,
    "epochs": 2,
    "verbose": 0,
    "valid_fraction": 0.0,
    "bucket_boundaries": [8, 16],
}


def _config(tmp_path, **overrides):
    return common.load_config(
        classifier.DEFAULTS, overrides={**TINY, "output_dir": str(tmp_path / "run"), **overrides}
    )


def _polarity(shared_data, n):
    from kerasrnn.data import load_class_files

    folder = shared_data("sentence_polarity")
    texts, labels = load_class_files(
        [folder / "rt-polarity.pos", folder / "rt-polarity.neg"], encoding="cp1252"
    )
    order = np.random.default_rng(0).permutation(len(texts))[:n]
    return [texts[i] for i in order], [labels[i] for i in order]


def test_masked_pooling_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], bool)
    mean = MaskedPooling1D("mean")(x, mask=mask).numpy()
    high = MaskedPooling1D("max")(x, mask=mask).numpy()
    np.testing.assert_allclose(mean[0], x[0, :3].mean(0), rtol=1e-5)
    np.testing.assert_allclose(high[1], x[1].max(0), rtol=1e-5)
    np.testing.assert_array_equal(mean[2], 0)
    np.testing.assert_array_equal(high[2], 0)
    layer = MaskedPooling1D.from_config(MaskedPooling1D("max").get_config())
    assert layer.mode == "max"
    with pytest.raises(ValueError, match="`mode`"):
        MaskedPooling1D("median")


def test_padding_never_changes_the_prediction(tmp_path):
    # ("last" is covered by test_common; "mean" by the pooling test.)
    config = _config(tmp_path, pooling="max", num_layers=2, cell="gru")
    model = classifier.build_model(config, vocab_size=20, num_classes=3)
    ids = np.array([[5, 6, 7, 8, 0, 0, 0]], "int32")
    full = model.predict(ids, verbose=0)
    np.testing.assert_allclose(model.predict(ids[:, :4], verbose=0), full, atol=1e-6)
    assert full.shape == (1, 3) and np.isclose(full.sum(), 1, atol=1e-5)


def test_naive_bayes_expert_matches_counting():
    sentences = [[4, 5, 6], [4, 5], [6, 7, 4], [7, 7]]
    classes = [0, 0, 1, 1]
    expert = classifier.NaiveBayesExpert(vocab_size=9, num_classes=2, order=2, scale=0.5)
    expert.estimate(sentences, classes)

    # Reference: n-grams as tuples, each counted once per sentence, add-1 smoothing.
    grams = lambda s: set(s) | set(zip(s, s[1:]))  # noqa: E731
    counts = [{}, {}]
    for s, c in zip(sentences, classes):
        for g in grams(s):
            counts[c][g] = counts[c].get(g, 0) + 1
    seen = set(counts[0]) | set(counts[1])
    totals = [sum(counts[c].get(g, 0) + 1 for g in seen) for c in (0, 1)]
    log_p = lambda g, c: np.log((counts[c].get(g, 0) + 1) / totals[c])  # noqa: E731
    query = [4, 5, 8, 6]  # 8 and its bigrams were never seen: they score 0
    scores = np.array([sum(log_p(g, c) for g in grams(query) if g in seen) for c in (0, 1)])

    ids = np.array([query + [0, 0], [0] * 6], "int32")
    np.testing.assert_allclose(expert.scores(ids).numpy(), [scores, [0, 0]], rtol=1e-5)
    model_p = np.array([[0.3, 0.7], [0.6, 0.4]], "float32")
    combined = model_p[0] * np.exp(0.5 * scores)
    np.testing.assert_allclose(
        expert([ids, model_p]).numpy(), [combined / combined.sum(), model_p[1]], rtol=1e-5
    )
    with pytest.raises(ValueError, match="`order`"):
        classifier.NaiveBayesExpert(9, 2, order=3)

    # Bigram codes a * vocab_size + b past int32 (vocab > 46,340 words) still find their row.
    big = classifier.NaiveBayesExpert(vocab_size=60000, num_classes=2, buckets=7)
    big.estimate([[59998, 59999], [3]], [0, 1])
    table = big.log_likelihood.numpy()
    expected = table[big.ngram_rows([59998, 59999])].sum(axis=0)
    np.testing.assert_allclose(
        big.scores(np.array([[59998, 59999]])).numpy()[0], expected, rtol=1e-6
    )


def test_naive_bayes_option_multiplies_the_expert_in(tmp_path):
    texts = ["good film", "bad film", "great fun", "dull plot"] * 4
    labels = ["pos", "neg", "pos", "neg"] * 4
    splits = {"train": (texts, labels), "valid": (["fun film"], ["pos"]), "test": None}
    config = _config(
        tmp_path, naive_bayes=2, naive_bayes_buckets=101, epochs=1, naive_bayes_counts_valid=True
    )
    classifier.train(config, splits)
    trained = classifier.Classifier.from_run(config)  # reloaded from best.keras
    model, expert = trained.model, trained.model.get_layer("naive_bayes")
    fun_film = trained.vocabulary.encode(["fun", "film"])
    bigram = expert.ngram_rows(fun_film)[-1]  # only in the validation sentence
    assert np.abs(expert.log_likelihood.numpy()[bigram]).min() > 0
    parts = keras.Model(
        model.inputs, [model.get_layer("classes").output, expert.scores(model.inputs[0])]
    )
    ids = np.array([[5, 6, 0], [7, 8, 9]], "int32")
    rnn, scores = parts.predict(ids, verbose=0)
    assert np.abs(scores).max() > 0  # the counted table survived saving
    np.testing.assert_allclose(
        model.predict(ids, verbose=0),
        keras.ops.softmax(np.log(rnn) + expert.scale * scores).numpy(),
        rtol=1e-5,
    )
    for bad, match in (
        ({"naive_bayes": 3}, "`naive_bayes`"),
        ({"naive_bayes_scale": -1}, "`naive_bayes_scale`"),
    ):
        with pytest.raises(common.ConfigError, match=match):
            classifier.train(_config(tmp_path, **bad), splits)


def test_learns_a_slice_of_sentence_polarity(tmp_path, shared_data):
    texts, labels = _polarity(shared_data, 200)
    config = _config(
        tmp_path, epochs=5, units=16, embedding_dropout=0.0, dropout=0.0, learning_rate=0.01
    )
    results = classifier.train(
        config, {"train": (texts, labels), "valid": None, "test": (texts, labels)}
    )
    # Fitting the training sentences shows that gradients reach the embeddings and RNN.
    assert results["test"]["accuracy"] > 0.9
    assert results["history"]["loss"][-1] < results["history"]["loss"][0]
    predictions = classifier.Classifier.from_run(config).predict(["", "zzzq unknownword", texts[0]])
    assert [p["label"] in ("neg", "pos") for p in predictions] == [True] * 3
    assert all(abs(sum(p["probabilities"].values()) - 1) < 1e-5 for p in predictions)
    assert predictions[2]["label"] == labels[0]


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            raise KeyboardInterrupt("simulated kill after the first epoch")


def test_trains_on_a_tensorflow_datasets_dataset(tmp_path):
    import tensorflow_datasets as tfds

    config = _config(
        tmp_path,
        train="tfds:imdb_reviews",
        test="tfds:imdb_reviews:test",
        tfds_data_dir=str(tmp_path / "tfds"),
        epochs=1,
    )
    with tfds.testing.mock_data(num_examples=32):
        results = classifier.train(config)
    assert results["labels"] == ["neg", "pos"]
    assert results["test"]["examples"] == 32


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
    assert code == 2 and "config.json" in err
    with pytest.raises(SystemExit):
        classifier.main(["train", "--no-such-flag", "1"])


def test_cli_train_predict_evaluate(tmp_path, capsys):
    data = tmp_path / "d.tsv"
    data.write_text(
        "".join(f"{label}\t{t}\n" for t, label in [("good film", "pos"), ("bad film", "neg")] * 10)
    )
    run = ["--output-dir", tmp_path / "run"]
    config = tmp_path / "c.json"
    config.write_text(json.dumps({**TINY, "pooling": "mean", "cell": "simple"}))
    code, out, _ = _cli(capsys, "train", "--config", config, "--train", data, *run)
    assert code == 0 and json.loads(out)["train_examples"] == 20
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["labels"] == ["neg", "pos"]
    code, out, _ = _cli(capsys, "predict", *run, "good film", "")
    assert code == 0 and [p["text"] for p in json.loads(out)] == ["good film", ""]
    code, out, _ = _cli(capsys, "evaluate", *run, "--test", data)
    assert code == 0 and json.loads(out)["examples"] == 20
