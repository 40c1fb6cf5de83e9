"""Beam search: n-best output, length and coverage penalties, two stop rules.

keras-hub's `BeamSampler` keeps finished beams in the running beam and ranks by raw
log-probability, which favours short outputs, and returns no alignments; the
lecture-notes algorithm below sets finished hypotheses aside and ranks them
length-normalised, and TensorFlow Addons' rule (finished and live hypotheses compete)
is an option, hence our own.
"""
import keras
from keras import ops

from kerasrnn.decoding.common import (
    NEG_INF,
    DecodeResult,
    StepFunction,
    check_step_inputs,
    length_limits,
    length_penalty,
    write_step,
)
from kerasrnn.decoding.constraints import NextToken

STOP_RULES = ("set_aside", "compete")


def _gather_beams(values, indices):
    """values `(batch, n, ...)`, indices `(batch, m)` -> `(batch, m, ...)`."""
    n = values.shape[1]
    batch_size = ops.shape(values)[0]
    flat = ops.reshape(values, (-1,) + tuple(values.shape[2:]))
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * n
    picked = ops.take(flat, ops.reshape(indices + offsets, (-1,)), axis=0)
    return ops.reshape(picked, (batch_size, indices.shape[1]) + tuple(values.shape[2:]))


def _take(structure, indices):
    return keras.tree.map_structure(lambda x: ops.take(x, indices, axis=0), structure)


