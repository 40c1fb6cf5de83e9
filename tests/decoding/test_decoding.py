"""Greedy, sampling and beam search against brute-force enumeration and hand-built
step functions whose best sequences are known."""

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding

END, PAD = 3, 0


def table_step(rows):
    """A state-free decoder: p(y_t | y_{t-1}) = rows[y_{t-1}]; token 0 starts."""
    with np.errstate(divide="ignore"):  # p = 0 -> log p = -inf: never chosen
        log_table = ops.convert_to_tensor(np.log(np.asarray(rows, "float32")))

    def step(tokens, states):
        return ops.take(log_table, tokens, axis=0), states

    return step


def recurrent_step(vocab=4, units=5, seed=0):
    """A small random recurrent decoder with a (h, (c,)) nested state."""
    rng = np.random.default_rng(seed)
    emb = ops.convert_to_tensor(rng.normal(size=(vocab, units)).astype("float32"))
    w = ops.convert_to_tensor(rng.normal(size=(units, units)).astype("float32"))
    out = ops.convert_to_tensor(2 * rng.normal(size=(units, vocab)).astype("float32"))

    def step(tokens, states):
        h, (c,) = states
        c = ops.convert_to_tensor(c)  # NumPy + torch tensor is no torch op
        h = ops.tanh(ops.matmul(h, w) + ops.take(emb, tokens, axis=0) + c)
        return ops.matmul(h, out), (h, (c * 0.5,))

    def numpy_log_probs(prefix, h0, c0):
        """log p(next | prefix) for every next token, by the same recurrence in NumPy."""
        e, ww, o = (ops.convert_to_numpy(x) for x in (emb, w, out))
        h, c = h0, c0
        for token in prefix:
            h = np.tanh(h @ ww + e[token] + c)
            c = c * 0.5
        logits = (h @ o).astype("float64")
        return logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()

    return step, numpy_log_probs


def initial_states(batch, units=5, seed=1):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(batch, units)).astype("float32")
    c = 0.1 * rng.normal(size=(batch, units)).astype("float32")
    return h, c


def np_(x):
    return ops.convert_to_numpy(x)


def brute_force(numpy_log_probs, h0, c0, vocab, max_length, normalise):
    """Every complete sequence (ends with END, or reaches max_length) with its score."""
    results = []
    for length in range(1, max_length + 1):
        for seq in itertools.product(range(vocab), repeat=length):
            if END in seq[:-1] or (length < max_length and seq[-1] != END):
                continue
            logp = sum(numpy_log_probs((0,) + seq[:i], h0, c0)[seq[i]] for i in range(length))
            results.append((seq, logp, logp / normalise(length)))
    return sorted(results, key=lambda r: -r[2])


def test_greedy_follows_argmax_and_stops_at_end():
    step = table_step(
        [[0, 0.5, 0.2, 0.3], [0, 0.1, 0.6, 0.3], [0, 0.2, 0.1, 0.7], [0, 0.4, 0.3, 0.3]]
    )
    out = decoding.greedy_search(step, [0, 1], (), max_length=5, end_token=END)
    assert np_(out.tokens).tolist() == [[[1, 2, 3, 0, 0]], [[2, 3, 0, 0, 0]]]
    assert np_(out.lengths).tolist() == [[3], [2]]
    np.testing.assert_allclose(
        np_(out.log_probs)[:, 0], np.log([0.5 * 0.6 * 0.7, 0.6 * 0.7]), rtol=1e-5
    )
    assert out.alignments is None


@pytest.mark.parametrize("batch", [1, 3])
def test_beam_size_one_equals_greedy(batch):
    step, _ = recurrent_step()
    states = initial_states(batch)
    states = (states[0], (states[1],))
    start = np.zeros((batch,), "int32")
    greedy = decoding.greedy_search(step, start, states, max_length=7, end_token=END)
    beam = decoding.beam_search(
        step, start, states, max_length=7, end_token=END, beam_size=1, n_best=1
    )
    np.testing.assert_array_equal(np_(beam.tokens), np_(greedy.tokens))
    np.testing.assert_array_equal(np_(beam.lengths), np_(greedy.lengths))
    np.testing.assert_allclose(np_(beam.log_probs), np_(greedy.log_probs), rtol=1e-5)


