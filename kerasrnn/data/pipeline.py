"""`tf.data` pipelines for variable-length sequences.

`sequence_dataset` turns id sequences (Python lists) into batches padded to the longest
sequence *of the batch* with [PAD] = 0, optionally grouped into length buckets
(`tf.data.Dataset.bucket_by_sequence_length`) so that a batch wastes little padding.
Embedding layers built with ``mask_zero=True`` turn the padding into Keras masks; for
per-token targets the pipeline also yields 0/1 sample weights, so padded steps count in
neither the loss nor the metrics. Shuffling and bucketing never drop or repeat an
example: each appears exactly once per epoch.
"""

import numpy as np
import tensorflow as tf

__all__ = ["sequence_dataset", "ragged_constant"]


def ragged_constant(sequences, dtype=tf.int32):
    """Nested Python lists of ints (2 or 3 levels: sentences of ids, or sentences of
    words of character ids) -> `tf.RaggedTensor`, built from flat arrays (much faster
    than `tf.ragged.constant` for whole corpora)."""
    sequences = list(sequences)
    lengths = np.fromiter((len(s) for s in sequences), np.int64, len(sequences))
    nested = any(len(s) and not np.isscalar(s[0]) for s in sequences)
    if nested:
        inner = [word for s in sequences for word in s]
        values = ragged_constant(inner, dtype)
        return tf.RaggedTensor.from_row_lengths(values, lengths, validate=False)
    flat = np.fromiter((x for s in sequences for x in s), np.int64, int(lengths.sum()))
    return tf.RaggedTensor.from_row_lengths(tf.constant(flat, dtype), lengths, validate=False)


def _lengths_of(sequences, name):
    lengths = [len(s) for s in sequences]
    if not lengths:
        raise ValueError(f"`{name}` is empty: a dataset needs at least one example.")
    return lengths


def sequence_dataset(
    inputs,
    targets=None,
    batch_size=32,
    shuffle=False,
    seed=None,
    bucket_boundaries=None,
    length_key=None,
    target_weights=None,
    prefetch=True,
):
    """Builds a padded, optionally shuffled and bucketed `tf.data.Dataset`.

    Args:
        inputs: a list of id sequences (one list of ints per example), or a dict of
            such lists (all the same number of examples). A dict entry may also be 3
            levels deep (per-token character ids), padded in both dimensions.
        targets: None (inputs only, for prediction), a list of ints (one class per
            example) or a list of id sequences (one target per token; padded with 0).
        batch_size: examples per batch.
        shuffle: reshuffle the examples every epoch (before bucketing).
        seed: the shuffle seed.
        bucket_boundaries: increasing sequence lengths, e.g. ``[10, 20, 40]``: examples
            are grouped into buckets of lengths ``< 10``, ``10..19``, ... and every
            batch is drawn from one bucket (each still padded to its own longest
            sequence). None: plain batching in (shuffled) order.
        length_key: with dict inputs, the entry whose length is used for bucketing
            (default: the first).
        target_weights: yield ``(inputs, targets, weights)`` with 1.0 for every real
            target and 0.0 for padding. Default: True for per-token targets.
        prefetch: overlap input preparation with training (`tf.data.AUTOTUNE`).

    Returns:
        A dataset of ``inputs`` or ``(inputs, targets[, weights])`` batches, int32,
        padded with 0.
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be >= 1, got {batch_size}.")
    named = isinstance(inputs, dict)
    columns = dict(inputs) if named else {"inputs": inputs}
    if not columns:
        raise ValueError("`inputs` is an empty dict.")
    key = length_key or next(iter(columns))
    if key not in columns:
        raise ValueError(f"`length_key` {key!r} is not one of the inputs {list(columns)}.")
    count = len(_lengths_of(columns[key], "inputs"))
    for name, column in columns.items():
        if len(column) != count:
            raise ValueError(f"input {name!r} has {len(column)} examples but {key!r} has {count}.")
    tensors = {name: ragged_constant(column) for name, column in columns.items()}
    per_token = False
    if targets is not None:
        if len(targets) != count:
            raise ValueError(f"`targets` has {len(targets)} examples, `inputs` {count}.")
        per_token = count > 0 and not np.isscalar(targets[0])
        if per_token:
            tensors["__targets"] = ragged_constant(targets)
            tensors["__lengths"] = tf.constant([len(t) for t in targets], tf.int32)
        else:
            tensors["__targets"] = tf.constant(np.asarray(targets, np.int32))
    with_weights = per_token if target_weights is None else bool(target_weights)
    if with_weights and targets is None:
        raise ValueError("`target_weights` needs `targets`.")

    dataset = tf.data.Dataset.from_tensor_slices(tensors)
    if shuffle:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)

    def densify(example):
        # Nested (character) inputs come out of the slices as ragged tensors.
        return {
            name: value.to_tensor() if isinstance(value, tf.RaggedTensor) else value
            for name, value in example.items()
        }

    dataset = dataset.map(densify, num_parallel_calls=tf.data.AUTOTUNE)
    if bucket_boundaries:
        boundaries = [int(b) for b in bucket_boundaries]
        if boundaries != sorted(set(boundaries)) or boundaries[0] < 1:
            raise ValueError(
                f"`bucket_boundaries` must be strictly increasing positive lengths, got "
                f"{bucket_boundaries}."
            )
        dataset = dataset.bucket_by_sequence_length(
            lambda example: tf.shape(example[key])[0],
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        )
        # Bucketing hides the number of batches from tf.data; without it Keras cannot
        # show the epoch's length and warns "ran out of data" at the end of each first
        # pass. Every bucket ends with one partial batch, so the count is known
        # (assert_cardinality checks it while iterating).
        bucket_sizes = np.bincount(
            np.searchsorted(boundaries, _lengths_of(columns[key], "inputs"), side="right"),
            minlength=len(boundaries) + 1,
        )
        batches = int(sum(-(-int(n) // batch_size) for n in bucket_sizes))
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    else:
        dataset = dataset.padded_batch(batch_size)

    def split(example):
        features = {k: v for k, v in example.items() if not k.startswith("__")}
        features = features if named else features["inputs"]
        if targets is None:
            return features
        target = example["__targets"]
        if not with_weights:
            return features, target
        if per_token:
            # Explicit lengths: a real target id may be 0, so padding can't be inferred.
            weights = tf.sequence_mask(example["__lengths"], tf.shape(target)[1])
            weights = tf.cast(weights, tf.float32)
        else:
            weights = tf.ones(tf.shape(target), tf.float32)
        return features, target, weights

    dataset = dataset.map(split, num_parallel_calls=tf.data.AUTOTUNE)
    if prefetch:
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset
