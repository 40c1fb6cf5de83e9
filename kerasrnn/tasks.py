"""Small sequence tasks the package generates itself, for demos, tests and figures.

NumPy only: no corpus, no download, reproducible from a seed.
"""

import numpy as np

from kerasrnn.validation import check_int


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


def long_dependency_task(num_examples, distractors, num_classes=4, vocab_size=16, seed=0):
    """The long-term dependency problem of Bengio, Simard & Frasconi (1994).

    Each sequence starts with one relevant symbol 1..num_classes, followed by
    `distractors` (T) symbols drawn from num_classes+1..vocab_size-1 that carry no
    information; the label, asked for after the last step, is the relevant symbol
    (0-based). A model answers above chance (1 / num_classes) only if it carries the
    first symbol across all T steps.

    Returns:
        tokens: int32 array [num_examples, 1 + distractors] (no padding; 0 is unused).
        labels: int32 array [num_examples], in 0..num_classes-1.

    Example:

    >>> from kerasrnn.tasks import long_dependency_task
    >>> tokens, labels = long_dependency_task(4, distractors=10, seed=0)
    >>> tokens.shape, bool((tokens[:, 0] == labels + 1).all()), bool((tokens[:, 1:] > 4).all())
    ((4, 11), True, True)
    """
    if distractors < 0:
        raise ValueError(f"`distractors` must be >= 0, got {distractors}.")
    if num_classes < 2:
        raise ValueError(f"`num_classes` must be at least 2, got {num_classes}.")
    if vocab_size < num_classes + 2:
        raise ValueError(
            f"`vocab_size` must leave room for distractors: at least num_classes + 2 = "
            f"{num_classes + 2}, got {vocab_size}."
        )
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_examples).astype(np.int32)
    tokens = rng.integers(num_classes + 1, vocab_size, (num_examples, 1 + distractors))
    tokens[:, 0] = labels + 1
    return tokens.astype(np.int32), labels


def adding_problem(num_examples, length, seed=0):
    """The adding problem (Hochreiter & Schmidhuber 1997, exp. 4; Arjovsky et al. 2016).

    Each sequence has `length` (T) steps of two channels: a value drawn from U[0, 1] and
    a marker, 1 at exactly two steps (one in the first half, one in the second) and 0
    elsewhere. The target, asked for after the last step, is the sum of the two marked
    values. Predicting the mean, 1, whatever the input gives a mean squared error of
    1/6 (the variance of a sum of two U[0, 1]); beating it needs the first marked value
    carried for up to T steps.

    Returns:
        inputs: float32 array [num_examples, length, 2] (value, marker).
        targets: float32 array [num_examples], in [0, 2].

    Example:

    >>> from kerasrnn.tasks import adding_problem
    >>> x, y = adding_problem(3, length=10, seed=0)
    >>> exact = bool(abs((x[..., 0] * x[..., 1]).sum(1) - y).max() < 1e-6)
    >>> x.shape, x[..., 1].sum(axis=1).tolist(), exact
    ((3, 10, 2), [2.0, 2.0, 2.0], True)
    """
    check_int("length", length, minimum=2)
    check_int("num_examples", num_examples)
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.0, 1.0, (num_examples, length))
    half = length // 2
    rows = np.arange(num_examples)
    first = rng.integers(0, half, num_examples)
    second = rng.integers(half, length, num_examples)
    markers = np.zeros((num_examples, length))
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    targets = values[rows, first] + values[rows, second]
    inputs = np.stack([values, markers], axis=-1).astype(np.float32)
    return inputs, targets.astype(np.float32)


