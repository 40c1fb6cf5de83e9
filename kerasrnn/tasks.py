"""Small sequence tasks the package generates itself, for demos, tests and figures.

NumPy only: no corpus, no download, reproducible from a seed.
"""
import numpy as np


def marker_order_task(num_examples, min_length=20, max_length=60, vocab_size=10, seed=0):
    """Which of two marked symbols comes first in a long sequence?

    Each sequence holds random filler symbols 3..vocab_size-1, one symbol 1 ("A") and one
    symbol 2 ("B") at random positions; the label is 1 when A comes before B. Sequences
    are right-padded with 0 up to `max_length` (use `keras.layers.Embedding(mask_zero=True)`
    or `Masking`).

    Returns:
        tokens: int32 array [num_examples, max_length].
        labels: int32 array [num_examples], balanced 0/1.
    """
    if not 2 <= min_length <= max_length:
        raise ValueError(
            f"need 2 <= min_length <= max_length; got min_length={min_length}, "
            f"max_length={max_length}."
        )
    if vocab_size < 4:
        raise ValueError(f"`vocab_size` must be at least 4, got {vocab_size}.")
    rng = np.random.default_rng(seed)
    tokens = np.zeros((num_examples, max_length), np.int32)
    labels = rng.integers(0, 2, num_examples).astype(np.int32)
    lengths = rng.integers(min_length, max_length + 1, num_examples)
    for row, (length, label) in enumerate(zip(lengths, labels)):
        tokens[row, :length] = rng.integers(3, vocab_size, length)
        first, second = sorted(rng.choice(length, 2, replace=False))
        tokens[row, first], tokens[row, second] = (1, 2) if label else (2, 1)
    return tokens, labels