def test_beam_finds_a_better_sequence_than_greedy():
    # Greedy takes 1 (p=.5) and then must end with p=.4: .2. Beam keeps 2 (p=.4), whose
    # end has p=.9: .36.
    step = table_step([[0, 0.5, 0.4, 0.1], [0, 0.3, 0.3, 0.4], [0, 0.05, 0.05, 0.9], [0.25] * 4])
    greedy = decoding.greedy_search(step, [0], (), max_length=4, end_token=END)
    beam = decoding.beam_search(step, [0], (), max_length=4, end_token=END, beam_size=2)
    assert np_(greedy.tokens)[0, 0].tolist() == [1, 3, 0, 0]
    assert np_(beam.tokens)[0, 0].tolist() == [2, 3, 0, 0]
    np.testing.assert_allclose(np_(greedy.log_probs)[0, 0], np.log(0.2), rtol=1e-5)
    np.testing.assert_allclose(np_(beam.log_probs)[0, 0], np.log(0.36), rtol=1e-5)
    assert np_(beam.log_probs)[0, 0] > np_(greedy.log_probs)[0, 0]


# p([END]) = .4 beats p([1, 2, END]) = .55 * .9 * .8 = .396 on raw log-probability,
# but per token the long one is far better.
LENGTH_TABLE = [[0, 0.55, 0.05, 0.4], [0, 0.08, 0.9, 0.02], [0, 0.1, 0.1, 0.8], [0.25] * 4]


@pytest.mark.parametrize(
    "normalization, alpha, winner",
    [(None, 0.6, [3]), ("average", 0.6, [1, 2, 3]), ("gnmt", 1.0, [1, 2, 3])],
)
def test_length_normalisation_changes_the_winner(normalization, alpha, winner):
    out = decoding.beam_search(
        table_step(LENGTH_TABLE),
        [0],
        (),
        max_length=6,
        end_token=END,
        beam_size=2,
        scorer=decoding.Scorer(normalization, alpha=alpha),
    )
    best = np_(out.tokens)[0, 0]
    assert best[: len(winner)].tolist() == winner
    assert (best[len(winner) :] == PAD).all()
    lengths = np_(out.lengths)[0]
    penalty = {None: np.ones(2), "average": lengths, "gnmt": ((5 + lengths) / 6) ** alpha}
    np.testing.assert_allclose(
        np_(out.scores)[0], np_(out.log_probs)[0] / penalty[normalization], rtol=1e-5
    )
    assert np_(out.scores)[0, 0] >= np_(out.scores)[0, 1]


def test_finished_hypotheses_stay_frozen():
    # Example 0 completes [END] at step 1 and keeps searching until [1, 2, END] at
    # step 3; example 1 (a different start) runs beside it in the same batch.
    out = decoding.beam_search(
        table_step(LENGTH_TABLE),
        [0, 2],
        (),
        max_length=6,
        end_token=END,
        beam_size=2,
        scorer=decoding.Scorer(None),
    )
    tokens, log_probs, lengths = np_(out.tokens), np_(out.log_probs), np_(out.lengths)
    assert tokens[0].tolist() == [[3, 0, 0, 0, 0, 0], [1, 2, 3, 0, 0, 0]]
    assert lengths[0].tolist() == [1, 3]
    np.testing.assert_allclose(log_probs[0], np.log([0.4, 0.396]), rtol=1e-5)
    # From token 2: [END] (.8), then [1, 2, END] (.1 * .9 * .8) vs [2, END] (.1 * .8).
    assert tokens[1, 0].tolist() == [3, 0, 0, 0, 0, 0]
    np.testing.assert_allclose(log_probs[1, 0], np.log(0.8), rtol=1e-5)


