"""The generated tasks: what a label means and the errors for impossible settings."""

import numpy as np
import pytest

from kerasrnn.tasks import long_dependency_task, marker_order_task


def test_long_dependency_label_is_the_first_symbol_and_the_rest_carries_nothing():
    tokens, labels = long_dependency_task(2000, distractors=30, num_classes=3, vocab_size=9, seed=3)
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


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(distractors=-1), "distractors"),
        (dict(distractors=5, num_classes=1), "num_classes"),
        (dict(distractors=5, num_classes=4, vocab_size=5), "vocab_size"),
    ],
)
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


def test_adding_problem_target_is_the_sum_of_the_two_marked_values():
    from kerasrnn.tasks import adding_problem

    x, y = adding_problem(4000, length=31, seed=5)
    assert x.shape == (4000, 31, 2) and x.dtype == y.dtype == np.float32
    markers = x[..., 1]
    assert set(np.unique(markers)) == {0.0, 1.0}
    np.testing.assert_array_equal(markers.sum(1), 2.0)
    # one marker in the first half (steps 0..14), one in the second (15..30)
    np.testing.assert_array_equal(markers[:, :15].sum(1), 1.0)
    for row in range(5):
        first, second = np.flatnonzero(markers[row])
        np.testing.assert_allclose(y[row], x[row, first, 0] + x[row, second, 0], rtol=1e-6)
    assert 0.0 <= x[..., 0].min() and x[..., 0].max() < 1.0
    # the constant guess 1 scores the variance of a sum of two U[0, 1]: 1/6
    assert abs(np.mean((y - 1.0) ** 2) - 1 / 6) < 0.01
    np.testing.assert_array_equal(
        adding_problem(3, 31, seed=5)[0], adding_problem(3, 31, seed=5)[0]
    )


def test_copy_task_target_repeats_the_first_symbols_after_the_delimiter():
    from kerasrnn.tasks import copy_task

    x, y = copy_task(500, delay=20, copy_length=10, num_symbols=8, seed=2)
    assert x.shape == y.shape == (500, 40) and x.dtype == y.dtype == np.int32
    assert x[:, :10].min() == 1 and x[:, :10].max() == 8
    np.testing.assert_array_equal(x[:, 29], 9)  # the delimiter, `delay` steps after the data
    assert (np.delete(x[:, 10:], 19, axis=1) == 0).all()  # blanks elsewhere
    np.testing.assert_array_equal(y[:, -10:], x[:, :10])
    assert (y[:, :-10] == 0).all()
    np.testing.assert_array_equal(copy_task(3, 20, seed=2)[0], copy_task(3, 20, seed=2)[0])


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: __import__("kerasrnn.tasks").tasks.adding_problem(4, 1), "length"),
        (lambda: __import__("kerasrnn.tasks").tasks.adding_problem(4, 2.5), "length"),
        (lambda: __import__("kerasrnn.tasks").tasks.copy_task(4, 0), "delay"),
        (lambda: __import__("kerasrnn.tasks").tasks.copy_task(4, 5, copy_length=0), "copy_length"),
        (lambda: __import__("kerasrnn.tasks").tasks.copy_task(4, 5, num_symbols=1), "num_symbols"),
    ],
)
def test_hard_task_errors_name_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
