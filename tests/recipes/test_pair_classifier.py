"""recipes.pair_classifier: SICK files, the entailment head on the shared run (evaluate,
predict in pairs), the relatedness head with Tai et al.'s target end to end from the
command line (train / evaluate / predict / export, the baselines), bad input. (The pair
features, the target distribution and the correlations are the library's:
tests/models/test_pair_task.py, tests/models/test_from_recipes.py,
tests/metrics/test_scores_from_recipes.py.)"""

import shutil

import numpy as np
import pytest

from recipes import common
from recipes import pair_classifier as pc
from tests.conftest import PAIRS, main_json

TINY = ["--embedding-dim", "8", "--units", "8", "--hidden-units", "8", "--batch-size", "8"]
TINY += ["--verbose", "0", "--dropout", "0", "--embedding-dropout", "0", "--epochs", "1"]
HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def _sick(path, pairs):
    rows = [f"{i}\t{a}\t{b}\t{score}\t{label}\n" for i, (a, b, score, label) in enumerate(pairs)]
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def test_reads_the_sick_release(shared_data):
    config = common.load_config(pc.DEFAULTS)
    a, b, scores, labels = pc.RECIPE.load_examples(
        config, shared_data("sick", "SICK_trial.txt.gz"), "test"
    )
    assert len(a) == len(b) == len(scores) == len(labels) == 500
    assert set(labels) == set(pc.LABELS) and 1.0 <= min(scores) and max(scores) <= 5.0
    assert a[0].startswith("The young boys are playing outdoors")


@pytest.mark.large
def test_entailment_on_the_shared_run(tiny_pair_classifier, tmp_path, capsys):
    run = shutil.copytree(tiny_pair_classifier, tmp_path / "run")  # evaluate writes into it
    flags = ["--output-dir", str(run)]
    test = _sick(tmp_path / "test.txt", PAIRS[:6])
    scores = main_json(pc, "evaluate", *flags, "--test", str(test))
    rows = main_json(pc, "predict", *flags, *(s for a, b, _, _ in PAIRS[:6] for s in (a, b)))
    assert [(r["sentence_a"], r["sentence_b"]) for r in rows] == [p[:2] for p in PAIRS[:6]]
    labels = [p[3] for p in PAIRS[:6]]
    assert all(r["label"] in pc.LABELS for r in rows)
    assert all(sum(r["probabilities"].values()) == pytest.approx(1, abs=1e-5) for r in rows)
    assert scores["pairs"] == 6 and set(scores["per_class"]) == set(pc.LABELS)
    assert scores["accuracy"] == pytest.approx(
        np.mean([r["label"] == g for r, g in zip(rows, labels)])
    )
    # one pair per line of --input, the sentences tab-separated
    listed = tmp_path / "pairs.txt"
    listed.write_text(f"{PAIRS[0][0]}\t{PAIRS[0][1]}\n\n")
    assert main_json(pc, "predict", *flags, "--input", str(listed)) == rows[:1]
    assert main_json(pc, "predict", *flags) == []
    assert pc.main(["predict", *flags, "A man", "A dog", "A cat"]) == 2
    err = capsys.readouterr().err
    assert "predict takes sentences in pairs" in err and "got 3, an odd number" in err
    listed.write_text("one sentence alone\n")
    assert pc.main(["predict", *flags, "--input", str(listed)]) == 2
    assert "pairs.txt, line 1: expected two tab-separated sentences" in capsys.readouterr().err


@pytest.mark.large
def test_relatedness_with_tais_target_end_to_end(tmp_path):
    import tensorflow as tf

    train = _sick(tmp_path / "train.txt", PAIRS)
    test = _sick(tmp_path / "test.txt", PAIRS[:6])
    run = ["--output-dir", str(tmp_path / "run")]
    results = main_json(
        pc,
        "train",
        "--train",
        str(train),
        "--valid",
        str(train),
        "--test",
        str(test),
        "--task",
        "relatedness",
        "--relatedness-target",
        "distribution",
        "--pooling",
        "mean",
        *TINY,
        *run,
    )
    assert results["task"] == "relatedness" and results["train_pairs"] == len(PAIRS)
    assert "score_mse" in results["history"]  # the curves' metric beside the KL loss
    for split, pairs in (("valid", PAIRS), ("test", PAIRS[:6])):
        found = results[split]
        assert found["pairs"] == len(pairs) and {"pearson", "spearman", "mse"} <= set(found)
        scores = np.array([p[2] for p in pairs])
        train_mean = np.mean([p[2] for p in PAIRS])
        baselines = found["baselines"]
        assert baselines["mean_score_mse"] == pytest.approx(np.mean((scores - train_mean) ** 2))
        assert set(baselines["word_overlap"]) == {"pearson", "spearman"}

    evaluation = main_json(pc, "evaluate", *run, "--test", str(test))
    assert evaluation == {k: v for k, v in results["test"].items() if k != "baselines"}

    rows = main_json(pc, "predict", *run, *(s for a, b, _, _ in PAIRS[:6] for s in (a, b)))
    assert all(1.0 <= r["score"] <= 5.0 for r in rows) and set(rows[0]) == {
        "sentence_a",
        "sentence_b",
        "score",
    }
    mse = np.mean([(r["score"] - p[2]) ** 2 for r, p in zip(rows, PAIRS[:6])])
    assert evaluation["mse"] == pytest.approx(mse, rel=1e-5)

    path = main_json(pc, "export", *run, "--export-dir", str(tmp_path / "sm"))["saved_model"]
    served = tf.saved_model.load(path).signatures["serving_default"](
        sentence_a=tf.constant([p[0] for p in PAIRS[:6]]),
        sentence_b=tf.constant([p[1] for p in PAIRS[:6]]),
    )
    np.testing.assert_allclose(served["score"].numpy(), [r["score"] for r in rows], atol=1e-5)


def test_bad_input_errors(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    out = ["--output-dir", str(tmp_path / "r")]
    bad.write_text(HEADER + "1\tA dog\tA cat\tfive\tNEUTRAL\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), *out]) == 2
    assert "bad.txt, line 2: relatedness_score must be a number, got 'five'" in (
        capsys.readouterr().err
    )
    bad.write_text(HEADER + "1\tA dog\tA cat\t3.0\tMAYBE\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), *out]) == 2
    assert "entailment_judgment must be one of" in capsys.readouterr().err
    bad.write_text("id\ta\tb\n1\tx\ty\n", encoding="utf-8")
    assert pc.main(["train", "--train", str(bad), *out]) == 2
    assert "the header lacks column(s)" in capsys.readouterr().err
    good = tmp_path / "good.txt"
    good.write_text(HEADER + "1\tA dog\tA cat\t3.0\tNEUTRAL\n", encoding="utf-8")
    # Options with fixed values: a config file's value is checked before any data is read
    # (a flag's at parse time, by argparse, naming the allowed values).
    config = tmp_path / "c.yaml"
    config.write_text("task: similarity\n")
    assert pc.main(["train", "--config", str(config), "--train", str(good), *out]) == 2
    assert "`task` must be one of" in capsys.readouterr().err
    config.write_text("pooling: sum\n")
    assert pc.main(["train", "--config", str(config), "--train", str(good), *out]) == 2
    assert "`pooling` must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        pc.main(["train", "--train", str(good), "--relatedness-target", "ranks"])
    assert exit_.value.code == 2
    assert "invalid choice 'ranks' (choose from score, distribution)" in capsys.readouterr().err
    assert not (tmp_path / "r" / "config.json").exists()