def coverage_penalty(coverage, beta):
    """GNMT's coverage penalty cp = beta * sum_i log(min(c_i, 1)), with c_i = sum_t a_{t,i}
    the attention source position i received over the hypothesis (Wu et al. 2016).

    `coverage` is `(..., source_length)`; the result has its leading shape. A position
    whose coverage is exactly 0 counts as covered (log 1 = 0), as in TensorFlow Addons:
    padded positions never receive attention and must not make the penalty -inf.
    """
    coverage = ops.where(ops.equal(coverage, 0.0), 1.0, coverage)
    return float(beta) * ops.sum(ops.log(ops.minimum(coverage, 1.0)), axis=-1)


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
    coverage_penalty_weight=0.0,
    pad_token=0,
    source_lengths=None,
    max_length_ratio=None,
    min_length=None,
    block_ngram_repeat=None,
    logits_processor=None,
    stop_rule="set_aside",
    count_end_token=True,
    drop_finished=False,
):
    """Beam search: keep the k most probable partial hypotheses at every step.

    At step t every live hypothesis y_<t is extended by every token, scored by
    log p(y_<=t) = log p(y_<t) + log p(y_t | y_<t, x), and the k best extensions are
    the beam. Complete hypotheses are ranked by

        score(y) = log p(y | x) / lp(|y|) + cp(y)

    with lp = 1 (`length_normalization=None`), lp = |y| (`"average"`, the mean
    log-probability per token) or lp = ((5 + |y|) / 6) ** alpha (`"gnmt"`, alias
    `"wu"`, Wu et al. 2016), and the coverage penalty
    cp = beta * sum_i log(min(sum_t a_{t,i}, 1)) (GNMT; beta =
    `coverage_penalty_weight`, a = the alignments the step function returns).

    Two stop rules (`stop_rule`):

    * `"set_aside"` (default; the lecture notes' rule): an extension among the k best
      that produces `end_token` (or reaches its length limit) is complete: it is set
      aside, frozen (tokens and score never change again) and the beam is refilled
      with the next best unfinished extensions, so k hypotheses stay live. Live
      hypotheses compete on log-probability (they all have the same length); an
      example stops once `n_best` hypotheses are complete, or at its length limit.
    * `"compete"` (TensorFlow Addons' `BeamSearchDecoder`): finished hypotheses stay
      in the beam (their only extension is the end token again, at probability 1)
      and compete with the live ones under the penalised score, live ones scored
      with lp but without cp; the search stops when every hypothesis in the beam has
      finished (or at the length limit), so a longer hypothesis that would score
      better is not cut off early.

    `count_end_token=True` counts the end token in |y|. `False` is TFA's scoring: at
    the step that picks the end token, the hypothesis is scored like a live one (|y|
    without the end token, no coverage penalty); under `"compete"` it is rescored with
    the end token counted and the coverage penalty from the next step on. With
    `stop_rule="compete", count_end_token=False, length_normalization="gnmt"` this is
    TFA's beam search exactly (`alpha` = `length_penalty_weight`,
    `coverage_penalty_weight` the same).

    Args:
        step_fn: `step_fn(tokens, states) -> (logits, states)` or `(logits, states,
            alignments)` as in `greedy_search`. It is called on `batch * beam_size`
            rows: the initial states are repeated beam_size times along the batch axis
            (rows b*k .. b*k+k-1 belong to example b) and re-ordered with the
            surviving hypotheses at every step. Alignment histories are re-ordered
            with the hypotheses too.
        start_tokens: `(batch,)` ids fed at the first step.
        initial_states: nested structure of `(batch, ...)` tensors.
        max_length: Python int, the most tokens generated (the output width).
        end_token: id that completes a hypothesis.
        beam_size: k, the number of live hypotheses per example.
        n_best: how many hypotheses to return (1 <= n_best <= k; default k).
        length_normalization: None, "average", "gnmt" or "wu" (see above).
        alpha: GNMT's exponent.
        coverage_penalty_weight: beta >= 0; needs a step function that returns
            alignments. A source position with zero total attention counts as
            covered (TFA's convention: padding never receives attention).
        pad_token: id written after the end of a hypothesis.
        source_lengths, max_length_ratio: limit example b to
            ceil(max_length_ratio * source_lengths[b]) tokens (at most max_length).
        min_length, block_ngram_repeat, logits_processor: constraints on the next
            token as in `greedy_search` (`tokens` is then the `(batch * beam_size,
            max_length)` buffer of each hypothesis).
        stop_rule: `"set_aside"` or `"compete"` (see above).
        count_end_token: whether |y| counts the end token when the hypothesis that
            picks it is scored (see above).
        drop_finished: stop computing the rows of examples that have finished. A batch
            decodes until its last example ends; with this, the loop runs in up to
            four phases, each ending once fewer than 60% of its examples are still
            running, and the next phase runs on those alone. The results are the same
            (scores to float rounding: a matmul over fewer rows may round differently).
            Needs a step function with a `take_rows(rows)` method that returns the
            step function for those rows only (`Seq2Seq.step_fn` has one), and
            shapes that may change at run time: TensorFlow outside XLA, or PyTorch
            (not JAX).

    Returns:
        A `DecodeResult`, best first along axis 1: tokens `(batch, n_best, max_length)`,
        lengths (generated tokens, end included), scores (the ranking score) and
        log_probs `(batch, n_best)`, and alignments `(batch, n_best, max_length,
        source_length)` when the step function returns them. With `beam_size=1,
        n_best=1` it is exactly greedy search.

    The loop is a `keras.ops.while_loop` over tensors: batched, and usable inside
    `tf.function`/XLA, a SavedModel or `jax.jit`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> greedy = kerasrnn.decoding.greedy_search(step, [0], (), max_length=4, end_token=0)
    >>> keras.ops.convert_to_numpy(greedy.tokens[0, 0]).tolist()  # p = .5 * .4 = .2
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
    if stop_rule not in STOP_RULES:
        raise ValueError(
            f"`stop_rule` must be 'set_aside' (the default: finished hypotheses are set "
            f"aside) or 'compete' (TFA: they stay in the beam), got {stop_rule!r}."
        )
    beta = float(coverage_penalty_weight)
    if beta < 0:
        raise ValueError(
            f"`coverage_penalty_weight` must be >= 0, got {coverage_penalty_weight!r}."
        )

    k = beam_size
    batch_size = ops.shape(start_tokens)[0]
    limits = length_limits(batch_size, max_length, source_lengths, max_length_ratio)
    first_tokens = ops.repeat(start_tokens, k, axis=0)
    first_states = keras.tree.map_structure(lambda s: ops.repeat(s, k, axis=0), initial_states)
    step = StepFunction(step_fn, first_tokens, first_states)
    if beta > 0 and not step.has_alignments:
        raise ValueError(
            f"`coverage_penalty_weight={coverage_penalty_weight!r}` needs the "
            "alignments: `step_fn` must return (logits, states, alignments)."
        )
    if drop_finished:
        if not step.can_take_rows:
            raise ValueError(
                "`drop_finished=True` needs a step function with a `take_rows(rows)` "
                "method (the step function for a subset of its rows); this one has none."
            )
        if keras.backend.backend() == "jax":
            raise ValueError(
                "`drop_finished=True` changes the batch size while decoding, which "
                "`jax.jit` cannot compile; on JAX pass drop_finished=False."
            )
    search = _Search(
        step=step,
        drop_finished=bool(drop_finished),
        next_token=NextToken(
            end_token, min_length, block_ngram_repeat, logits_processor,
            step.outputs_log_probs,
        ),
        k=k,
        n_best=n_best,
        batch_size=batch_size,
        max_length=max_length,
        limits=limits,
        end_token=end_token,
        pad_token=pad_token,
        normalization=length_normalization,
        alpha=alpha,
        beta=beta,
        count_end_token=bool(count_end_token),
    )
    if stop_rule == "compete":
        return search.compete(first_tokens, first_states)
    return search.set_aside(first_tokens, first_states)


class _Search:
    """The two loops; what they share is computed by the helpers below."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
        self.aligned = self.step.has_alignments
        self.batch_offsets = ops.arange(self.batch_size, dtype="int32")[:, None] * self.k

    def _expand(self, t, last, states, seqs):
        """One decoder step for every live row: log p `(batch, k, vocab)`, the new
        states, and the step's alignments `(batch, k, source_length)` or None."""
        logits, states, alignments = self.step(last, states)
        flat_seqs = ops.reshape(seqs, (-1, self.max_length))
        log_p, _ = self.next_token(t, flat_seqs, logits)
        vocab_size = logits.shape[-1]
        log_p = ops.reshape(log_p, (-1, self.k, vocab_size))
        if alignments is not None:
            alignments = ops.reshape(
                alignments, (-1, self.k, self.step.source_length)
            )
        return log_p, states, alignments

    # drop_finished: the loop's phases, and the share of a phase's examples still
    # running below which the next phase starts on those alone. On the reduced Multi30k
    # model (batches of 64 sorted by length) 4 phases at 60% leave 76% of the row-steps
    # of one loop; dropping every example the moment it ends would leave 73%.
    PHASES, SHRINK = 4, 0.6

    def _loop(self, cond, body, loop_vars, finished, result):
        """`ops.while_loop(cond, body, loop_vars)`, returning what `result` takes from
        its final loop variables, per example, in the batch's order.

        With `drop_finished` it runs in phases (see `beam_search`). `finished(loop_vars)`
        says which examples are done. Both loops share one layout: the step counter,
        then the last tokens and the states with a row per hypothesis (`batch * k`),
        then the rest with one per example."""
        if not self.drop_finished:
            return result(ops.while_loop(cond, body, loop_vars,
                                         maximum_iterations=self.max_length))
        examples = ops.arange(self.batch_size, dtype="int32")
        parts = []
        for phase in range(self.PHASES):
            phase_cond = cond
            if phase < self.PHASES - 1:
                threshold = self.SHRINK * ops.cast(ops.shape(examples)[0], "float32")

                def phase_cond(*v, threshold=threshold):
                    running = ops.sum(ops.cast(ops.logical_not(finished(v)), "float32"))
                    return ops.logical_and(cond(*v), running > threshold)

            loop_vars = ops.while_loop(phase_cond, body, loop_vars,
                                       maximum_iterations=self.max_length)
            if phase == self.PHASES - 1:
                break
            done = finished(loop_vars)
            gone = ops.cast(ops.nonzero(done)[0], "int32")
            parts.append((ops.take(examples, gone, axis=0),
                          _take(result(loop_vars), gone)))
            keep = ops.cast(ops.nonzero(ops.logical_not(done))[0], "int32")
            examples = ops.take(examples, keep, axis=0)
            loop_vars = self._keep_examples(loop_vars, keep)
        parts.append((examples, result(loop_vars)))
        order = ops.argsort(ops.concatenate([ids for ids, _ in parts], axis=0))
        return keras.tree.map_structure(
            lambda *pieces: ops.take(ops.concatenate(pieces, axis=0), order, axis=0),
            *[values for _, values in parts],
        )

    def _keep_examples(self, loop_vars, keep):
        """The loop variables, the step function and the length limits of the examples
        `keep` only, for the next phase."""
        rows = ops.reshape(keep[:, None] * self.k + ops.arange(self.k, dtype="int32")[None, :],
                           (-1,))
        t, last, states, *per_example = loop_vars
        kept = (t, _take(last, rows), _take(states, rows), *_take(per_example, keep))
        self.step = self.step.take_rows(rows)
        self.limits = ops.take(self.limits, keep, axis=0)
        self.batch_offsets = ops.arange(ops.shape(keep)[0], dtype="int32")[:, None] * self.k
        return kept

    def _reorder_states(self, states, parent):
        rows = ops.reshape(parent + self.batch_offsets, (-1,))
        return keras.tree.map_structure(lambda s: ops.take(s, rows, axis=0), states)

    def _penalised(self, log_probs, lengths, coverage=None):
        score = log_probs / length_penalty(lengths, self.normalization, self.alpha)
        if coverage is not None and self.beta > 0:
            score = score + coverage_penalty(coverage, self.beta)
        return score

    def _first_logp(self):
        first_beam = ops.convert_to_tensor([0.0] + [NEG_INF] * (self.k - 1), "float32")
        return ops.tile(first_beam[None, :], [self.batch_size, 1])

    def _empty(self, n):
        tokens = ops.full((self.batch_size, n, self.max_length), self.pad_token, "int32")
        if not self.aligned:
            return tokens, ()
        shape = (self.batch_size, n, self.max_length, self.step.source_length)
        return tokens, (ops.zeros(shape, "float32"),)

    # ---- the lecture notes' rule: finished hypotheses are set aside -----------------
    def set_aside(self, first_tokens, first_states):
        k, n_best, end_token = self.k, self.n_best, self.end_token

        def cond(t, last, states, alive_seqs, alive_logp, pool, done, *alive_align):
            return ops.logical_not(ops.all(done))

        def body(t, last, states, alive_seqs, alive_logp, pool, done, *alive_align):
            log_p, states, step_align = self._expand(t, last, states, alive_seqs)
            vocab_size = log_p.shape[-1]
            total = ops.reshape(alive_logp[:, :, None] + log_p, (-1, k * vocab_size))
            # The best 2k extensions hold at least k that do not end (each parent
            # ends once).
            width = min(2 * k, k * vocab_size)
            cand_logp, cand_index = ops.top_k(total, width)
            cand_index = ops.cast(cand_index, "int32")
            parent = cand_index // vocab_size
            token = cand_index % vocab_size
            length = t + 1
            picks_end = ops.equal(token, end_token)
            ends = ops.logical_or(picks_end, (length >= self.limits)[:, None])
            cand_seqs = _gather_beams(alive_seqs, parent)
            cand_seqs = write_step(cand_seqs, t, token, axis=2)
            cand_align, coverage = (), None
            if self.aligned:
                history = _gather_beams(alive_align[0], parent)
                written = _gather_beams(step_align, parent)
                history = write_step(history, t, written, axis=2)
                cand_align = (history,)
                coverage = ops.sum(history, axis=2)

            # Only extensions inside the beam (the k best) complete; rows already done
            # take nothing more, so their complete hypotheses stay frozen.
            rank = ops.arange(width, dtype="int32")[None, :]
            completes = ops.logical_and(ends, rank < k)
            completes = ops.logical_and(completes, cand_logp > NEG_INF / 2)
            completes = ops.logical_and(completes, ops.logical_not(done)[:, None])
            lengths = ops.full(ops.shape(token), length, "int32")
            scored_lengths = lengths
            if not self.count_end_token:
                scored_lengths = lengths - ops.cast(picks_end, "int32")
            score = self._penalised(cand_logp, scored_lengths, coverage)
            if not self.count_end_token and coverage is not None:
                # TFA scores the step that picks the end token without coverage.
                score = ops.where(picks_end, self._penalised(cand_logp, scored_lengths), score)
            cand_score = ops.where(completes, score, NEG_INF)
            pool_seqs, pool_score, pool_logp, pool_len, pool_valid, *pool_align = pool
            pool_score, keep = ops.top_k(ops.concatenate([pool_score, cand_score], 1), n_best)
            keep = ops.cast(keep, "int32")

            def merged(a, b):
                both = ops.concatenate([a, b], axis=1)
                if len(both.shape) == 2:
                    return ops.take_along_axis(both, keep, 1)
                return _gather_beams(both, keep)

            pool = (
                merged(pool_seqs, cand_seqs),
                pool_score,
                merged(pool_logp, cand_logp),
                merged(pool_len, lengths),
                merged(pool_valid, completes),
            ) + tuple(merged(a, b) for a, b in zip(pool_align, cand_align))

            # The live beam: the k best extensions that did not end.
            alive_logp, chosen = ops.top_k(ops.where(ends, NEG_INF, cand_logp), k)
            chosen = ops.cast(chosen, "int32")
            alive_seqs = _gather_beams(cand_seqs, chosen)
            alive_align = tuple(_gather_beams(a, chosen) for a in cand_align)
            states = self._reorder_states(states, ops.take_along_axis(parent, chosen, 1))
            last = ops.reshape(ops.take_along_axis(token, chosen, 1), (-1,))

            full = ops.sum(ops.cast(pool[4], "int32"), axis=1) >= n_best
            done = ops.logical_or(done, ops.logical_or(full, length >= self.limits))
            return (t + 1, last, states, alive_seqs, alive_logp, pool, done, *alive_align)

        pool_seqs, pool_align = self._empty(n_best)
        pool = (
            pool_seqs,
            ops.full((self.batch_size, n_best), NEG_INF, dtype="float32"),
            ops.zeros((self.batch_size, n_best), "float32"),
            ops.zeros((self.batch_size, n_best), "int32"),
            ops.zeros((self.batch_size, n_best), "bool"),
        ) + pool_align
        alive_seqs, alive_align = self._empty(k)
        loop_vars = (
            ops.convert_to_tensor(0, "int32"),
            first_tokens,
            first_states,
            alive_seqs,
            self._first_logp(),
            pool,
            ops.zeros((self.batch_size,), "bool"),
        ) + alive_align
        pool = self._loop(cond, body, loop_vars, finished=lambda v: v[6],
                          result=lambda v: v[5])
        pool_seqs, pool_score, pool_logp, pool_len, _, *pool_align = pool
        alignments = pool_align[0] if pool_align else None
        return DecodeResult(pool_seqs, pool_len, pool_score, pool_logp, alignments)

    # ---- TensorFlow Addons' rule: finished hypotheses compete in the beam -----------
    def compete(self, first_tokens, first_states):
        k, end_token = self.k, self.end_token

        def cond(t, last, states, seqs, logp, lengths, finished, scores, settled, *align):
            return ops.logical_not(ops.all(finished))

        def body(t, last, states, seqs, logp, lengths, finished, scores, settled, *align):
            log_p, states, step_align = self._expand(t, last, states, seqs)
            vocab_size = log_p.shape[-1]
            is_end = ops.equal(ops.arange(vocab_size, dtype="int32"), end_token)
            # A finished hypothesis' only extension is the end token, at probability 1.
            end_only = ops.where(is_end, 0.0, NEG_INF)[None, None, :]
            log_p = ops.where(finished[:, :, None], end_only, log_p)
            total = logp[:, :, None] + log_p
            live = ops.logical_not(finished)[:, :, None]
            grows = live if self.count_end_token else ops.logical_and(live, ops.logical_not(is_end))
            scored_lengths = lengths[:, :, None] + ops.cast(grows, "int32")
            score = self._penalised(total, scored_lengths)
            if self.aligned:
                step_align = ops.where(finished[:, :, None], 0.0, step_align)
                coverage = ops.sum(align[0], axis=2) + step_align
                with_coverage = finished[:, :, None]
                if self.count_end_token:
                    with_coverage = ops.logical_or(with_coverage, is_end[None, None, :])
                cp = coverage_penalty(coverage, self.beta)[:, :, None] if self.beta else 0.0
                score = ops.where(with_coverage, score + cp, score)
            flat = ops.reshape(score, (-1, k * vocab_size))
            scores, index = ops.top_k(flat, k)
            index = ops.cast(index, "int32")
            parent, token = index // vocab_size, index % vocab_size
            logp = ops.take_along_axis(ops.reshape(total, (-1, k * vocab_size)), index, 1)
            parent_finished = ops.take_along_axis(finished, parent, 1)
            written = ops.where(parent_finished, self.pad_token, token)
            seqs = write_step(_gather_beams(seqs, parent), t, written, axis=2)
            lengths = ops.take_along_axis(lengths, parent, 1) + ops.cast(
                ops.logical_not(parent_finished), "int32"
            )
            # An example whose beams had all finished before this step is settled: no
            # later step changes it (the step after the last end rescores it, see
            # count_end_token), so drop_finished may drop it.
            settled = ops.all(parent_finished, axis=1)
            finished = ops.logical_or(parent_finished, ops.equal(token, end_token))
            finished = ops.logical_or(finished, (t + 1 >= self.limits)[:, None])
            if self.aligned:
                history = _gather_beams(align[0], parent)
                new = _gather_beams(step_align, parent)
                align = (write_step(history, t, new, axis=2),)
            states = self._reorder_states(states, parent)
            last = ops.reshape(token, (-1,))
            return (t + 1, last, states, seqs, logp, lengths, finished, scores, settled,
                    *align)

        seqs, align = self._empty(k)
        loop_vars = (
            ops.convert_to_tensor(0, "int32"),
            first_tokens,
            first_states,
            seqs,
            self._first_logp(),
            ops.zeros((self.batch_size, k), "int32"),
            ops.zeros((self.batch_size, k), "bool"),
            ops.zeros((self.batch_size, k), "float32"),
            ops.zeros((self.batch_size,), "bool"),
        ) + align
        out = self._loop(cond, body, loop_vars, finished=lambda v: v[8],
                         result=lambda v: (v[3], v[5], v[7], v[4]) + tuple(v[9:]))
        n = self.n_best
        alignments = out[4][:, :n] if self.aligned else None
        return DecodeResult(out[0][:, :n], out[1][:, :n], out[2][:, :n], out[3][:, :n],
                            alignments)