@pytest.mark.parametrize("normalization", [None, "average", "gnmt"])
def test_exhaustive_beam_matches_brute_force(normalization):
    vocab, max_length = 4, 3
    step, numpy_log_probs = recurrent_step(vocab)
    h0, c0 = initial_states(2)
    # 40 complete sequences exist; a beam that large never prunes, so it must return
    # all of them, correctly scored and ranked.
    k = 40
    out = decoding.beam_search(
        step,
        [0, 0],
        (h0, (c0,)),
        max_length=max_length,
        end_token=END,
        beam_size=k,
        scorer=decoding.Scorer(normalization, alpha=0.8),
    )

    def normalise(t):
        return {None: 1.0, "average": t, "gnmt": ((5 + t) / 6) ** 0.8}[normalization]

    for b in range(2):
        expected = brute_force(numpy_log_probs, h0[b], c0[b], vocab, max_length, normalise)
        assert len(expected) == k
        np.testing.assert_allclose(
            np_(out.scores)[b], [r[2] for r in expected], rtol=1e-4, atol=1e-5
        )
        best_seq = expected[0][0]
        got = np_(out.tokens)[b, 0]
        assert tuple(got[: len(best_seq)]) == best_seq
        assert np_(out.lengths)[b, 0] == len(best_seq)


def test_n_best_are_distinct_and_sorted():
    step, _ = recurrent_step()
    h0, c0 = initial_states(3)
    out = decoding.beam_search(
        step, [0, 1, 2], (h0, (c0,)), max_length=6, end_token=END, beam_size=4, n_best=3
    )
    assert np_(out.tokens).shape == (3, 3, 6)
    scores = np_(out.scores)
    assert (np.diff(scores, axis=1) <= 1e-6).all()
    for b in range(3):
        assert len({tuple(s) for s in np_(out.tokens)[b]}) == 3


def test_length_limit_from_source_ratio():
    step = table_step([[0, 0.9, 0.05, 0.05]] * 4)
    rules = decoding.Constraints(max_length_ratio=1.5)
    kwargs = dict(max_length=8, end_token=END, source_lengths=[1, 3, 20])
    greedy = decoding.GreedySearch(rules)(step, [0, 0, 0], (), **kwargs)
    beam = decoding.BeamSearch(beam_size=2, constraints=rules)(step, [0, 0, 0], (), **kwargs)
    assert np_(greedy.lengths)[:, 0].tolist() == [2, 5, 8]
    assert np_(beam.lengths)[:, 0].tolist() == [2, 5, 8]
    assert (np_(greedy.tokens)[0, 0, 2:] == PAD).all()


def test_top_k_never_leaves_the_k_most_likely():
    logits = np.array([[0.0, 3.0, 1.0, 2.5, -1.0, 2.9]], "float32")
    table = ops.convert_to_tensor(np.repeat(logits, 6, axis=0))

    def step(tokens, states):
        return ops.take(table, tokens, axis=0), states

    out = decoding.sample(
        step, np.zeros((64,), "int32"), (), max_length=8, top_k=3, temperature=2.0, seed=3
    )
    tokens = set(np_(out.tokens).ravel().tolist())
    assert tokens <= {1, 3, 5}
    assert len(tokens) == 3  # a flat temperature does reach all three
    # A nucleus of p=0.01 keeps only the most likely token: greedy.
    nucleus = decoding.sample(step, np.zeros((8,), "int32"), (), max_length=4, top_p=0.01, seed=3)
    assert set(np_(nucleus.tokens).ravel().tolist()) == {1}


