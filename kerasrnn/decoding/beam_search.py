"""Beam search with frozen finished hypotheses, n-best output and length normalisation.

keras-hub's `BeamSampler` keeps finished beams in the running beam and ranks by raw
log-probability, which favours short outputs; the lecture-notes algorithm below sets
finished hypotheses aside and ranks them length-normalised, hence our own.
"""
import keras
from keras import ops

from kerasrnn.decoding.common import (
    NEG_INF,
    DecodeResult,
    check_logits,
    check_step_inputs,
    length_limits,
    length_penalty,
)


def _gather_beams(values, indices):
    """values `(batch, n, ...)`, indices `(batch, m)` -> `(batch, m, ...)`."""
    n = values.shape[1]
    batch_size = ops.shape(values)[0]
    flat = ops.reshape(values, (-1,) + tuple(values.shape[2:]))
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * n
    picked = ops.take(flat, ops.reshape(indices + offsets, (-1,)), axis=0)
    return ops.reshape(picked, (batch_size, indices.shape[1]) + tuple(values.shape[2:]))


def beam_search(
    step_fn,
    start_tokens,
    initial_states,
    max_length,
    end_token,
    beam_size=4,
    n_best=None,
    length_normalization="average",
    alpha=0.6,
    pad_token=0,
    source_lengths=None,
    max_length_ratio=None,
):
    """Beam search: keep the k most probable partial hypotheses at every step.

    At step t every live hypothesis y_<t is extended by every token, scored by
    log p(y_<=t) = log p(y_<t) + log p(y_t | y_<t, x), and the k best extensions are
    the beam. An extension that produces `end_token` (or reaches its length limit) is
    complete: it is set aside, frozen (its tokens and score never change again) and the
    beam is refilled with the next best unfinished extensions, so k hypotheses stay
    live. An example stops once `n_best` hypotheses are complete, or at its length
    limit. The complete ones are ranked by

        score(y) = log p(y | x) / lp(|y|)

    with lp = 1 (`length_normalization=None`), lp = |y| (`"average"`, the mean
    log-probability per token, 1/t sum_i log p(y_i | y_<i, x)) or
    lp = ((5 + |y|) / 6) ** alpha (`"gnmt"`, Wu et al. 2016); |y| counts the end token.

    Args:
        step_fn: `step_fn(tokens, states) -> (logits, states)` as in `greedy_search`.
            It is called on `batch * beam_size` rows: the initial states are repeated
            beam_size times along the batch axis (rows b*k .. b*k+k-1 belong to example
            b) and re-ordered with the surviving hypotheses at every step.
        start_tokens: `(batch,)` ids fed at the first step.
        initial_states: nested structure of `(batch, ...)` tensors.
        max_length: Python int, the most tokens generated (the output width).
        end_token: id that completes a hypothesis.
        beam_size: k, the number of live hypotheses per example.
        n_best: how many complete hypotheses to collect and return (1 <= n_best <= k;
            default k).
        length_normalization: None, "average" or "gnmt" (see above).
        alpha: GNMT's exponent.
        pad_token: id written after the end of a hypothesis.
        source_lengths, max_length_ratio: limit example b to
            ceil(max_length_ratio * source_lengths[b]) tokens (at most max_length).

    Returns:
        A `DecodeResult`, best first along axis 1: tokens `(batch, n_best, max_length)`,
        lengths, scores (the ranking score) and log_probs `(batch, n_best)`. With
        `beam_size=1, n_best=1` it is exactly greedy search.

    The loop is a `keras.ops.while_loop` over tensors: batched, and usable inside
    `tf.function`/XLA, a SavedModel or `jax.jit`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> greedy = kerasrnn.decoding.greedy_search(step, [0], (), max_length=4, end_token=0)
    >>> keras.ops.convert_to_numpy(greedy.tokens[0]).tolist()  # p = .5 * .4 = .2
    [1, 0, 0, 0]
    >>> beam = kerasrnn.decoding.beam_search(step, [0], (), max_length=4, end_token=0,
    ...                                       beam_size=2)
    >>> keras.ops.convert_to_numpy(beam.tokens[0, 0]).tolist()  # p = .4 * .9 = .36
    [2, 0, 0, 0]
    """
    start_tokens = check_step_inputs(start_tokens, max_length, end_token)
    if end_token is None:
        raise ValueError("beam_search needs an `end_token`.")
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"`beam_size` must be a positive integer, got {beam_size!r}.")
    n_best = beam_size if n_best is None else n_best
    if isinstance(n_best, bool) or not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(
            f"`n_best` must be an integer in [1, beam_size={beam_size}], got {n_best!r}."
        )
    length_penalty(ops.ones((1,)), length_normalization, alpha)  # validates the option

    k = beam_size
    batch_size = ops.shape(start_tokens)[0]
    limits = length_limits(batch_size, max_length, source_lengths, max_length_ratio)
    batch_offsets = ops.arange(batch_size, dtype="int32")[:, None] * k

    def cond(t, last, states, alive_seqs, alive_logp, pool, done):
        return ops.logical_not(ops.all(done))

    def body(t, last, states, alive_seqs, alive_logp, pool, done):
        logits, states = step_fn(last, states)
        logits = check_logits(logits, batch_size)
        vocab_size = logits.shape[-1]
        log_p = ops.reshape(ops.log_softmax(logits, axis=-1), (batch_size, k, vocab_size))
        total = ops.reshape(alive_logp[:, :, None] + log_p, (batch_size, k * vocab_size))
        # The best 2k extensions hold at least k that do not end (each parent ends once).
        width = min(2 * k, k * vocab_size)
        cand_logp, cand_index = ops.top_k(total, width)
        cand_index = ops.cast(cand_index, "int32")
        parent = cand_index // vocab_size
        token = cand_index % vocab_size
        length = t + 1
        ends = ops.logical_or(ops.equal(token, end_token), (length >= limits)[:, None])
        cand_seqs = _gather_beams(alive_seqs, parent)
        cand_seqs = ops.slice_update(cand_seqs, [0, 0, t], token[:, :, None])

        # Only extensions inside the beam (the k best) complete; rows already done
        # take nothing more, so their complete hypotheses stay frozen.
        rank = ops.arange(width, dtype="int32")[None, :]
        completes = ops.logical_and(ends, rank < k)
        completes = ops.logical_and(completes, cand_logp > NEG_INF / 2)
        completes = ops.logical_and(completes, ops.logical_not(done)[:, None])
        lp = length_penalty(ops.full((1,), length, "int32"), length_normalization, alpha)
        cand_score = ops.where(completes, cand_logp / lp, NEG_INF)
        pool_seqs, pool_score, pool_logp, pool_len, pool_valid = pool
        merged_score = ops.concatenate([pool_score, cand_score], axis=1)
        pool_score, keep = ops.top_k(merged_score, n_best)
        keep = ops.cast(keep, "int32")
        pool = (
            _gather_beams(ops.concatenate([pool_seqs, cand_seqs], axis=1), keep),
            pool_score,
            ops.take_along_axis(ops.concatenate([pool_logp, cand_logp], axis=1), keep, 1),
            ops.take_along_axis(
                ops.concatenate([pool_len, ops.full(ops.shape(token), length, "int32")], 1),
                keep,
                1,
            ),
            ops.take_along_axis(ops.concatenate([pool_valid, completes], axis=1), keep, 1),
        )

        # The live beam: the k best extensions that did not end.
        alive_logp, chosen = ops.top_k(ops.where(ends, NEG_INF, cand_logp), k)
        chosen = ops.cast(chosen, "int32")
        alive_seqs = _gather_beams(cand_seqs, chosen)
        rows = ops.reshape(ops.take_along_axis(parent, chosen, 1) + batch_offsets, (-1,))
        states = keras.tree.map_structure(lambda s: ops.take(s, rows, axis=0), states)
        last = ops.reshape(ops.take_along_axis(token, chosen, 1), (-1,))

        full = ops.sum(ops.cast(pool[4], "int32"), axis=1) >= n_best
        done = ops.logical_or(done, ops.logical_or(full, length >= limits))
        return t + 1, last, states, alive_seqs, alive_logp, pool, done

    first_beam = ops.convert_to_tensor([0.0] + [NEG_INF] * (k - 1), "float32")
    pool = (
        ops.full((batch_size, n_best, max_length), pad_token, dtype="int32"),
        ops.full((batch_size, n_best), NEG_INF, dtype="float32"),
        ops.zeros((batch_size, n_best), "float32"),
        ops.zeros((batch_size, n_best), "int32"),
        ops.zeros((batch_size, n_best), "bool"),
    )
    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.repeat(start_tokens, k, axis=0),
        keras.tree.map_structure(lambda s: ops.repeat(s, k, axis=0), initial_states),
        ops.full((batch_size, k, max_length), pad_token, dtype="int32"),
        ops.tile(first_beam[None, :], [batch_size, 1]),
        pool,
        ops.zeros((batch_size,), "bool"),
    )
    outputs = ops.while_loop(cond, body, loop_vars, maximum_iterations=max_length)
    pool_seqs, pool_score, pool_logp, pool_len, _ = outputs[5]
    return DecodeResult(pool_seqs, pool_len, pool_score, pool_logp)
