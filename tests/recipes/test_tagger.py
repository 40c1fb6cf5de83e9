"""recipes.tagger with a softmax output: the command line on column files (train with
validation, predict and its n best, evaluate on CoNLL-U too) and bad input."""

import json

import numpy as np
import pytest

from recipes import common, tagger

TINY = ["--embedding-dim", "8", "--units", "8", "--char-dim", "4", "--char-units", "4"]
TINY += ["--batch-size", "16", "--verbose", "0", "--bucket-boundaries", "[]", "--epochs", "1"]
ROWS = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n\n"
TAGS = {"B-ORG", "B-MISC", "B-PER", "I-PER", "O"}


@pytest.fixture(scope="module")
def softmax_run(tmp_path_factory):
    """A softmax tagger trained one epoch from the command line on a BIO column file
    with validation: (its run folder, its data file, train's printed results)."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("tagger")
    data = folder / "ner.txt"
    data.write_text(ROWS * 6)
    run = folder / "run"
    stdout = io.StringIO()
    args = ["train", "--train", str(data), "--valid", str(data), "--output-dir", str(run)]
    with contextlib.redirect_stdout(stdout):
        assert tagger.main([*args, *TINY]) == 0
    return run, data, json.loads(stdout.getvalue())


def _run(capsys, *argv):
    code = tagger.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.large
def test_train_reports_tag_and_entity_scores_of_the_validation_file(softmax_run):
    run, _, results = softmax_run
    assert set(results["tags"]) == TAGS and results["tag_schemes"] == ["BIO", "BIO"]
    assert results["train_sentences"] == 12 and results["valid"]["tokens"] == 36
    assert set(results["valid"]["entities"]) >= {"precision", "recall", "f1"}
    assert set(results["valid"]["per_tag"]) == TAGS
    assert json.loads((run / "results.json").read_text())["valid"] == results["valid"]


def test_predict_tags_each_whitespace_token_unknown_words_too(softmax_run, capsys):
    run = ["--output-dir", softmax_run[0]]
    code, out, _ = _run(capsys, "predict", *run, "Peter rejects EU", "", "The Qzxwvuts .")
    rows = json.loads(out)
    assert code == 0 and [r["tokens"] for r in rows] == [
        ["Peter", "rejects", "EU"],
        [],
        ["The", "Qzxwvuts", "."],
    ]
    assert [len(r["tags"]) for r in rows] == [3, 0, 3]
    for row in rows:
        assert set(row["tags"]) <= TAGS and all(0 < p <= 1 for p in row["probabilities"])
        assert "entities" in row  # entity tags: the spans beside the tags
    code, out, _ = _run(capsys, "predict", *run)
    assert code == 0 and json.loads(out) == []  # no inputs, no rows


def test_n_best_of_a_softmax_tagger(softmax_run, capsys):
    # its tags are independent: the best path's probability is the product of the
    # per-token ones, and the next paths are less probable
    run = ["--output-dir", softmax_run[0]]
    code, out, _ = _run(capsys, "predict", *run, "Peter rejects EU")
    best = json.loads(out)[0]
    code, out, _ = _run(capsys, "predict", *run, "--n-best", "3", "Peter rejects EU")
    found = json.loads(out)[0]
    assert code == 0 and found["tokens"] == ["Peter", "rejects", "EU"]
    paths = found["n_best"]
    assert len(paths) == 3 and paths[0]["tags"] == best["tags"]
    assert len({tuple(p["tags"]) for p in paths}) == 3
    np.testing.assert_allclose(paths[0]["probability"], np.prod(best["probabilities"]), rtol=1e-4)
    probabilities = [p["probability"] for p in paths]
    assert probabilities == sorted(probabilities, reverse=True)
    np.testing.assert_allclose([p["score"] for p in paths], np.log(probabilities), rtol=1e-4)
    code, _, err = _run(capsys, "predict", *run, "--n-best", "0", "Peter")
    assert code == 2 and "--n-best must be 1 or more" in err and err.count("\n") == 1


def test_evaluate_reads_column_and_conllu_files(softmax_run, tmp_path, capsys):
    run, data, results = softmax_run
    code, out, _ = _run(capsys, "evaluate", "--output-dir", run, "--test", data)
    assert code == 0 and json.loads(out) == results["valid"]  # the same sentences
    # CoNLL-U (by its name): the tags of its upos column
    conllu = tmp_path / "test.conllu"
    conllu.write_text(
        "1\tPeter\t_\tB-PER\t_\t_\t_\t_\t_\t_\n2\tBlackburn\t_\tI-PER\t_\t_\t_\t_\t_\t_\n\n"
    )
    code, out, _ = _run(capsys, "evaluate", "--output-dir", run, "--test", conllu)
    assert code == 0 and json.loads(out)["tokens"] == 2 and json.loads(out)["sentences"] == 1


def test_bad_input_is_one_line(softmax_run, tmp_path, capsys):
    run = ["--output-dir", softmax_run[0]]
    other = tmp_path / "other.txt"
    other.write_text("Paris B-LOC\n\n")
    code, _, err = _run(capsys, "evaluate", *run, "--test", other)
    assert code == 2 and "label set mismatch" in err and "['B-LOC']" in err
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tHi\thi\tINTJ\n")
    # a new folder: `run` holds a finished run, which train refuses before reading data
    code, _, err = _run(capsys, "train", "--train", bad, "--output-dir", tmp_path / "bad")
    assert code == 2 and "bad.conllu, line 1: a CoNLL-U token line" in err
    assert err.count("\n") == 1


def test_unknown_format_is_a_config_error(tmp_path):
    with pytest.raises(common.ConfigError, match="`format` must be one of"):
        common.load_config(tagger.DEFAULTS, overrides={"format": "xml"})
