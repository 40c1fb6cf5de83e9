"""recipes.tagger for named entities, on the shared run (tests/conftest.py's
`tiny_tagger`: BIO data trained in BIOES with a constrained CRF): predictions, scores
and n best in the file's BIO, entity spans from predict and the SavedModel, the tag
scheme options' choices and their bad-input lines."""

import json
import os
import shutil

import numpy as np
import pytest

from kerasrnn.layers import check_tags, convert_tags, crf_log_likelihood
from kerasrnn.metrics import entity_spans
from recipes import common, tagger
from tests.conftest import NER_SENTENCES, main_json

SENTENCES = [
    ["Peter", "Blackburn", "flew", "to", "Brussels", "."],
    ["EU", "rejects", "German", "call", "."],
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Peter", "rejects", "the", "call", "to", "Brussels"],
]
BIO_NAMES = {"O"} | {f"{p}-{k}" for p in "BI" for k in ("PER", "ORG", "LOC", "MISC")}


@pytest.fixture(scope="module")
def trained(tiny_tagger):
    """The shared run's task and its predict rows of `SENTENCES`."""
    from kerasrnn.models import SequenceTagger

    rows = main_json(
        tagger, "predict", "--output-dir", str(tiny_tagger), *(" ".join(s) for s in SENTENCES)
    )
    return SequenceTagger.from_preset(tiny_tagger), rows


def test_trained_in_bioes_reported_in_bio(tiny_tagger, trained):
    task, rows = trained
    results = json.loads((tiny_tagger / "results.json").read_text())
    assert results["tag_schemes"] == ["BIO", "BIOES"]
    assert any(t.startswith("S-") for t in results["tags"]) and results["tags"] == task.tags
    assert task.scheme == "BIOES" and task.get_layer("crf").allowed_transitions is not None
    assert set(results["valid"]["per_tag"]) <= BIO_NAMES  # scored in the file's scheme
    predicted = [r["tags"] for r in rows]
    check_tags(predicted, "BIO", "predictions")  # constrained: well-formed, in BIO
    for sentence, row in zip(SENTENCES, rows):
        assert row["tokens"] == sentence and set(row["tags"]) <= BIO_NAMES
        assert [(e["start"], e["end"], e["type"]) for e in row["entities"]] == entity_spans(
            row["tags"]
        )
        assert [e["text"] for e in row["entities"]] == [
            " ".join(sentence[e["start"] : e["end"]]) for e in row["entities"]
        ]


def test_entity_scores_equal_seqevals(tiny_tagger, tmp_path, trained):
    seqeval = pytest.importorskip("seqeval.metrics")
    _, rows = trained
    run = shutil.copytree(tiny_tagger, tmp_path / "run")  # evaluate writes into it
    sentences, gold = (list(x) for x in zip(*NER_SENTENCES[:3]))
    data = tmp_path / "test.txt"
    data.write_text(
        "".join("".join(f"{w} {t}\n" for w, t in zip(s, g)) + "\n" for s, g in zip(sentences, gold))
    )
    scores = main_json(tagger, "evaluate", "--output-dir", str(run), "--test", str(data))
    assert [r["tokens"] for r in rows[:3]] == sentences  # the same 3 sentences
    predicted = [r["tags"] for r in rows[:3]]
    np.testing.assert_allclose(scores["entities"]["f1"], seqeval.f1_score(gold, predicted))
    np.testing.assert_allclose(
        scores["entities"]["precision"], seqeval.precision_score(gold, predicted)
    )
    assert set(scores["entities"]["per_type"]) <= {"PER", "ORG", "LOC", "MISC"}


def test_n_best_paths_are_bio_distinct_and_their_probabilities_the_crfs(tiny_tagger, trained):
    """The n best: well-formed BIO, distinct, best first, the first predict's path, each
    probability exp(log-likelihood) of its (BIOES) path by the forward algorithm."""
    import tensorflow as tf

    task, rows = trained
    printed = main_json(
        tagger,
        "predict",
        "--output-dir",
        str(tiny_tagger),
        "--n-best",
        "4",
        *(" ".join(s) for s in SENTENCES),
    )
    assert [p["tokens"] for p in printed] == SENTENCES
    inputs = task.preprocessor.encode(SENTENCES)
    potentials = task(inputs, training=False)
    mask = tf.not_equal(inputs["word_ids"], 0)
    width = mask.shape[1]
    ids, probabilities = [], []
    for row, found in zip(rows, printed):
        found = found["n_best"]
        assert found[0]["tags"] == row["tags"] and found[0]["entities"] == row["entities"]
        check_tags([c["tags"] for c in found], "BIO", "n-best")
        assert len({tuple(c["tags"]) for c in found}) == len(found) == 4
        assert [c["score"] for c in found] == sorted((c["score"] for c in found), reverse=True)
        for candidate in found:
            path = [task.tags.index(t) for t in convert_tags(candidate["tags"], "BIOES")]
            ids.append(path + [0] * (width - len(path)))
            probabilities.append(candidate["probability"])
    log_p = crf_log_likelihood(
        tf.repeat(potentials, 4, axis=0), np.array(ids), tf.repeat(mask, 4, axis=0)
    )
    np.testing.assert_allclose(np.exp(log_p), probabilities, rtol=1e-3)


