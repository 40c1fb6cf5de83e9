"""Scores the recipes report: per-class precision / recall / F1 (`per_class_scores`)
and the check that held-out labels were seen in training (`check_labels`)."""

from recipes.config import RecipeError


def per_class_scores(gold, predicted, labels):
    """Precision, recall, F1 and support of every label (lists of gold and predicted
    labels, aligned), as ``{label: {"precision", "recall", "f1", "support"}}``.
    (Counted here rather than with keras.metrics.F1Score, which needs one-hot arrays of
    the whole set and gives no support counts.)"""
    import collections

    true_pos, gold_count, pred_count = (collections.Counter() for _ in range(3))
    for g, p in zip(gold, predicted):
        gold_count[g] += 1
        pred_count[p] += 1
        true_pos[g] += g == p
    scores = {}
    for label in labels:
        precision = true_pos[label] / pred_count[label] if pred_count[label] else 0.0
        recall = true_pos[label] / gold_count[label] if gold_count[label] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[label] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": gold_count[label],
        }
    return scores


def check_labels(train_labels, other_labels, split, source=None):
    """Raises `RecipeError` when `split` (read from `source`, the file or files, if
    given) has labels that training never saw."""
    unseen = sorted(set(other_labels) - set(train_labels))
    if unseen:
        where = f" ({source})" if source else ""
        raise RecipeError(
            f"label set mismatch: the {split} data{where} has label(s) {unseen[:10]} that are "
            f"not in the training data (training labels: {sorted(set(train_labels))[:20]})."
        )