@pytest.mark.large
def test_seeded_sampling_repeats():
    step, _ = recurrent_step()
    h0, c0 = initial_states(16)

    def run(seed):
        out = decoding.sample(
            step,
            np.zeros((16,), "int32"),
            (h0, (c0,)),
            max_length=10,
            end_token=END,
            temperature=1.5,
            top_p=0.95,
            seed=seed,
        )
        return np_(out.tokens)

    np.testing.assert_array_equal(run(11), run(11))
    assert not np.array_equal(run(11), run(12))


def test_sample_scores_are_model_log_probs():
    step, numpy_log_probs = recurrent_step()
    h0, c0 = initial_states(4)
    out = decoding.sample(
        step,
        np.zeros((4,), "int32"),
        (h0, (c0,)),
        max_length=5,
        end_token=END,
        temperature=0.7,
        seed=5,
    )
    for b in range(4):
        seq = np_(out.tokens)[b, 0, : np_(out.lengths)[b, 0]]
        expected = sum(
            numpy_log_probs((0,) + tuple(seq[:i]), h0[b], c0[b])[seq[i]] for i in range(len(seq))
        )
        np.testing.assert_allclose(np_(out.log_probs)[b, 0], expected, rtol=1e-4)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: decoding.BeamSearch(beam_size=0), "beam_size"),
        (lambda: decoding.BeamSearch(beam_size=2, n_best=3), "n_best"),
        (lambda: decoding.Scorer("mean"), "length_normalization"),
        (lambda: decoding.Scorer(coverage_penalty_weight=-1), "coverage_penalty_weight"),
        (lambda: decoding.BeamSearch(drop_finished="yes"), "drop_finished"),
        (lambda: decoding.BeamSearch()(table_step(LENGTH_TABLE), [0], (), 0, END), "max_length"),
        (
            lambda: decoding.BeamSearch()(table_step(LENGTH_TABLE), [0], (), 4),
            "needs an `end_token`",
        ),
        (
            lambda: decoding.BeamSearch(constraints=decoding.Constraints(max_length_ratio=1.0))(
                table_step(LENGTH_TABLE), [0], (), 4, END
            ),
            "source_lengths",
        ),
        (lambda: decoding.get("nucleus"), "Unknown decoding strategy 'nucleus'"),
    ],
)
def test_bad_arguments_are_named(build, message):
    step = table_step(LENGTH_TABLE)
    with pytest.raises(ValueError, match=message):
        build()
    with pytest.raises(ValueError, match="temperature"):
        decoding.sample(step, [0], (), max_length=3, temperature=0)
    with pytest.raises(ValueError, match="start_tokens"):
        decoding.greedy_search(step, [[0]], (), max_length=3)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function is TF-only")
@pytest.mark.parametrize("jit_compile", [False, True])
def test_inside_tf_function_and_xla(jit_compile):
    import tensorflow as tf

    step, _ = recurrent_step()
    h0, c0 = initial_states(3)
    sampler = decoding.RandomSampling(top_k=2, seed=4)

    def run(start, h, c):
        greedy = decoding.greedy_search(step, start, (h, (c,)), max_length=6, end_token=END)
        beam = decoding.beam_search(
            step,
            start,
            (h, (c,)),
            max_length=6,
            end_token=END,
            beam_size=3,
            scorer=decoding.Scorer("gnmt"),
        )
        sampled = sampler(step, start, (h, (c,)), 6, END)
        return greedy, beam, sampled

    # An unknown batch size, as in a serving signature.
    spec = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None, 5]), tf.TensorSpec([None, 5])]
    compiled = tf.function(run, input_signature=spec, jit_compile=jit_compile)
    start = np.zeros((3,), "int32")
    eager = run(start, h0, c0)
    graph = compiled(start, h0, c0)
    for a, b in zip(eager[:2], graph[:2]):
        np.testing.assert_array_equal(np_(a.tokens), np_(b.tokens))
        np.testing.assert_allclose(np_(a.scores), np_(b.scores), rtol=1e-5)
    assert set(np_(graph[2].tokens).ravel().tolist()) <= {0, 1, 2, 3}


