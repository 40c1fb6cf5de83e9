"""The generated tasks: what a label means and the errors for impossible settings."""
import numpy as np
import pytest

from kerasrnn.tasks import long_dependency_task, marker_order_task


def test_long_dependency_label_is_the_first_symbol_and_the_rest_carries_nothing():
    tokens, labels = long_dependency_task(2000, distractors=30, num_classes=3, vocab_size=9,
                                          seed=3)
    assert tokens.shape == (2000, 31) and tokens.dtype == np.int32
    np.testing.assert_array_equal(tokens[:, 0], labels + 1)
    assert tokens[:, 1:].min() == 4 and tokens[:, 1:].max() == 8
    assert set(np.unique(labels)) == {0, 1, 2}
    # Distractors are drawn independently of the label: per-class symbol frequencies agree.
    per_class = [np.bincount(tokens[labels == k, 1:].ravel(), minlength=9)[4:] for k in range(3)]
    frequencies = [counts / counts.sum() for counts in per_class]
    assert max(np.abs(f - frequencies[0]).max() for f in frequencies) < 0.02
    again, _ = long_dependency_task(2000, distractors=30, num_classes=3, vocab_size=9, seed=3)
    np.testing.assert_array_equal(tokens, again)


def test_long_dependency_without_distractors_is_one_step():
    tokens, labels = long_dependency_task(5, distractors=0)
    assert tokens.shape == (5, 1)
    np.testing.assert_array_equal(tokens[:, 0], labels + 1)


@pytest.mark.parametrize("kwargs, word", [
    (dict(distractors=-1), "distractors"),
    (dict(distractors=5, num_classes=1), "num_classes"),
    (dict(distractors=5, num_classes=4, vocab_size=5), "vocab_size"),
])
def test_long_dependency_rejects_impossible_settings(kwargs, word):
    with pytest.raises(ValueError, match=word):
        long_dependency_task(4, **kwargs)


def test_marker_order_label_says_which_marker_comes_first():
    tokens, labels = marker_order_task(300, 20, 60, seed=4)
    first_a = np.argmax(tokens == 1, axis=1)
    first_b = np.argmax(tokens == 2, axis=1)
    np.testing.assert_array_equal(labels, (first_a < first_b).astype(np.int32))
    lengths = (tokens != 0).sum(axis=1)
    assert lengths.min() >= 20 and lengths.max() <= 60
