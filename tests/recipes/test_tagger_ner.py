"""recipes.tagger for named entities on a CoNLL-2003 slice: BIOES training with CRF
constraints, predictions and scores in the file's BIO, entity F1 equal to seqeval's,
entity spans from predict and the SavedModel, and the bad-input lines."""

import gzip
import json

import numpy as np
import pytest

from kerasrnn.layers import check_tags, convert_tags, crf_log_likelihood
from kerasrnn.metrics import entity_spans
from recipes import tagger

TINY = [
    "--embedding-dim",
    "16",
    "--units",
    "16",
    "--char-dim",
    "8",
    "--char-units",
    "8",
    "--batch-size",
    "16",
    "--verbose",
    "0",
    "--bucket-boundaries",
    "[10, 20]",
    "--format",
    "columns",
]


def conll_slice(path, source, sentences, convert=None):
    """The first `sentences` sentences of a CoNLL-2003 file (tags optionally rewritten)."""
    blocks, block = [], []
    with gzip.open(source, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("-DOCSTART-"):
                continue
            if line.strip():
                block.append(line.split())
            elif block:
                blocks.append(block)
                block = []
            if len(blocks) == sentences:
                break
    with open(path, "w", encoding="utf-8") as f:
        for block in blocks:
            tags = [row[-1] for row in block]
            tags = convert(tags) if convert else tags
            f.write("".join(f"{row[0]} {tag}\n" for row, tag in zip(block, tags)) + "\n")
    return path


def test_bioes_constrained_crf_end_to_end(tmp_path, capsys, shared_data):
    seqeval = pytest.importorskip("seqeval.metrics")
    import tensorflow as tf

    train = conll_slice(tmp_path / "train.txt", shared_data("conll2003", "train.txt.gz"), 150)
    test = conll_slice(tmp_path / "test.txt", shared_data("conll2003", "valid.txt.gz"), 60)
    run = ["--output-dir", str(tmp_path / "run")]
    code = tagger.main(
        [
            "train",
            "--train",
            str(train),
            "--valid",
            str(train),
            "--test",
            str(test),
            "--crf",
            "true",
            "--tag-scheme",
            "bioes",
            "--epochs",
            "3",
            "--learning-rate",
            "0.02",
            *TINY,
            *run,
        ]
    )
    assert code == 0
    results = json.loads(capsys.readouterr().out)
    assert results["tag_schemes"] == ["BIO", "BIOES"]
    assert any(t.startswith("S-") for t in results["tags"])  # trained on BIOES
    entities = results["test"]["entities"]
    assert set(entities["per_type"]) <= {"PER", "ORG", "LOC", "MISC"}
    assert {"precision", "recall", "f1"} <= set(entities["per_type"]["PER"])
    assert set(results["test"]["per_tag"]) <= {"O"} | {
        f"{p}-{k}" for p in "BI" for k in ("PER", "ORG", "LOC", "MISC")
    }

    config = tagger.common.saved_config(tagger.DEFAULTS, str(tmp_path / "run"))
    model = tagger.Tagger.from_run(config)
    assert model.model.get_layer("crf").allowed_transitions is not None
    from kerasrnn.data import load_conll_columns

    sentences, gold = load_conll_columns(str(test))
    rows = model.predict(sentences)
    predicted = [r["tags"] for r in rows]
    check_tags(predicted, "BIO", "predictions")  # constrained: well-formed, in BIO
    assert any(t != "O" for s in predicted for t in s)
    np.testing.assert_allclose(entities["f1"], seqeval.f1_score(gold, predicted), atol=1e-9)
    for sentence, row in zip(sentences, rows):
        assert [(e["start"], e["end"], e["type"]) for e in row["entities"]] == entity_spans(
            row["tags"]
        )
        assert [e["text"] for e in row["entities"]] == [
            " ".join(sentence[e["start"] : e["end"]]) for e in row["entities"]
        ]

    code = tagger.main(["predict", *run, " ".join(sentences[0]), ""])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed[0]["entities"] == rows[0]["entities"] and printed[1]["entities"] == []

    # the n best: well-formed BIO, distinct, best first, the first Viterbi's path, each
    # probability exp(log-likelihood) of its path by the forward algorithm
    batch = sentences[:6]
    n_best = model.predict_n_best(batch, 4)
    width = max(map(len, batch))
    potentials, lengths = model._model_outputs(
        tf.constant([s + [""] * (width - len(s)) for s in batch])
    )
    mask = tf.sequence_mask(lengths, width)
    ids, probabilities = [], []
    for row, found in zip(rows, n_best):
        assert found[0]["tags"] == row["tags"] and found[0]["entities"] == row["entities"]
        check_tags([c["tags"] for c in found], "BIO", "n-best")
        assert len({tuple(c["tags"]) for c in found}) == len(found) == 4
        assert [c["score"] for c in found] == sorted((c["score"] for c in found), reverse=True)
        for candidate in found:
            path = [model.tags.index(t) for t in convert_tags(candidate["tags"], "BIOES")]
            ids.append(path + [0] * (width - len(path)))
            probabilities.append(candidate["probability"])
    log_p = crf_log_likelihood(
        tf.repeat(potentials, 4, axis=0), np.array(ids), tf.repeat(mask, 4, axis=0)
    )
    np.testing.assert_allclose(np.exp(log_p), probabilities, rtol=1e-3)
    code = tagger.main(["predict", *run, "--n-best", "3", " ".join(sentences[0])])
    printed = json.loads(capsys.readouterr().out)[0]["n_best"]
    assert code == 0 and [c["tags"] for c in printed] == [c["tags"] for c in n_best[0][:3]]
    np.testing.assert_allclose(
        [c["score"] for c in printed], [c["score"] for c in n_best[0][:3]], rtol=1e-4
    )

    code = tagger.main(["export", *run])
    assert code == 0
    loaded = tf.saved_model.load(json.loads(capsys.readouterr().out)["saved_model"])
    out = loaded.signatures["tag_text"](text=tf.constant([" ".join(s) for s in sentences[:8]]))
    for i, row in enumerate(rows[:8]):
        starts = [int(s) for s in out["entity_start"].numpy()[i] if s >= 0]
        assert starts == [e["start"] for e in row["entities"]]
        texts = [t.decode() for t in out["entity_text"].numpy()[i][: len(starts)]]
        assert texts == [e["text"] for e in row["entities"]]


def test_entity_outputs_read_spans_as_conlleval():
    """The serving graph's spans against entity_spans on hand-made, also ill-formed, tags."""
    import tensorflow as tf

    tags = [
        ["B-PER", "I-PER", "O", "I-LOC", "B-LOC"],
        ["I-ORG", "B-MISC", "I-MISC", "", ""],
        ["O", "O", "O", "O", "O"],
        ["S-LOC", "B-PER", "E-PER", "E-PER", "I-ORG"],
    ]
    tokens = [[f"w{i}{j}" if t else "" for j, t in enumerate(s)] for i, s in enumerate(tags)]
    out = tagger.entity_outputs(tf.constant(tokens), tf.constant(tags))
    for i, sentence in enumerate(tags):
        expected = entity_spans([t for t in sentence if t])
        got = [
            (int(s), int(e), k.decode())
            for s, e, k in zip(
                out["entity_start"].numpy()[i],
                out["entity_end"].numpy()[i],
                out["entity_type"].numpy()[i],
            )
            if s >= 0
        ]
        assert got == expected
        texts = [t.decode() for t in out["entity_text"].numpy()[i][: len(got)]]
        assert texts == [" ".join(tokens[i][s:e]) for s, e, _ in expected]


def test_bad_scheme_input_is_one_line(tmp_path, capsys, shared_data):
    iob1 = conll_slice(
        tmp_path / "iob1.txt",
        shared_data("conll2003", "train.txt.gz"),
        30,
        lambda tags: convert_tags(tags, "IOB1"),
    )
    run = ["--output-dir", str(tmp_path / "run"), "--epochs", "1", *TINY]
    code = tagger.main(["train", "--train", str(iob1), "--tag-scheme", "bio", *run])
    err = capsys.readouterr().err
    assert code == 2 and "--tag-scheme bio: train: sentence" in err and "IOB1" in err
    pos = tmp_path / "pos.txt"
    pos.write_text("The DET\ncat NOUN\n\n" * 4)
    code = tagger.main(
        ["train", "--train", str(pos), "--crf", "true", "--crf-constraints", "true", *run]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--crf-constraints true needs entity tags" in err


def test_bioes_predictions_are_reported_in_the_files_scheme():
    names = ["B-X", "E-X", "I-X", "O", "S-X"]
    assert tagger.output_tags(names, ("BIO", "BIOES")) == ["B-X", "I-X", "O"]
    assert tagger.output_tags(names, ("IOB1", "BIOES")) == ["B-X", "I-X", "O"]
    assert tagger.output_tags(names, ("BIOES", "BIOES")) == names  # a BIOES file stays
    assert tagger.output_tags(["B-X", "O"], (None, None)) == ["B-X", "O"]
