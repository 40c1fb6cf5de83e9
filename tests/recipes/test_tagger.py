"""recipes.tagger: BIO metrics, model parts, learning, prediction and bad input."""

import json

import numpy as np
import pytest

from recipes import common, tagger

TINY = {
    "embedding_dim": 16,
    "units": 16,
    "char_dim": 8,
    "char_units": 8,
    "batch_size": 16,
    "epochs": 2,
    "verbose": 0,
    "bucket_boundaries": [10, 20],
}


def _config(tmp_path, **overrides):
    return common.load_config(
        tagger.DEFAULTS, overrides={**TINY, "output_dir": str(tmp_path / "run"), **overrides}
    )


def test_bio_entities_follow_conlleval():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-ORG", "B-MISC"]
    assert tagger.bio_entities(tags) == {
        (0, 2, "PER"),
        (3, 5, "LOC"),
        (5, 6, "LOC"),
        (6, 7, "ORG"),
        (7, 8, "MISC"),
    }
    assert tagger.is_bio(["O", "B-X", "I-X"]) and not tagger.is_bio(["NOUN", "O"])


def test_tagging_scores():
    gold = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    pred = [["B-PER", "O", "O"], ["B-LOC"]]
    scores = tagger.tagging_scores(gold, pred, ["B-LOC", "B-PER", "I-PER", "O"])
    assert scores["accuracy"] == 0.75 and scores["tokens"] == 4
    assert scores["per_tag"]["I-PER"]["recall"] == 0.0
    assert scores["per_tag"]["O"]["precision"] == 0.5
    # gold entities: PER(0-2), LOC; predicted: PER(0-1) (wrong boundary), LOC.
    assert scores["entities"]["precision"] == 0.5 and scores["entities"]["recall"] == 0.5
    assert "entities" not in tagger.tagging_scores([["NOUN"]], [["NOUN"]], ["NOUN"])


def test_batch_time_folding_round_trip():
    x = np.arange(2 * 3 * 4).reshape(2, 3, 4).astype("float32")
    merged = tagger.MergeBatchTime()(x)
    assert merged.shape == (6, 4)
    np.testing.assert_array_equal(tagger.SplitBatchTime()([merged, x]), x)


def test_learns_a_slice_of_ud_ewt_and_tags_unknown_words(tmp_path, shared_data):
    from kerasrnn.data import load_conllu

    sentences, tags = load_conllu(shared_data("ud_en_ewt", "en_ewt-ud-dev.conllu.gz"))
    sentences, tags = sentences[:80], tags[:80]
    config = _config(
        tmp_path, epochs=3, learning_rate=0.02, dropout=0.0, embedding_dropout=0.0, word_dropout=0.0
    )
    results = tagger.train(
        config, {"train": (sentences, tags), "valid": (sentences, tags), "test": None}
    )
    # 17 tags, the most frequent (NOUN) about 17% of EWT tokens; three epochs on 80
    # sentences fit most of them.
    assert results["valid"]["accuracy"] > 0.6
    assert set(results["valid"]["per_tag"]) == set(results["tags"])
    model = tagger.Tagger.from_run(config)
    out = model.predict([[], ["The", "Qzxwvuts", "."], sentences[0]])
    assert out[0] == {"tags": [], "probabilities": []}
    assert len(out[1]["tags"]) == 3 and all(t in results["tags"] for t in out[1]["tags"])
    assert out[1]["tags"][2] == "PUNCT"


def test_cli_columns_bio_and_bad_input(tmp_path, capsys):
    rows = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n\n"
    data = tmp_path / "ner.txt"
    data.write_text(rows * 6)
    run = ["--output-dir", str(tmp_path / "run")]
    code = tagger.main(
        [
            "train",
            "--train",
            str(data),
            "--valid",
            str(data),
            "--config",
            str(_yaml(tmp_path)),
            "--epochs",
            "1",
            *run,
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert set(json.loads(out)["valid"]["entities"]) >= {"precision", "recall", "f1"}
    code = tagger.main(["predict", *run, "Peter rejects EU", ""])
    out, _ = capsys.readouterr()
    assert code == 0 and [len(p["tags"]) for p in json.loads(out)] == [3, 0]
    # a softmax tagger's n best: its tags are independent, the best path's probability
    # the product of the per-token ones
    best = json.loads(out)[0]
    code = tagger.main(["predict", *run, "--n-best", "2", "Peter rejects EU"])
    found = json.loads(capsys.readouterr().out)[0]["n_best"]
    assert code == 0 and len(found) == 2 and found[0]["tags"] == best["tags"]
    np.testing.assert_allclose(found[0]["probability"], np.prod(best["probabilities"]), rtol=1e-4)
    assert found[1]["probability"] <= found[0]["probability"] and found[1]["tags"] != best["tags"]
    code = tagger.main(["predict", *run, "--n-best", "0", "Peter"])
    assert code == 2 and "--n-best must be 1 or more" in capsys.readouterr().err

    other = tmp_path / "other.txt"
    other.write_text("Paris B-LOC\n\n")
    code = tagger.main(["evaluate", *run, "--test", str(other)])
    assert code == 2 and "label set mismatch" in capsys.readouterr().err
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tHi\thi\tINTJ\n")
    # a new folder: `run` holds a finished run, which train refuses before reading data
    code = tagger.main(["train", "--train", str(bad), "--output-dir", str(tmp_path / "bad")])
    assert code == 2 and "bad.conllu, line 1: a CoNLL-U token line" in capsys.readouterr().err


def _yaml(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in TINY.items()) + "\n")
    return path


def test_unknown_format_is_a_config_error(tmp_path):
    with pytest.raises(common.ConfigError, match="`format` must be one of"):
        tagger.load_examples(_config(tmp_path, format="xml"), "x.txt", "train")
