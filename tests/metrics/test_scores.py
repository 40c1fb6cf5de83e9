"""`kerasrnn.metrics`' test-set scores against hand-computed values, sacreBLEU (BLEU),
seqeval (entity F1) and NumPy (correlations)."""

import numpy as np
import pytest

from kerasrnn.metrics import (
    class_scores,
    classification_scores,
    relatedness_scores,
    tagging_scores,
    translation_report,
    translation_scores,
)


def test_class_scores_by_hand():
    gold = list("aabbc")
    predicted = list("abbbc")
    scores = class_scores(gold, predicted, ["a", "b", "c", "d"])
    # a: 1 of 1 predicted right, 1 of 2 found; b: 2 of 3, 2 of 2; c: 1 of 1; d: none
    assert scores["a"] == {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2}
    assert scores["b"] == pytest.approx(
        {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2}
    )
    assert scores["c"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert scores["d"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    summary = classification_scores(gold, predicted, ["a", "b", "c"])
    assert summary["examples"] == 5 and summary["accuracy"] == 0.8
    assert summary["per_class"] == {k: scores[k] for k in "abc"}
    assert classification_scores([], [], ["a"])["accuracy"] == 0.0


def test_tagging_scores_by_hand_and_entities_as_seqeval():
    seqeval = pytest.importorskip("seqeval.metrics")
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-PER"]]
    predicted = [["B-PER", "I-PER", "O", "B-PER"], ["O", "O"]]
    tags = ["B-LOC", "B-PER", "I-PER", "O"]
    scores = tagging_scores(gold, predicted, tags)
    assert (scores["sentences"], scores["tokens"], scores["accuracy"]) == (2, 6, 4 / 6)
    # B-PER: 1 of 2 predicted right, 1 of 2 found
    assert scores["per_tag"]["B-PER"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert scores["per_tag"]["B-LOC"]["recall"] == 0.0
    entities = scores["entities"]
    assert (entities["gold"], entities["predicted"], entities["correct"]) == (3, 2, 1)
    np.testing.assert_allclose(entities["f1"], seqeval.f1_score(gold, predicted), atol=1e-12)
    np.testing.assert_allclose(
        entities["precision"], seqeval.precision_score(gold, predicted), atol=1e-12
    )
    # tags of no entity scheme: no entity scores
    assert "entities" not in tagging_scores([["NOUN", "VERB"]], [["NOUN", "NOUN"]], ["NOUN"])


def test_translation_scores_are_sacrebleus_bleu_and_the_exact_matches():
    sacrebleu = pytest.importorskip("sacrebleu")
    hypotheses = ["the cat sat on the mat .", "a dog runs", "Hello, world!"]
    references = ["the cat sat on a mat .", "a dog runs", "Hello world!"]
    scores = translation_scores(hypotheses, references)
    want = sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert scores["bleu"] == pytest.approx(want, abs=1e-9)
    assert 0 < scores["bleu"] < 100 and scores["exact_match"] == pytest.approx(1 / 3)
    perfect = translation_scores(references, references)
    assert perfect == {"bleu": pytest.approx(100.0), "exact_match": 1.0}


@pytest.mark.large
def test_translation_report_scores_each_strategys_own_translations():
    from kerasrnn.decoding import BeamSearch, GreedySearch
    from tests import tiny_tasks

    task = tiny_tasks.seq2seq()
    sources, references = tiny_tasks.SOURCES, tiny_tasks.TARGETS
    strategies = {"greedy": GreedySearch(), "beam2": BeamSearch(2)}
    report = translation_report(task, sources, references, strategies, max_length=5)
    assert report["examples"] == 3 and set(report) == {"examples", "cased", "greedy", "beam2"}
    for name, strategy in strategies.items():
        hypotheses = task.generate(sources, strategy, max_length=5)
        row = report[name]
        assert {k: row[k] for k in ("bleu", "exact_match")} == translation_scores(
            hypotheses, references
        )
        assert row["sentences_per_second"] > 0
        assert [s["translation"] for s in row["samples"]] == hypotheses
        assert [s["reference"] for s in row["samples"]] == references
    with pytest.raises(ValueError, match="3 sources but 2 references"):
        translation_report(task, sources, references[:2], strategies)


@pytest.mark.parametrize(
    "kind,reference,lowered",
    [
        ("word", "A Man's T-Shirt is Red.", "a man's t-shirt is red."),
        # keras-hub's WordPiece case-folds: a lower-cased German target has "ss" for "ß".
        ("wordpiece", "Die Straße ist sehr lang.", "die strasse ist sehr lang."),
    ],
)
def test_a_lowercasing_task_is_scored_against_lowercased_references(kind, reference, lowered):
    from types import SimpleNamespace

    from kerasrnn.data import Vocabulary
    from kerasrnn.data.text import TextSide
    from kerasrnn.decoding import BeamSearch, GreedySearch

    # Only the scoring is under test: a stand-in that "translates" perfectly into the
    # lower-cased target, whatever the strategy.
    def report(lowercase):
        target = TextSide(Vocabulary(["x"]), kind, lowercase)
        stand_in = SimpleNamespace(
            preprocessor=SimpleNamespace(target=target),
            generate=lambda texts, strategy, **settings: [lowered] * len(texts),
        )
        strategies = {"greedy": GreedySearch(), "beam2": BeamSearch(2)}
        return translation_report(stand_in, ["x", "y"], [reference, lowered], strategies)

    lower = report(True)
    assert lower["cased"] is False and lower["examples"] == 2
    assert lower["greedy"]["exact_match"] == lower["beam2"]["exact_match"] == 1.0
    assert lower["greedy"]["bleu"] == pytest.approx(100.0)
    assert lower["greedy"]["samples"][0]["reference"] == lowered
    cased = report(False)
    assert cased["cased"] is True
    assert cased["greedy"]["exact_match"] == 0.5 and cased["greedy"]["bleu"] < 100.0


def _ranks(x):
    """Ranks 1..n, ties given the mean of their ranks (Spearman's convention)."""
    x = np.asarray(x, float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):
        ranks[x == value] = ranks[x == value].mean()
    return ranks


def test_relatedness_scores_are_numpys_correlations_and_error():
    gold = [1.0, 2.5, 3.0, 4.5, 5.0, 2.0]
    predicted = [1.5, 2.0, 3.5, 3.5, 4.0, 2.5]  # a tie
    scores = relatedness_scores(gold, predicted)
    assert scores["pairs"] == 6
    np.testing.assert_allclose(scores["pearson"], np.corrcoef(gold, predicted)[0, 1], atol=1e-12)
    spearman = np.corrcoef(_ranks(gold), _ranks(predicted))[0, 1]
    np.testing.assert_allclose(scores["spearman"], spearman, atol=1e-12)
    np.testing.assert_allclose(
        scores["mse"], np.mean((np.array(gold) - predicted) ** 2), atol=1e-12
    )
    # constant predictions: no correlation (0), not NaN
    constant = relatedness_scores(gold, [3.0] * 6)
    assert constant["pearson"] == constant["spearman"] == 0.0
