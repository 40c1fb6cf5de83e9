"""The one timing loop of bench/: interleaved rounds, and the figures made from them.

The machines these benchmarks run on are shared and noisy, so no contender is timed
alone: every round runs each contender in turn, the order rotating one place per round
(so that none always runs first, or always right after the same neighbour), and a
contender's figure in a round is compared only with figures of that same round. With
contenders c_1..c_n, round r runs c_{(r mod n)+1}, ..., c_n, c_1, ..., c_{r mod n}; a
contender's time in round r is the median of its `steps` calls there,

    t_c(r) = median_k seconds(call k of c in round r),

its ratio to a reference c_0 is t_c(r) / t_{c_0}(r) per round, and a table gives the
median over rounds of both, with the ratio's spread (`summary`).

    >>> from bench import timing
    >>> per_round = timing.interleaved_rounds([("a", lambda: 1), ("b", lambda: 2)],
    ...                                       rounds=3, steps=2)
    >>> sorted(per_round), len(per_round["a"])
    (['a', 'b'], 3)
    >>> timing.summary(timing.ratios([2.0, 4.0, 3.0], [1.0, 2.0, 1.0]))["median"]
    2.0
"""

import statistics
import time

import numpy as np


def timed(call):
    """`(call's result, seconds it took)`: one measurement by the wall clock."""
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def rotated(items, r):
    """`items` in round `r`'s order: rotated `r` places (the round-robin of the rounds)."""
    items = list(items)
    shift = r % len(items) if items else 0
    return items[shift:] + items[:shift]


def warm_up(call, times):
    """Calls `call` `times` times, untimed by the rounds (tracing, compiling, caches);
    returns the seconds they took and the results, for a caller that checks them."""
    start = time.perf_counter()
    results = [call() for _ in range(times)]
    return time.perf_counter() - start, results


def interleaved_rounds(contenders, rounds, steps=1, after_call=None, after_round=None, errors=None):
    """Times each `(label, call)` of `contenders` for `rounds` interleaved rounds.

    Args:
        contenders: sequence of `(label, call)`; `call()` does one step of work and
            returns whatever the caller wants to check (a loss, the outputs).
        rounds: how many rounds; each runs every contender in turn, the order rotated
            one place per round (`rotated`).
        steps: timed calls of a contender in a round; its figure there is their median.
        after_call: `after_call(label, result)` after every timed call (a finiteness
            check, the outputs to compare), outside the timing.
        after_round: `after_round(r, {label: seconds in round r})` after each round
            (a line per round), outside the timing.
        errors: a dict, or None. If a dict, a contender whose call raises is recorded
            there as `{label: exception}` (`detached`) and takes no further part
            (its list of rounds stays short); if None, the exception propagates.

    Returns:
        `{label: [seconds per round]}`, each the median of that round's `steps` calls.
    """
    per_round = {label: [] for label, _ in contenders}
    for r in range(rounds):
        this_round = {}
        for label, call in rotated(contenders, r):
            if errors is not None and label in errors:
                continue
            samples = []
            try:
                for _ in range(steps):
                    result, seconds = timed(call)
                    samples.append(seconds)
                    if after_call is not None:
                        after_call(label, result)
            except Exception as error:
                if errors is None:
                    raise
                errors[label] = detached(error)
                continue
            this_round[label] = statistics.median(samples)
            per_round[label].append(this_round[label])
        if after_round is not None:
            after_round(r, this_round)
    return per_round


def detached(error):
    """`error` without its tracebacks (and those of its causes): a kept exception must not
    keep the failed call's frames alive, and with them its tensors (GPU memory)."""
    seen, link = set(), error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__traceback__ = None
        link = link.__cause__ or link.__context__
    return error


def ratios(values, reference):
    """Per-round ratios `values[r] / reference[r]` (only rounds both have)."""
    return [a / b for a, b in zip(values, reference)]


def summary(values):
    """`{"median", "q1", "q3", "min", "max"}` of a list of per-round figures (quartiles
    by linear interpolation, as `numpy.percentile`)."""
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return {
        "median": median,
        "q1": q1,
        "q3": q3,
        "min": float(min(values)),
        "max": float(max(values)),
    }
