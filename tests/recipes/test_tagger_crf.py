"""recipes.tagger --crf on the shared run (tests/conftest.py's `tiny_tagger`: a CRF with
character features): predict is Viterbi over the saved model's potentials with each
tag's posterior marginal, evaluate scores predict's tags, and the option's parsing."""

import json
import shutil

import numpy as np
import pytest

from kerasrnn.layers import crf_decode, crf_marginals
from kerasrnn.metrics import tagging_scores
from recipes import common, tagger
from tests.conftest import NER_SENTENCES, main_json

SENTENCES = [
    ["Peter", "Blackburn", "flew", "to", "Brussels", "."],
    ["EU", "rejects", "German", "call"],
    ["The", "cat", "Qzxw"],
]


def test_predict_is_viterbi_over_the_saved_potentials(tiny_tagger):
    from kerasrnn.models import SequenceTagger

    task = SequenceTagger.from_preset(tiny_tagger)
    assert task.crf and task.preprocessor.chars is not None
    inputs = task.preprocessor.encode(SENTENCES)
    mask = np.asarray(inputs["word_ids"]) != 0
    potentials = task(inputs, training=False)
    best = np.asarray(crf_decode(potentials, mask)[0])
    marginals = np.asarray(crf_marginals(potentials, mask))
    rows = main_json(
        tagger, "predict", "--output-dir", str(tiny_tagger), *(" ".join(s) for s in SENTENCES)
    )
    for i, (sentence, row) in enumerate(zip(SENTENCES, rows)):
        path = best[i, : len(sentence)]
        # trained in BIOES on BIO data: reported in BIO
        assert row["tags"] == [task.preprocessor.reported_tag(task.tags[k]) for k in path]
        np.testing.assert_allclose(
            row["probabilities"], marginals[i, np.arange(len(sentence)), path], rtol=1e-5
        )
        assert all(0 < p <= 1 for p in row["probabilities"])


@pytest.mark.large
def test_evaluate_scores_predicts_tags(tiny_tagger, tmp_path):
    """evaluate on the validation sentences: train's scores of them (results.json), and
    kerasrnn.metrics' scores of predict's tags."""
    run = shutil.copytree(tiny_tagger, tmp_path / "run")  # evaluate writes into it
    sentences, gold = (list(x) for x in zip(*NER_SENTENCES[:3]))
    data = tmp_path / "valid.txt"
    data.write_text(
        "".join("".join(f"{w} {t}\n" for w, t in zip(s, g)) + "\n" for s, g in zip(sentences, gold))
    )
    scores = main_json(tagger, "evaluate", "--output-dir", str(run), "--test", str(data))
    assert scores == json.loads((run / "results.json").read_text())["valid"]
    rows = main_json(tagger, "predict", "--output-dir", str(run), *(" ".join(s) for s in sentences))
    names = sorted({t for t in json.loads((run / "results.json").read_text())["tags"]})
    reported = sorted({t.replace("S-", "B-").replace("E-", "I-") for t in names})
    assert scores == common.tidy(tagging_scores(gold, [r["tags"] for r in rows], reported))
    assert scores["sentences"] == 3 and scores["tokens"] == 18


def test_crf_option_must_be_a_boolean(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # at parse time, before any data is read
        tagger.main(["train", "--train", str(tmp_path / "x.conllu"), "--crf", "maybe"])
    assert exit_.value.code == 2
    assert "argument --crf: must be true or false, got 'maybe'" in capsys.readouterr().err
