"""Entity-level precision, recall and F1 of tagged sentences, counted as conlleval does.

An entity (chunk) is a span of tokens with one type; it is correct only when the
predicted span has the same type and both boundaries as a gold one. The chunk rules are
conlleval's, as seqeval's default mode ports them: they read IOB1, IOB2 (BIO) and
BIOES/BIOUL tags alike (``I-`` after ``O`` or after another type starts an entity,
``B-`` always starts one, ``E-``/``S-`` end one), so gold and predictions need no
declared scheme.

Pure Python over lists of tag strings (no Keras): the scores of a finished run.
"""

import collections


def _split(tag):
    """``B-PER`` -> ("B", "PER"); ``O`` -> ("O", "_"), seqeval's reading."""
    prefix, kind = tag[:1], tag[1:].split("-", 1)[-1] or "_"
    return {"U": "S", "L": "E"}.get(prefix, prefix), kind


def _ends(prev_tag, tag, prev_kind, kind):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_kind != kind


def _starts(prev_tag, tag, prev_kind, kind):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_kind != kind


def entity_spans(tags):
    """The entities of one tagged sentence: a list of ``(start, end, type)``, `end`
    exclusive, in order.

    Example:

    >>> entity_spans(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [(0, 2, 'PER'), (3, 4, 'LOC'), (4, 5, 'LOC')]
    """
    spans, start = [], 0
    prev_tag, prev_kind = "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        tag, kind = _split(tag)
        if _ends(prev_tag, tag, prev_kind, kind):
            spans.append((start, i, prev_kind))
        if _starts(prev_tag, tag, prev_kind, kind):
            start = i
        prev_tag, prev_kind = tag, kind
    return spans


def _prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "gold": gold,
        "predicted": predicted,
        "correct": correct,
    }


def entity_scores(gold, predicted):
    """Micro precision / recall / F1 over all entities, and the same per entity type.

    .. math::  P = \\frac{|G \\cap S|}{|S|}, \\quad R = \\frac{|G \\cap S|}{|G|},
               \\quad F_1 = \\frac{2PR}{P + R}

    G and S are the sets of gold and predicted ``(sentence, start, end, type)``.

    Args:
        gold: tag sequences (one list of tag strings per sentence).
        predicted: the predicted tag sequences, aligned with `gold`.

    Returns:
        ``{"precision", "recall", "f1", "gold", "predicted", "correct",
        "per_type": {type: {the same keys}}}``.

    Example:

    >>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]],
    ...                        [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> scores["f1"], scores["per_type"]["PER"]["f1"]
    (0.5, 1.0)
    """
    if len(gold) != len(predicted):
        raise ValueError(
            f"entity_scores needs one prediction per gold sentence; got "
            f"{len(gold)} gold and {len(predicted)} predicted sentences."
        )
    counts = collections.defaultdict(lambda: [0, 0, 0])  # correct, predicted, gold
    for number, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(
                f"sentence {number}: {len(g)} gold tags but {len(p)} "
                "predicted; align the predictions with the tokens."
            )
        g, p = set(entity_spans(g)), set(entity_spans(p))
        for span in g & p:
            counts[span[2]][0] += 1
        for span in p:
            counts[span[2]][1] += 1
        for span in g:
            counts[span[2]][2] += 1
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    return {**_prf(*total), "per_type": {kind: _prf(*counts[kind]) for kind in sorted(counts)}}