def test_unknown_arguments_name_what_is_taken_and_where_tfa_names_go():
    """An argument a strategy does not take gets one line naming it, the arguments it
    takes and kerasrnn.compat.tfa (which knows TF Addons' names; the core knows none)."""
    for strategy, name, value in [
        (decoding.BeamSearch, "length_penalty_weight", 0.6),
        (decoding.BeamSearch, "beam_width", 5),
        (decoding.BeamSearch, "colour", 1),
        (decoding.CompetingBeamSearch, "groups", 2),  # one beam
    ]:
        with pytest.raises(TypeError) as error:
            strategy(**{name: value})
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(f"{strategy.__name__} got an unexpected argument {name}=")
        assert "it takes beam_size, n_best, scorer, constraints" in message
        assert "kerasrnn.compat.tfa.beam_search_decoder" in message
    # the function names itself, before any op runs
    step = lambda tokens, states: (ops.zeros((3, 4)), states)  # noqa: E731
    with pytest.raises(TypeError, match=r"^beam_search got .*length_penalty_weight=0\.6.*compat"):
        decoding.beam_search(step, [0], (), 4, end_token=0, length_penalty_weight=0.6)


@pytest.mark.parametrize(
    "strategy",
    [
        decoding.GreedySearch(),
        decoding.RandomSampling(temperature=0.5, top_k=3, top_p=0.9, seed=1),
        decoding.BeamSearch(beam_size=3, n_best=2, scorer=decoding.Scorer("gnmt", 0.8)),
        decoding.CompetingBeamSearch(beam_size=2, scorer=decoding.TFAScorer(0.6)),
        decoding.BeamSearch(beam_size=4, groups=2, n_best=3),
        decoding.DiverseBeamSearch(4, groups=2, diversity=0.5, scorer=decoding.Scorer(None)),
    ],
)
def test_strategies_round_trip_through_config_and_give_the_same_output(strategy):
    again = decoding.get(decoding.serialize(strategy))
    assert type(again) is type(strategy)
    assert again.get_config() == strategy.get_config()
    assert type(getattr(again, "scorer", None)) is type(getattr(strategy, "scorer", None))
    step, _ = recurrent_step()
    h0, c0 = initial_states(3)
    outputs = [s(step, np.zeros((3,), "int32"), (h0, (c0,)), 6, END) for s in (strategy, again)]
    np.testing.assert_array_equal(np_(outputs[0].tokens), np_(outputs[1].tokens))
    np.testing.assert_allclose(np_(outputs[0].scores), np_(outputs[1].scores))


def test_names_give_the_default_strategies():
    assert type(decoding.get("greedy")) is decoding.GreedySearch
    assert type(decoding.get("sample")) is decoding.RandomSampling
    beam = decoding.get("beam")
    assert type(beam) is decoding.BeamSearch and beam.beam_size == 4
    with pytest.raises(TypeError, match="'greedy', 'sample', 'beam'"):
        decoding.get(3)


def test_tiled_memory_is_detected_eagerly():
    """A step function whose memory was laid out with np.tile instead of repeated
    per example gives the beams of one example different logits at the first step."""
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(3, 4)).astype("float32")
    kernel = rng.normal(size=(4, 5)).astype("float32")

    def step_on(rows_memory):
        table = ops.convert_to_tensor(rows_memory @ kernel)
        return lambda tokens, states: (table + ops.cast(tokens, "float32")[:, None], states)

    beam = decoding.BeamSearch(beam_size=2)
    start = np.zeros((3,), "int32")
    good = beam(step_on(np.asarray(decoding.repeat_beams(memory, 2))), start, (), 4, END)
    assert np_(good.tokens).shape == (3, 2, 4)
    with pytest.raises(ValueError, match=r"np\.tile.*repeat_beams\(memory, 2\)"):
        beam(step_on(np.tile(memory, (2, 1))), start, (), 4, END)
