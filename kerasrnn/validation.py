"""Argument checks shared by the whole package, each raising a one-line `ValueError` that
names the argument, the value given and what is expected.

They run on Python values before any tensor op, so a wrong argument fails where it is
given, not deep inside a traced loop. A `bool` is never taken for a number (``True`` is
an `int` in Python, and ``units=True`` is a mistake, not 1).
"""

import numbers

import numpy as np


def is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _int_phrase(minimum):
    if minimum == 1:
        return "a positive integer"
    if minimum == 0:
        return "a non-negative integer"
    return f"an integer >= {minimum}"


def check_int(name, value, minimum=1, allow_none=False):
    """`value` as a Python int, if it is an integer >= `minimum` (or None when
    `allow_none`).

    >>> check_int("units", 8)
    8
    >>> check_int("units", 0)
    Traceback (most recent call last):
    ...
    ValueError: `units` must be a positive integer, got units=0.
    """
    if value is None and allow_none:
        return None
    if not is_int(value) or value < minimum:
        expected = _int_phrase(minimum) + (" or None" if allow_none else "")
        raise ValueError(f"`{name}` must be {expected}, got {name}={value!r}.")
    return int(value)


def check_id(name, value, allow_none=False):
    """`value` if it is an integer token id (any integer: vocabularies choose their own
    special ids), or None when `allow_none`."""
    if value is None and allow_none:
        return None
    if not is_int(value):
        expected = "an integer id" + (" or None" if allow_none else "")
        raise ValueError(f"`{name}` must be {expected}, got {name}={value!r}.")
    return int(value)


def check_number(name, value, minimum=0.0, allow_none=False):
    """`value` as a float, if it is a real number >= `minimum` (or None when
    `allow_none`)."""
    if value is None and allow_none:
        return None
    if not is_number(value) or value < minimum:
        expected = f"a number >= {minimum:g}" + (" or None" if allow_none else "")
        raise ValueError(f"`{name}` must be {expected}; got {name}={value!r}.")
    return float(value)


def check_rate(name, value):
    """`value` as a float, if it is a rate in [0, 1) (a dropout or smoothing rate: 1
    would drop or smooth everything)."""
    if not is_number(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"`{name}` must be in [0, 1), got {name}={value!r}.")
    return float(value)


def check_choice(name, value, choices):
    """`value` if it is one of `choices`."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}; got {name}={value!r}.")
    return value
