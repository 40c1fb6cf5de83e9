"""min_length, block_ngram_repeat and the logits processor, against NumPy references:
which tokens are blocked, greedy search re-implemented in NumPy, and exhaustive search."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasrnn import decoding
from kerasrnn.decoding.constraints import repeated_ngram_tokens
from tests.decoding.reference import (
    RecurrentDecoder,
    complete_sequences,
    has_repeated_ngram,
    np_,
)

END, PAD = 3, 0


def numpy_blocked(prefix, n, vocab):
    """Tokens v for which prefix + [v] repeats an n-gram of prefix + [v]: by listing them."""
    return [
        v
        for v in range(vocab)
        if len(prefix) + 1 >= n
        and has_repeated_ngram(list(prefix) + [v], n)
        and tuple((list(prefix) + [v])[-n:])
        in {tuple(prefix[i : i + n]) for i in range(len(prefix) - n + 1)}
    ]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_blocked_tokens_equal_numpy_enumeration(n):
    rng = np.random.default_rng(n)
    vocab, width = 5, 9
    tokens = rng.integers(0, 3, size=(40, width)).astype("int32")  # few ids: many repeats
    for t in range(width):
        buffer = tokens.copy()
        buffer[:, t:] = PAD  # the decoders' buffer: pad from position t on
        got = np_(repeated_ngram_tokens(ops.convert_to_tensor(buffer), t, n, vocab))
        for row in range(len(buffer)):
            expected = numpy_blocked(buffer[row, :t].tolist(), n, vocab)
            assert np.flatnonzero(got[row]).tolist() == expected, (row, t)


def greedy_numpy(model, h, memory, max_length, min_length=0, no_repeat=None, forbid=()):
    """Greedy search with the constraints, step by step in NumPy."""
    seq, log_p = [], 0.0
    for t in range(max_length):
        logp = model.next_log_probs(seq, h, memory).copy()
        blocked = set(forbid)
        if t < min_length:
            blocked.add(END)
        if no_repeat:
            blocked |= set(numpy_blocked(seq, no_repeat, model.vocab))
        masked = np.where([v in blocked for v in range(model.vocab)], -np.inf, logp)
        token = int(np.argmax(masked))
        seq.append(token)
        log_p += logp[token]
        if token == END:
            break
    return seq, log_p


@pytest.mark.parametrize("min_length, no_repeat", [(3, None), (0, 1), (0, 2), (2, 2)])
def test_greedy_with_constraints_equals_numpy(min_length, no_repeat):
    model = RecurrentDecoder(vocab=5, source=3, seed=2)
    h, memory = model.initial_states(6, seed=4)
    rules = decoding.Constraints(min_length=min_length or None, block_ngram_repeat=no_repeat)
    out = decoding.greedy_search(
        model, [0] * 6, (h, memory), max_length=7, end_token=END, constraints=rules
    )
    plain = decoding.greedy_search(model, [0] * 6, (h, memory), max_length=7, end_token=END)
    assert not np.array_equal(np_(out.tokens), np_(plain.tokens))  # the constraint bit
    for b in range(6):
        seq, log_p = greedy_numpy(model, h[b], memory[b], 7, min_length, no_repeat)
        length = np_(out.lengths)[b, 0]
        assert np_(out.tokens)[b, 0, :length].tolist() == seq
        # Blocked tokens are masked, not renormalised: scores stay the model's.
        np.testing.assert_allclose(np_(out.log_probs)[b, 0], log_p, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("min_length, no_repeat", [(2, None), (None, 1), (1, 2)])
def test_exhaustive_beam_with_constraints(min_length, no_repeat):
    model = RecurrentDecoder(vocab=4, source=3, attentive=False)
    h, memory = model.initial_states(2)
    expected_count = len(list(complete_sequences(4, END, 4, min_length or 0, no_repeat)))
    k = min(expected_count, 64)
    out = decoding.beam_search(
        model,
        [0, 0],
        (h, memory),
        4,
        END,
        beam_size=k,
        scorer=decoding.Scorer(None),
        constraints=decoding.Constraints(min_length=min_length, block_ngram_repeat=no_repeat),
    )
    for b in range(2):
        expected = sorted(
            (
                (seq, model.score(seq, h[b], memory[b])[0])
                for seq in complete_sequences(4, END, 4, min_length or 0, no_repeat)
            ),
            key=lambda r: -r[1],
        )[:k]
        np.testing.assert_allclose(
            np_(out.scores)[b], [r[1] for r in expected], rtol=1e-4, atol=1e-5
        )
        for n in range(k):
            seq = np_(out.tokens)[b, n, : np_(out.lengths)[b, n]].tolist()
            assert END not in seq[: min_length or 0]
            if no_repeat:
                assert not has_repeated_ngram(seq, no_repeat)


def test_min_length_holds_back_the_end_in_sampling():
    table = ops.convert_to_tensor(np.log(np.array([[0.05, 0.05, 0.05, 0.85]] * 4, "float32")))

    def step(tokens, states):
        return ops.take(table, tokens, axis=0), states

    out = decoding.sample(
        step,
        [0] * 200,
        (),
        max_length=6,
        end_token=END,
        seed=1,
        constraints=decoding.Constraints(min_length=3),
    )
    tokens = np_(out.tokens)[:, 0]
    assert (tokens[:, :3] != END).all()
    assert (tokens[:, 3] == END).mean() > 0.7  # and then it comes as the model wants


def test_logits_processor_sees_step_and_tokens_and_constrains():
    """A processor that forces token 2 first, never allows token 1, and forbids
    repeating the previous token (read from `tokens` at `step - 1`): the output must be
    NumPy's greedy search under the same rules, which holds only if the processor gets
    the right step and tokens."""
    model = RecurrentDecoder(vocab=5, source=3, seed=2)
    h, memory = model.initial_states(4, seed=4)
    seen = []

    def processor(step, tokens, logits):
        if keras.backend.backend() == "tensorflow":  # eager: record what it was given
            seen.append((int(step), np_(tokens).copy()))
        ids = ops.arange(5)[None, :]
        previous = ops.take_along_axis(
            tokens, ops.full((ops.shape(tokens)[0], 1), ops.maximum(step - 1, 0), "int32"), axis=1
        )
        banned = ops.logical_or(ids == 1, ops.logical_and(step > 0, ids == previous))
        logits = ops.where(banned, -1e9, logits)
        forced = ops.where(ids == 2, 0.0, -1e9)
        return ops.where(step == 0, forced, logits)

    out = decoding.greedy_search(
        model,
        [0] * 4,
        (h, memory),
        max_length=6,
        end_token=END,
        constraints=decoding.Constraints(logits_processors=[processor]),
    )
    tokens, lengths = np_(out.tokens)[:, 0], np_(out.lengths)[:, 0]
    for b in range(4):
        seq, log_p = [], 0.0
        for t in range(6):
            logp = model.next_log_probs(seq, h[b], memory[b])
            allowed = [2] if t == 0 else [v for v in range(5) if v != 1 and v != seq[-1]]
            token = max(allowed, key=lambda v: logp[v])
            # The processed logits are renormalised by the log-softmax after the processor.
            log_p += 0.0 if t == 0 else logp[token] - np.log(np.exp(logp[allowed]).sum())
            seq.append(token)
            if token == END:
                break
        assert tokens[b, : lengths[b]].tolist() == seq
        np.testing.assert_allclose(np_(out.log_probs)[b, 0], log_p, rtol=1e-4, atol=1e-5)
    for step, buffer in seen[1:]:  # seen[0] is the shape probe before the loop
        expected = tokens.copy()
        expected[:, step:] = PAD
        live = lengths >= step
        np.testing.assert_array_equal(buffer[live][:, :step], expected[live][:, :step])


def test_beam_logits_processor_gets_each_hypothesis():
    model = RecurrentDecoder(vocab=5, source=3, seed=2)
    h, memory = model.initial_states(2, seed=4)

    def no_token_one(step, tokens, logits):
        assert tuple(tokens.shape[1:]) == (6,)
        return ops.where(ops.arange(5)[None, :] == 1, -1e9, logits)

    out = decoding.beam_search(
        model,
        [0, 0],
        (h, memory),
        6,
        END,
        beam_size=3,
        constraints=decoding.Constraints(logits_processors=[no_token_one]),
    )
    assert not (np_(out.tokens) == 1).any()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(min_length=-1), ValueError, "min_length"),
        (dict(block_ngram_repeat=0), ValueError, "block_ngram_repeat"),
        (dict(forbidden_tokens=[-2]), ValueError, "forbidden_tokens"),
        (dict(max_length_ratio=0), ValueError, "max_length_ratio"),
        (dict(logits_processors=[3]), TypeError, "logits_processors"),
        (dict(logits_processors=lambda s, t, z: z), TypeError, r"pass \[processor\]"),
    ],
)
def test_bad_constraints_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        decoding.Constraints(**kwargs)


def test_bad_constraints_at_decoding_time_are_named():
    model = RecurrentDecoder(attentive=False)
    narrowing = decoding.Constraints(logits_processors=[lambda s, t, z: z[:, :2]])
    with pytest.raises(ValueError, match="logits processor.*shape it received"):
        decoding.greedy_search(model, [0], model.initial_states(1), 3, END, constraints=narrowing)
    with pytest.raises(ValueError, match="min_length.*end_token"):
        decoding.greedy_search(
            model, [0], model.initial_states(1), 3, constraints=decoding.Constraints(min_length=2)
        )
    too_big = decoding.Constraints(forbidden_tokens=[model.vocab])
    with pytest.raises(ValueError, match="forbidden_tokens.*vocabulary"):
        decoding.greedy_search(model, [0], model.initial_states(1), 3, END, constraints=too_big)


def test_forbidden_tokens_are_renormalised_away_as_numpy_does():
    """A forbidden token is removed from the softmax: greedy search then picks the argmax
    of the others, scored by their renormalised log-probabilities (NumPy reference)."""
    model = RecurrentDecoder(seed=3)
    h, memory = model.initial_states(6, seed=4)
    rules = decoding.Constraints(forbidden_tokens=[1])
    out = decoding.greedy_search(
        model, [0] * 6, (h, memory), max_length=7, end_token=END, constraints=rules
    )
    plain = decoding.greedy_search(model, [0] * 6, (h, memory), max_length=7, end_token=END)
    assert (np_(plain.tokens) == 1).any()  # the constraint bites
    assert not (np_(out.tokens) == 1).any()
    for b in range(6):
        seq, log_p = [], 0.0
        for _ in range(7):
            logp = model.next_log_probs(seq, h[b], memory[b]).copy()
            logp[1] = -np.inf
            logp -= np.log(np.exp(logp).sum())
            seq.append(int(np.argmax(logp)))
            log_p += logp[seq[-1]]
            if seq[-1] == END:
                break
        length = np_(out.lengths)[b, 0]
        assert np_(out.tokens)[b, 0, :length].tolist() == seq
        np.testing.assert_allclose(np_(out.log_probs)[b, 0], log_p, rtol=1e-5)


def test_constraints_are_shared_and_serialised():
    rules = decoding.Constraints(
        min_length=2, block_ngram_repeat=3, forbidden_tokens=[1], max_length_ratio=1.5
    )
    strategies = [
        decoding.GreedySearch(rules),
        decoding.RandomSampling(constraints=rules),
        decoding.BeamSearch(constraints=rules),
    ]
    assert all(s.constraints is rules for s in strategies)
    for strategy in strategies:
        again = decoding.get(decoding.serialize(strategy))
        assert type(again) is type(strategy)
        assert again.get_config() == strategy.get_config()
        assert again.constraints.get_config() == rules.get_config()
