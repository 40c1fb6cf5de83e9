"""recipes.pair_classifier: SICK loading, the pair features, Tai et al.'s target, both
heads end to end from the command line (train / evaluate / predict / export), bad input."""

import gzip
import json

import numpy as np
import pytest

from kerasrnn.layers import ExpectedScore, PairFeatures
from recipes import pair_classifier as pc

TINY = [
    "--embedding-dim",
    "16",
    "--units",
    "16",
    "--hidden-units",
    "16",
    "--batch-size",
    "32",
    "--verbose",
    "0",
    "--dropout",
    "0",
    "--embedding-dropout",
    "0",
]
HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def sick_slice(shared_data, tmp_path, name, first, last):
    """Lines first..last of a SICK file, written as a small file with the header."""
    with gzip.open(shared_data("sick", "SICK_train.txt.gz"), "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()[1:]
    path = tmp_path / name
    path.write_text(HEADER + "\n".join(lines[first:last]) + "\n", encoding="utf-8")
    return path


def test_load_pairs_reads_the_sick_release(shared_data):
    a, b, scores, labels = pc.load_pairs(shared_data("sick", "SICK_trial.txt.gz"))
    assert len(a) == len(b) == len(scores) == len(labels) == 500
    assert set(labels) == set(pc.LABELS) and 1.0 <= min(scores) and max(scores) <= 5.0
    assert a[0].startswith("The young boys are playing outdoors")


def test_score_distribution_is_tai_et_al_target():
    p = pc.score_distribution([1.0, 3.2, 4.5, 5.0])
    expected = np.array(
        [[1, 0, 0, 0, 0], [0, 0, 0.8, 0.2, 0], [0, 0, 0, 0.5, 0.5], [0, 0, 0, 0, 1]], "float32"
    )
    np.testing.assert_allclose(p, expected, atol=1e-6)
    np.testing.assert_allclose(p @ np.arange(1, 6), [1.0, 3.2, 4.5, 5.0], rtol=1e-6)
    np.testing.assert_allclose(ExpectedScore()(p)[:, 0], [1.0, 3.2, 4.5, 5.0], rtol=1e-6)


def test_pair_features_are_infersent_features():
    u = np.array([[1.0, -2.0]], "float32")
    v = np.array([[3.0, 0.5]], "float32")
    np.testing.assert_allclose(PairFeatures()([u, v]), [[1, -2, 3, 0.5, 2, 2.5, 3, -1]])


def test_relatedness_scores_match_numpy():
    gold = np.array([1.0, 2.0, 3.0, 4.0, 4.5])
    pred = np.array([1.5, 1.0, 3.5, 3.9, 5.0])
    scores = pc.relatedness_scores(gold, pred)
    np.testing.assert_allclose(scores["pearson"], np.corrcoef(gold, pred)[0, 1])
    ranks = lambda x: np.argsort(np.argsort(x)).astype(float)  # noqa: E731  (no ties)
    np.testing.assert_allclose(scores["spearman"], np.corrcoef(ranks(gold), ranks(pred))[0, 1])
    np.testing.assert_allclose(scores["mse"], np.mean((gold - pred) ** 2))


@pytest.mark.parametrize(
    "task,extra",
    [
        ("entailment", []),
        ("relatedness", ["--relatedness-target", "distribution", "--pooling", "mean"]),
    ],
)
def test_command_line_end_to_end(task, extra, tmp_path, capsys, shared_data):
    import tensorflow as tf

    train = sick_slice(shared_data, tmp_path, "train.txt", 0, 300)
    test = sick_slice(shared_data, tmp_path, "test.txt", 300, 400)
    run = ["--output-dir", str(tmp_path / "run")]
    code = pc.main(
        [
            "train",
            "--train",
            str(train),
            "--valid",
            str(train),
            "--test",
            str(test),
            "--task",
            task,
            "--epochs",
            "6",
            "--learning-rate",
            "0.01",
            *extra,
            *TINY,
            *run,
        ]
    )
    assert code == 0
    results = json.loads(capsys.readouterr().out)
    if task == "entailment":
        # what it has seen it fits beyond the majority class
        assert results["valid"]["accuracy"] > results["valid"]["baselines"]["majority_accuracy"]
    else:
        assert results["valid"]["pearson"] > 0.5
        assert results["valid"]["mse"] < results["valid"]["baselines"]["mean_score_mse"]

    code = pc.main(["evaluate", *run, "--test", str(test)])
    assert code == 0
    evaluation = json.loads(capsys.readouterr().out)
    key = "accuracy" if task == "entailment" else "pearson"
    assert evaluation[key] == pytest.approx(results["test"][key], abs=1e-6)

    code = pc.main(
        ["predict", *run, "A man is playing a guitar", "A man plays a guitar", "", "A dog runs"]
    )
    assert code == 0
    predicted = json.loads(capsys.readouterr().out)
    assert len(predicted) == 2
    if task == "entailment":
        assert predicted[0]["label"] in pc.LABELS
    else:
        assert all(1.0 <= p["score"] <= 5.0 for p in predicted)

    code = pc.main(["export", *run])
    assert code == 0
    path = json.loads(capsys.readouterr().out)["saved_model"]
    served = tf.saved_model.load(path).signatures["serving_default"](
        sentence_a=tf.constant(["A man is playing a guitar"]),
        sentence_b=tf.constant(["A man plays a guitar"]),
    )
    if task == "entailment":
        assert served["label"].numpy()[0].decode() == predicted[0]["label"]
    else:
        assert float(served["score"].numpy()[0]) == pytest.approx(predicted[0]["score"], abs=1e-5)


def test_bad_input_errors(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text(HEADER + "1\tA dog\tA cat\tfive\tNEUTRAL\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), "--output-dir", str(tmp_path / "r")]) == 2
    assert "bad.txt, line 2: relatedness_score must be a number, got 'five'" in (
        capsys.readouterr().err
    )
    bad.write_text(HEADER + "1\tA dog\tA cat\t3.0\tMAYBE\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), "--output-dir", str(tmp_path / "r")]) == 2
    assert "entailment_judgment must be one of" in capsys.readouterr().err
    bad.write_text("id\ta\tb\n1\tx\ty\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), "--output-dir", str(tmp_path / "r")]) == 2
    assert "the header lacks column(s)" in capsys.readouterr().err
    good = tmp_path / "good.txt"
    good.write_text(HEADER + "1\tA dog\tA cat\t3.0\tNEUTRAL\n", encoding="utf-8")
    # Options with fixed values: a config file's value is checked before any data is read
    # (a flag's at parse time, by argparse, naming the allowed values).
    config = tmp_path / "c.yaml"
    config.write_text("task: similarity\n")
    assert pc.main(["train", "--config", str(config), "--train", str(good)]) == 2
    assert "`task` must be one of" in capsys.readouterr().err
    config.write_text("pooling: sum\n")
    assert pc.main(["train", "--config", str(config), "--train", str(good)]) == 2
    assert "`pooling` must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        pc.main(["train", "--train", str(good), "--relatedness-target", "ranks"])
    assert exit_.value.code == 2
    assert "invalid choice 'ranks' (choose from score, distribution)" in capsys.readouterr().err
