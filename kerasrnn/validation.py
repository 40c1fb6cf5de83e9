"""Argument checks shared by the whole package, each raising a one-line `ValueError` that
names the argument, the value given and what is expected.

They run on Python values before any tensor op, so a wrong argument fails where it is
given, not deep inside a traced loop. One rule for every argument of the package:

- an integer is a Python `int` or a NumPy integer (``np.int64(8)``, as a shape or an
  array element gives it) and comes back as a Python `int`, so configs stay JSON;
- a number is any real number (Python or NumPy) and comes back as a Python `float`;
- a `bool` (Python's or NumPy's) is never taken for a number: ``True`` is an `int` in
  Python, and ``units=True`` is a mistake, not 1.
"""

import math
import numbers

import numpy as np


def is_int(value):
    """True for a Python or NumPy integer, False for a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value):
    """True for a Python or NumPy real number, False for a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _int_phrase(minimum, maximum):
    if maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if minimum is None:
        return "an integer"
    return f"an integer >= {minimum}"


def check_int(name, value, minimum=1, maximum=None, allow_none=False):
    """`value` as a Python int, if it is an integer in [`minimum`, `maximum`] (either
    bound None for none), or None when `allow_none`.

    >>> check_int("units", np.int64(8))
    8
    >>> check_int("units", 0)
    Traceback (most recent call last):
    ...
    ValueError: `units` must be an integer >= 1, got units=0.
    """
    if value is None and allow_none:
        return None
    if (
        not is_int(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        expected = _int_phrase(minimum, maximum) + (" or None" if allow_none else "")
        raise ValueError(f"`{name}` must be {expected}, got {name}={value!r}.")
    return int(value)


def check_id(name, value, allow_none=False):
    """`value` as a Python int if it is an integer token id (any integer: vocabularies
    choose their own special ids), or None when `allow_none`."""
    return check_int(name, value, minimum=None, allow_none=allow_none)


def _parse_interval(interval):
    """'[0, 1)' -> (0.0, 1.0, True, False): the bounds and whether each is closed."""
    low, high = (part.strip() for part in interval.split(","))
    return float(low[1:]), float(high[:-1]), low[0] == "[", high[-1] == "]"


def _interval_phrase(interval):
    low, high, low_closed, _ = _parse_interval(interval)
    if math.isinf(high):
        return f"a number {'>=' if low_closed else '>'} {low:g}"
    return f"in {interval}"


def check_number(name, value, interval="[0, inf)", allow_none=False):
    """`value` as a Python float, if it is a real number in `interval` (written as in
    mathematics: '[0, 1)', '(0, 1]', '(0, inf)'), or None when `allow_none`.

    >>> check_number("top_p", 0.9, "(0, 1]")
    0.9
    >>> check_number("top_p", 0, "(0, 1]")
    Traceback (most recent call last):
    ...
    ValueError: `top_p` must be in (0, 1], got top_p=0.
    """
    if value is None and allow_none:
        return None
    low, high, low_closed, high_closed = _parse_interval(interval)
    inside = is_number(value) and (
        (low <= value if low_closed else low < value)
        and (value <= high if high_closed else value < high)
    )
    if not inside:
        expected = _interval_phrase(interval) + (" or None" if allow_none else "")
        raise ValueError(f"`{name}` must be {expected}, got {name}={value!r}.")
    return float(value)


def check_rate(name, value):
    """`value` as a float, if it is a rate in [0, 1) (a dropout or smoothing rate: 1
    would drop or smooth everything)."""
    return check_number(name, value, "[0, 1)")


def check_choice(name, value, choices):
    """`value` if it is one of `choices`."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}; got {name}={value!r}.")
    return value
