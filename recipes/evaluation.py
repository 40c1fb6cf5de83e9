"""The check that held-out labels were seen in training (`check_labels`); the scores
themselves are `kerasrnn.metrics`'."""

from recipes.config import RecipeError


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