@pytest.mark.large
def test_the_saved_model_tags_and_finds_the_entities_as_predict(tiny_tagger, tmp_path, trained):
    import tensorflow as tf

    _, rows = trained
    path = main_json(
        tagger, "export", "--output-dir", str(tiny_tagger), "--export-dir", str(tmp_path / "sm")
    )["saved_model"]
    assert path == str(tmp_path / "sm")
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["tag_text"](text=tf.constant([" ".join(s) for s in SENTENCES]))
    for i, row in enumerate(rows):
        n = len(row["tags"])
        assert [t.decode() for t in out["tags"].numpy()[i][:n]] == row["tags"]
        np.testing.assert_allclose(
            out["probability"].numpy()[i][:n], row["probabilities"], rtol=1e-5
        )
        starts = [int(s) for s in out["entity_start"].numpy()[i] if s >= 0]
        assert starts == [e["start"] for e in row["entities"]]
        texts = [t.decode() for t in out["entity_text"].numpy()[i][: len(starts)]]
        assert texts == [e["text"] for e in row["entities"]]
    assert not os.path.exists(tiny_tagger / "saved_model")  # the shared run is unchanged


def _schemes(tmp_path, tags, **options):
    """What the recipe makes of training tags: the results' schemes, the preprocessor's
    reporting and the CRF's constraint (prepared, not trained)."""
    config = common.load_config(
        tagger.DEFAULTS,
        overrides={"output_dir": str(tmp_path), "char_dim": 0, "crf": True, **options},
    )
    sentences = [[f"w{i}" for i in range(len(s))] for s in tags]
    prepared = tagger.RECIPE.prepare(config, {"train": (sentences, tags), "valid": None})
    return (
        prepared.info["tag_schemes"],
        prepared.model["preprocessor"].bio_output,
        prepared.model["scheme"],
    )


def test_the_tag_scheme_options_choose_training_reporting_and_constraints(tmp_path):
    bio = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    bioes = [convert_tags(s, "BIOES") for s in bio]
    iob1 = [convert_tags(s, "IOB1") for s in bio]
    assert _schemes(tmp_path / "a", bio) == (["BIO", "BIO"], False, "BIO")
    assert _schemes(tmp_path / "b", bio, tag_scheme="bioes") == (["BIO", "BIOES"], True, "BIOES")
    # a BIOES file stays BIOES; an IOB1 one trained in BIOES is reported in BIO
    assert _schemes(tmp_path / "c", bioes, tag_scheme="bioes")[:2] == (["BIOES", "BIOES"], False)
    assert _schemes(tmp_path / "d", iob1, tag_scheme="bioes")[:2] == (["IOB1", "BIOES"], True)
    assert _schemes(tmp_path / "e", bio, crf_constraints="false")[2] is None
    assert _schemes(tmp_path / "f", [["NOUN", "VERB"]]) == ([None, None], False, None)


def test_bad_scheme_input_is_one_line(tmp_path, capsys):
    iob1 = tmp_path / "iob1.txt"
    # IOB1: I- opens an entity (B- only starts one right after another of its type)
    rows = [["I-PER", "I-PER", "O"], ["I-ORG", "O", "I-LOC"]]
    iob1.write_text("".join("".join(f"w{i} {t}\n" for i, t in enumerate(s)) + "\n" for s in rows))
    run = ["--output-dir", str(tmp_path / "run"), "--epochs", "1", "--format", "columns"]
    code = tagger.main(["train", "--train", str(iob1), "--tag-scheme", "bio", *run])
    err = capsys.readouterr().err
    assert code == 2 and "--tag-scheme bio: the training tags: sentence 1, token 1" in err
    assert "declare the data IOB1" in err
    assert err.count("\n") == 1
    pos = tmp_path / "pos.txt"
    pos.write_text("The DET\ncat NOUN\n\n" * 4)
    code = tagger.main(["train", "--train", str(pos), "--crf", "--crf-constraints", "true", *run])
    err = capsys.readouterr().err
    assert code == 2 and "--crf-constraints true needs entity tags" in err and err.count("\n") == 1
    assert not (tmp_path / "run" / "config.json").exists()  # refused before training
