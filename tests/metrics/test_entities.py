"""Entity-level P/R/F1 against seqeval (the conlleval port) on random tag sequences of
every scheme, hand-made edge cases, and real CoNLL-2003 tags."""

import numpy as np
import pytest

from kerasrnn.metrics import entity_scores, entity_spans

seqeval = pytest.importorskip("seqeval.metrics")
from seqeval.metrics.sequence_labeling import get_entities  # noqa: E402


def seqeval_scores(gold, predicted):
    report = {}  # seqeval's report warns on a corpus without gold entities
    if any(t != "O" for s in gold for t in s):
        report = seqeval.classification_report(gold, predicted, output_dict=True, zero_division=0)
    return (
        seqeval.precision_score(gold, predicted, zero_division=0),
        seqeval.recall_score(gold, predicted, zero_division=0),
        seqeval.f1_score(gold, predicted, zero_division=0),
        report,
    )


def assert_same(gold, predicted):
    ours = entity_scores(gold, predicted)
    precision, recall, f1, report = seqeval_scores(gold, predicted)
    np.testing.assert_allclose(
        [ours["precision"], ours["recall"], ours["f1"]], [precision, recall, f1], atol=1e-12
    )
    for kind, scores in ours["per_type"].items():
        if scores["gold"]:  # seqeval's report lists the gold types
            np.testing.assert_allclose(scores["f1"], report[kind]["f1-score"], atol=1e-12)
            assert scores["gold"] == report[kind]["support"]


EDGE_CASES = [
    # I- after O starts an entity (IOB1 reading) and is scored as one
    ([["O", "B-PER", "I-PER"]], [["O", "I-PER", "I-PER"]]),
    # IOB1: B- between two adjacent entities of a type; IOB2: B- at every start
    ([["I-LOC", "B-LOC", "O"]], [["B-LOC", "B-LOC", "O"]]),
    # entities at the sentence ends; one sentence's entity does not run into the next
    ([["B-ORG"], ["I-ORG", "O"]], [["B-ORG"], ["B-ORG", "O"]]),
    # a type change inside a span splits it; a wrong type counts as a miss and a false
    ([["B-PER", "I-LOC", "I-LOC"]], [["B-PER", "I-PER", "I-LOC"]]),
    # BIOES
    ([["B-MISC", "E-MISC", "S-PER", "O"]], [["B-MISC", "I-MISC", "S-PER", "E-PER"]]),
    # nothing predicted, nothing gold
    ([["O", "O"]], [["O", "O"]]),
    ([["B-PER"]], [["O"]]),
]


@pytest.mark.parametrize("gold,predicted", EDGE_CASES)
def test_edge_cases_equal_seqeval(gold, predicted):
    assert_same(gold, predicted)
    for sentence in gold + predicted:
        expected = [(k, s, e + 1) for k, s, e in get_entities(sentence)]
        assert [(k, s, e) for s, e, k in entity_spans(sentence)] == expected


def test_hand_counted_example():
    scores = entity_scores(
        [["B-PER", "I-PER", "O", "B-LOC"], ["I-ORG", "O"]],
        [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]],
    )
    # gold: PER(0,2) LOC(3,4) ORG(0,1); predicted: PER(0,2) ORG(3,4) ORG(0,1)
    assert (scores["correct"], scores["predicted"], scores["gold"]) == (2, 3, 3)
    assert scores["per_type"]["LOC"]["recall"] == 0.0
    assert scores["per_type"]["ORG"]["precision"] == 0.5


@pytest.mark.parametrize("prefixes", ["BIO", "BIOES"])
def test_random_sequences_equal_seqeval(prefixes):
    """Any tag sequence, valid or not in its scheme."""
    rng = np.random.default_rng(0)
    tags = ["O"] + [f"{p}-{k}" for p in prefixes.replace("O", "") for k in ("A", "B", "C")]
    gold = [list(rng.choice(tags, rng.integers(1, 12))) for _ in range(300)]
    predicted = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in s] for s in gold]
    assert_same(gold, predicted)


def test_conll2003_tags_equal_seqeval(shared_data):
    from kerasrnn.data import load_conll_columns

    _, gold = load_conll_columns(shared_data("conll2003", "valid.txt.gz"))
    rng = np.random.default_rng(1)
    names = sorted({t for s in gold for t in s})
    predicted = [[t if rng.random() < 0.9 else str(rng.choice(names)) for t in s] for s in gold]
    assert_same(gold, predicted)
    assert entity_scores(gold, gold)["gold"] == 5942  # SOURCE.md's count
