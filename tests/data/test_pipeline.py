"""kerasrnn.data.pipeline: padding, weights (masks), bucketing, shuffling."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from kerasrnn.data import ragged_constant, sequence_dataset


def _examples(n=57):
    rng = np.random.default_rng(0)
    # Example i is the sequence [i+1] * length, so every batch row names its example.
    return [[i + 1] * int(rng.integers(1, 30)) for i in range(n)]


def test_ragged_constant_two_and_three_levels():
    assert ragged_constant([[1, 2], [], [3]]).to_list() == [[1, 2], [], [3]]
    nested = [[[1, 2], [3]], [[4]]]
    assert ragged_constant(nested).to_list() == nested


def test_padding_to_the_longest_of_each_batch():
    seqs = [[5, 6, 7], [8], [9, 10], [11, 12, 13, 14, 15]]
    batches = list(sequence_dataset(seqs, [0, 1, 0, 1], batch_size=2))
    (x1, y1), (x2, y2) = batches
    np.testing.assert_array_equal(x1.numpy(), [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(x2.numpy(), [[9, 10, 0, 0, 0], [11, 12, 13, 14, 15]])
    np.testing.assert_array_equal(y1.numpy(), [0, 1])
    assert x1.dtype == tf.int32


def test_per_token_targets_get_mask_weights():
    # A real target may be 0, so the weights must come from the lengths.
    x = {"word_ids": [[4, 5, 6], [7]], "char_ids": [[[4], [5, 6], [7]], [[8, 9, 10]]]}
    ((inputs, targets, weights),) = list(sequence_dataset(x, [[0, 2, 0], [0]], batch_size=2))
    np.testing.assert_array_equal(targets.numpy(), [[0, 2, 0], [0, 0, 0]])
    np.testing.assert_array_equal(weights.numpy(), [[1, 1, 1], [1, 0, 0]])
    np.testing.assert_array_equal(
        inputs["char_ids"].numpy(),
        [[[4, 0, 0], [5, 6, 0], [7, 0, 0]], [[8, 9, 10], [0, 0, 0], [0, 0, 0]]],
    )
    assert sorted(inputs) == ["char_ids", "word_ids"]


@pytest.mark.parametrize("boundaries", [None, [5, 10, 20]])
def test_every_example_exactly_once_per_epoch(boundaries):
    seqs = _examples()
    dataset = sequence_dataset(
        seqs,
        list(range(len(seqs))),
        batch_size=4,
        shuffle=True,
        seed=3,
        bucket_boundaries=boundaries,
    )
    orders = []
    for _ in range(2):
        seen = []
        for x, y in dataset:
            x, y = x.numpy(), y.numpy()
            for row, label in zip(x, y):
                length = int((row != 0).sum())
                assert row[0] == label + 1 and length == len(seqs[label])
                assert (row[:length] == label + 1).all() and (row[length:] == 0).all()
                seen.append(int(label))
            if boundaries:
                lengths = (x != 0).sum(axis=1)
                buckets = np.searchsorted(boundaries, lengths, side="right")
                assert len(set(buckets)) == 1, "a batch mixes buckets"
        assert collections.Counter(seen) == collections.Counter(range(len(seqs)))
        orders.append(seen)
    assert orders[0] != orders[1], "shuffling must change the order between epochs"


def test_bucketing_reduces_padding():
    seqs = _examples(200)

    def padding(dataset):
        return sum(int((x.numpy() == 0).sum()) for x in dataset)

    plain = sequence_dataset(seqs, batch_size=8, shuffle=True, seed=0)
    bucketed = sequence_dataset(
        seqs, batch_size=8, shuffle=True, seed=0, bucket_boundaries=[4, 8, 12, 16, 20, 24]
    )
    assert padding(bucketed) < padding(plain) / 2


def test_errors():
    with pytest.raises(ValueError, match="empty"):
        sequence_dataset([])
    with pytest.raises(ValueError, match="'b' has 1 examples"):
        sequence_dataset({"a": [[1], [2]], "b": [[1]]})
    with pytest.raises(ValueError, match="`targets` has 1"):
        sequence_dataset([[1], [2]], [0])
    with pytest.raises(ValueError, match="strictly increasing"):
        sequence_dataset([[1]], [0], bucket_boundaries=[5, 3])
    with pytest.raises(ValueError, match="length_key"):
        sequence_dataset({"a": [[1]]}, length_key="b")
