"""Data specs as the recipes' options give them, and seeded held-out splits.

A *spec* names where a split's examples come from: ``tfds:NAME[:SPLIT]`` for a
tensorflow-datasets dataset, otherwise files (one path, a list, or a mapping, as each
loader accepts; a path may be a ``corpus:NAME/FILE`` of `kerasrnn.datasets`).
`tfds_spec` reads the first form; `holdout` splits a seeded random part off a training
set when no validation (or test) data is given.

Neither needs TensorFlow.
"""

TFDS_PREFIX = "tfds:"


def tfds_spec(spec, default_split):
    """``"tfds:NAME[:SPLIT]"`` -> ``(NAME, SPLIT or default_split)``; None for any other
    spec (files).

    Args:
        spec: the data option's value (a string, a path, a list or a mapping).
        default_split: the tensorflow-datasets split to read when the spec names none.

    Example:

    >>> tfds_spec("tfds:ted_hrlr_translate/pt_to_en:validation", "train")
    ('ted_hrlr_translate/pt_to_en', 'validation')
    >>> tfds_spec("tfds:imdb_reviews", "test")
    ('imdb_reviews', 'test')
    >>> tfds_spec("train.tsv", "train") is None
    True
    """
    if not isinstance(spec, str) or not spec.startswith(TFDS_PREFIX):
        return None
    name, _, split = spec[len(TFDS_PREFIX) :].partition(":")
    if not name:
        raise ValueError(f"a tfds spec needs a dataset name: 'tfds:NAME[:SPLIT]', got {spec!r}.")
    return name, split or default_split


def holdout(first, second, fraction, seed, option="fraction"):
    """Splits a seeded random `fraction` off two aligned columns (e.g. texts and labels):
    returns ``((first_kept, second_kept), (first_held, second_held))``, at least one
    example held out. The same seed gives the same split.

    Args:
        first: a list (e.g. the texts).
        second: a list of the same length (e.g. the labels).
        fraction: the part to hold out, in (0, 1).
        seed: the permutation's seed.
        option: the name of the setting the fraction came from, for the error message.

    Example:

    >>> kept, held = holdout(list("abcd"), [1, 2, 3, 4], 0.25, seed=0)
    >>> len(kept[0]), len(held[0])
    (3, 1)
    """
    import numpy as np

    if not 0 < fraction < 1:
        raise ValueError(f"`{option}` must be in (0, 1), got {fraction}.")
    if len(first) != len(second):
        raise ValueError(
            f"holdout needs aligned columns, got {len(first)} and {len(second)} items."
        )
    order = np.random.default_rng(seed).permutation(len(first))
    n = max(1, int(round(fraction * len(first))))

    def pick(indices):
        return [first[i] for i in indices], [second[i] for i in indices]

    return pick(order[n:]), pick(order[:n])
