"""bench/timing.py: the order of the rounds, the per-round medians, errors and summaries."""

import statistics

import numpy as np
import pytest

from bench import timing


class FakeClock:
    """perf_counter that advances only when a contender runs, by the seconds it says."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", fake)
    return fake


def test_rotated_is_a_round_robin():
    assert [timing.rotated("abc", r) for r in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]
    assert timing.rotated([], 3) == []


def test_rounds_rotate_and_each_figure_is_the_median_of_its_steps(clock):
    calls, durations = [], {"a": iter([1, 5, 3, 2, 2, 9]), "b": iter([4, 4, 4, 8, 1, 1])}

    def contender(label):
        def call():
            calls.append(label)
            clock.now += next(durations[label])
            return label.upper()

        return call

    seen, rounds = [], []
    per_round = timing.interleaved_rounds(
        [("a", contender("a")), ("b", contender("b"))],
        rounds=2,
        steps=3,
        after_call=lambda label, result: seen.append((label, result)),
        after_round=lambda r, figures: rounds.append((r, dict(figures))),
    )
    # round 0: a then b; round 1: b then a
    assert calls == ["a"] * 3 + ["b"] * 3 + ["b"] * 3 + ["a"] * 3
    assert per_round == {
        "a": [statistics.median([1, 5, 3]), statistics.median([2, 2, 9])],
        "b": [statistics.median([4, 4, 4]), statistics.median([8, 1, 1])],
    }
    assert seen[:4] == [("a", "A")] * 3 + [("b", "B")]
    assert rounds == [(0, {"a": 3, "b": 4}), (1, {"b": 1, "a": 2})]


def test_a_failing_contender_is_recorded_and_the_others_go_on():
    def broken():
        raise MemoryError("out of memory")

    errors = {}
    per_round = timing.interleaved_rounds(
        [("ok", lambda: 0), ("broken", broken)], rounds=3, errors=errors
    )
    assert len(per_round["ok"]) == 3 and per_round["broken"] == []
    assert isinstance(errors["broken"], MemoryError)
    with pytest.raises(MemoryError):
        timing.interleaved_rounds([("broken", broken)], rounds=1)


def test_warm_up_and_timed(clock):
    def call():
        clock.now += 2
        return 7

    assert timing.warm_up(call, 3) == (6, [7, 7, 7])
    assert timing.timed(call) == (7, 2)


def test_ratios_and_summary_against_numpy():
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    reference = [1.0, 2.0, 2.0, 0.5, 3.0, 1.3]
    ratios = timing.ratios(values, reference)
    assert ratios == [v / r for v, r in zip(values, reference)]
    summary = timing.summary(ratios)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    assert summary == pytest.approx(
        {"median": median, "q1": q1, "q3": q3, "min": min(ratios), "max": max(ratios)}
    )
    assert summary["median"] == pytest.approx(statistics.median(ratios))


def test_a_kept_error_keeps_no_frames():
    def broken():
        big = bytearray(10)  # noqa: F841 - a local the traceback would keep alive
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise RuntimeError("outer") from inner

    errors = {}
    timing.interleaved_rounds([("broken", broken)], rounds=1, errors=errors)
    error = errors["broken"]
    assert isinstance(error, RuntimeError) and str(error) == "outer"
    assert error.__traceback__ is None and error.__cause__.__traceback__ is None