def copy_task(num_examples, delay, copy_length=10, num_symbols=8, seed=0):
    """The copy (delay-memory) task (Hochreiter & Schmidhuber 1997; Arjovsky et al. 2016).

    Input: `copy_length` symbols drawn from 1..num_symbols, then `delay` - 1 blanks (0),
    a delimiter (num_symbols + 1) and `copy_length` more blanks; total length
    delay + 2 * copy_length. Target: blanks everywhere except the last `copy_length`
    steps, which must repeat the first symbols in order (each held for `delay` +
    `copy_length` steps). 0 is a symbol here (the blank), not padding. A memoryless
    model that outputs blanks and then guesses gets a cross-entropy of
    copy_length * log(num_symbols) / (delay + 2 * copy_length) per step and an accuracy
    on the copied symbols of 1 / num_symbols.

    Returns:
        inputs: int32 array [num_examples, delay + 2 * copy_length], ids 0..num_symbols+1.
        targets: int32 array of the same shape, ids 0..num_symbols.

    Example:

    >>> from kerasrnn.tasks import copy_task
    >>> x, y = copy_task(2, delay=5, copy_length=3, num_symbols=4, seed=0)
    >>> x.shape, bool((y[:, -3:] == x[:, :3]).all()), int(x[0, 7]), int(y[:, :-3].max())
    ((2, 11), True, 5, 0)
    """
    for name, value, low in (
        ("delay", delay, 1),
        ("copy_length", copy_length, 1),
        ("num_symbols", num_symbols, 2),
    ):
        check_int(name, value, minimum=low)
    rng = np.random.default_rng(seed)
    total = delay + 2 * copy_length
    symbols = rng.integers(1, num_symbols + 1, (num_examples, copy_length))
    inputs = np.zeros((num_examples, total), np.int32)
    inputs[:, :copy_length] = symbols
    inputs[:, copy_length + delay - 1] = num_symbols + 1
    targets = np.zeros((num_examples, total), np.int32)
    targets[:, -copy_length:] = symbols
    return inputs, targets


_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _ordinal(day):
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _date_formats(date):
    """Ways of writing `date` (a datetime.date); two-digit years mean 1950-2049."""
    d, m, y = date.day, date.month, date.year
    month, mon = _MONTHS[m - 1], _MONTHS[m - 1][:3]
    weekday = _WEEKDAYS[date.weekday()]
    return [
        f"{d} {month} {y}",
        f"{month} {d}, {y}",
        f"{mon} {d} {y}",
        f"{d:02d}/{m:02d}/{y}",
        f"{d}.{m}.{y}",
        f"{y}/{m}/{d}",
        f"the {_ordinal(d)} of {month} {y}",
        f"{weekday}, {month} {_ordinal(d)}, {y}",
        f"{weekday} {d} {mon} '{y % 100:02d}",
        f"{mon}. {d}, '{y % 100:02d}",
        f"{d} {mon} {y % 100:02d}",
        f"{month} {y}, day {d}",
    ]


def date_translation_task(num_examples, seed=0, first_year=1950, last_year=2049):
    """A parallel corpus: dates written many ways -> ISO 8601 dates.

    Each source is a random date between 1 January `first_year` and 31 December
    `last_year` in one of twelve formats ("the 12th of march 2014", "12/03/2014",
    "wed 12 mar '14", ...; day-first where numeric), in lower, Title or UPPER case; the
    target is "2014-03-12". Sources are distinct, so any split of the examples is a
    split of unseen inputs. Two-digit years are read in the 100 years ending at
    `last_year`, so every source has exactly one correct target.

    Returns:
        sources, targets: two lists of `num_examples` strings.

    Example:

    >>> from kerasrnn.tasks import date_translation_task
    >>> sources, targets = date_translation_task(3, seed=0)
    >>> len(set(sources)), [len(t) for t in targets], targets[0][4]
    (3, [10, 10, 10], '-')
    """
    import datetime

    if not 1 <= last_year - first_year + 1 <= 100:
        raise ValueError(
            "two-digit years need a span of at most 100 years; got first_year="
            f"{first_year}, last_year={last_year}."
        )
    start = datetime.date(first_year, 1, 1).toordinal()
    days = datetime.date(last_year, 12, 31).toordinal() - start + 1
    capacity = days * len(_date_formats(datetime.date(2000, 1, 1))) * 3
    if not 1 <= num_examples <= capacity // 2:
        raise ValueError(
            f"`num_examples` must be in [1, {capacity // 2}] for these years; got {num_examples}."
        )
    rng = np.random.default_rng(seed)
    sources, targets, seen = [], [], set()
    while len(sources) < num_examples:
        date = datetime.date.fromordinal(start + int(rng.integers(days)))
        formats = _date_formats(date)
        text = formats[int(rng.integers(len(formats)))]
        text = (str.lower, str.title, str.upper)[int(rng.integers(3))](text)
        if text in seen:
            continue
        seen.add(text)
        sources.append(text)
        targets.append(date.isoformat())
    return sources, targets
