"""kerasrnn.metrics' test-set scores (moved here from the recipes' tests, which now
test the recipes' wiring of them): per-class precision / recall / F1, a tagger's token,
per-tag and entity scores, the relatedness correlations, each against hand counts or
NumPy."""

import numpy as np
import pytest

from kerasrnn.metrics import class_scores, classification_scores, relatedness_scores, tagging_scores


def test_per_class_scores_count_by_hand():
    scores = class_scores(list("aabbc"), list("abbbc"), ["a", "b", "c", "d"])
    assert scores["a"] == {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2}
    assert scores["b"]["precision"] == pytest.approx(2 / 3) and scores["b"]["recall"] == 1
    assert scores["c"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    # a label never gold nor predicted: zeros, not a division by zero
    assert scores["d"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    found = classification_scores(list("aabbc"), list("abbbc"), ["a", "b", "c"])
    assert found["examples"] == 5 and found["accuracy"] == pytest.approx(4 / 5)
    assert found["per_class"] == class_scores(list("aabbc"), list("abbbc"), ["a", "b", "c"])
    assert classification_scores([], [], ["a"])["accuracy"] == 0.0


def test_tagging_scores_count_tokens_tags_and_conlleval_entities():
    gold = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    pred = [["B-PER", "O", "O"], ["B-LOC"]]
    scores = tagging_scores(gold, pred, ["B-LOC", "B-PER", "I-PER", "O"])
    assert scores["accuracy"] == 0.75 and scores["tokens"] == 4 and scores["sentences"] == 2
    assert scores["per_tag"]["I-PER"]["recall"] == 0.0
    assert scores["per_tag"]["O"]["precision"] == 0.5
    # gold entities: PER (0-2), LOC; predicted: PER (0-1, a wrong boundary), LOC
    assert scores["entities"]["precision"] == 0.5 and scores["entities"]["recall"] == 0.5
    # tags that are not entity tags have no entity scores
    assert "entities" not in tagging_scores([["NOUN"]], [["NOUN"]], ["NOUN"])


def test_relatedness_scores_match_numpy():
    gold = np.array([1.0, 2.0, 3.0, 4.0, 4.5])
    pred = np.array([1.5, 1.0, 3.5, 3.9, 5.0])
    scores = relatedness_scores(gold, pred)
    assert scores["pairs"] == 5
    np.testing.assert_allclose(scores["pearson"], np.corrcoef(gold, pred)[0, 1])
    ranks = lambda x: np.argsort(np.argsort(x)).astype(float)  # noqa: E731  (no ties)
    np.testing.assert_allclose(scores["spearman"], np.corrcoef(ranks(gold), ranks(pred))[0, 1])
    np.testing.assert_allclose(scores["mse"], np.mean((gold - pred) ** 2))
    # a constant prediction has no correlation (0, not NaN)
    flat = relatedness_scores(gold, np.full(5, 3.0))
    assert flat["pearson"] == flat["spearman"] == 0.0
