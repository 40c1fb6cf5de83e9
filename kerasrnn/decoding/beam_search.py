"""Beam search: n-best output, a `Scorer` for length and coverage penalties, and two
stop rules (`BeamSearch` sets finished hypotheses aside; `CompetingBeamSearch` keeps
them in the beam, as TensorFlow Addons does).

keras-hub's `BeamSampler` keeps finished beams in the running beam and ranks by raw
log-probability, which favours short outputs, and returns no alignments; the
lecture-notes algorithm below sets finished hypotheses aside and ranks them
length-normalised, hence our own.
"""

import collections

import keras
import numpy as np
from keras import ops

from kerasrnn.decoding.common import DecodeResult, write_step
from kerasrnn.decoding.scorer import get_scorer
from kerasrnn.decoding.strategy import DecodingStrategy
from kerasrnn.ops import NEG_INF
from kerasrnn.validation import check_int, is_int

# The loop states. Fields `last` and `states` have a row per hypothesis (batch * k),
# `t` is the step counter, every other field has a row per example.
_SetAside = collections.namedtuple(
    "_SetAside",
    ["t", "last", "states", "alive_seqs", "alive_logp", "pool", "done", "alive_align"],
)
# The complete hypotheses set aside, n_best per example, best first.
_Pool = collections.namedtuple(
    "_Pool", ["seqs", "scores", "log_probs", "lengths", "valid", "alignments"]
)
_Compete = collections.namedtuple(
    "_Compete",
    [
        "t",
        "last",
        "states",
        "seqs",
        "log_probs",
        "lengths",
        "finished",
        "scores",
        "settled",
        "alignments",
    ],
)
_PER_ROW = ("last", "states")

# TensorFlow Addons' names, and what kerasrnn calls them.
_TFA_NAMES = {
    "beam_width": "beam_size=",
    "length_penalty_weight": "scorer=kerasrnn.decoding.Scorer('gnmt', alpha=...) (or "
    "kerasrnn.compat.tfa.beam_search_decoder(...) for TFA's rules)",
    "coverage_penalty_weight": "scorer=kerasrnn.decoding.Scorer(coverage_penalty_weight=...)",
    "length_normalization": "scorer=kerasrnn.decoding.Scorer(length_normalization=...)",
    "alpha": "scorer=kerasrnn.decoding.Scorer(..., alpha=...)",
    "min_length": "constraints=kerasrnn.decoding.Constraints(min_length=...)",
    "block_ngram_repeat": "constraints=kerasrnn.decoding.Constraints(block_ngram_repeat=...)",
    "max_length_ratio": "constraints=kerasrnn.decoding.Constraints(max_length_ratio=...)",
    "stop_rule": "kerasrnn.decoding.CompetingBeamSearch(...) for TFA's 'compete' rule",
}


def unexpected_argument(caller, unknown, accepted):
    """The one-line TypeError for arguments `caller` does not take, naming kerasrnn's
    equivalent of a TensorFlow Addons name (`length_penalty_weight=` ...)."""
    name = next(iter(unknown))
    hint = _TFA_NAMES.get(name)
    return TypeError(
        f"{caller} got an unexpected argument {name}={unknown[name]!r}"
        + (f"; kerasrnn's equivalent: {hint}." if hint else f": it takes {accepted}.")
    )


def repeat_beams(structure, beam_size):
    """Every tensor of `structure` repeated `beam_size` times along the batch axis, rows
    b*k .. b*k+k-1 for example b: the layout of the rows beam search calls its step
    function on. Use it for the tensors a step function closes over (an attention
    memory, a source mask). `np.tile` gives another layout (row i is example
    i % batch) and wrong results; beam search checks the first step's rows where it
    can (eagerly) and says so.

    Example:

    >>> import numpy as np, kerasrnn
    >>> np.asarray(kerasrnn.decoding.repeat_beams(np.array([[1], [2]]), 2))[:, 0].tolist()
    [1, 1, 2, 2]
    """
    beam_size = check_int("beam_size", beam_size)
    return keras.tree.map_structure(lambda x: ops.repeat(x, beam_size, axis=0), structure)


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


@keras.saving.register_keras_serializable(package="kerasrnn")
class BeamSearch(DecodingStrategy):
    """Beam search: keep the k most probable partial hypotheses at every step.

    At step t every live hypothesis y_<t is extended by every token, scored by
    log p(y_<=t) = log p(y_<t) + log p(y_t | y_<t, x), and the k best extensions are
    the beam. Complete hypotheses are ranked by the `scorer` (default
    `Scorer("average")`: score = log p(y | x) / |y|).

    Finished hypotheses are set aside (the lecture notes' rule): an extension among
    the k best that produces the end token (or reaches its length limit) is complete:
    it is set aside, frozen (tokens and score never change again) and the beam is
    refilled with the next best unfinished extensions, so k hypotheses stay live. Live
    hypotheses compete on log-probability (they all have the same length); an example
    stops once `n_best` hypotheses are complete, or at its length limit.
    `CompetingBeamSearch` is TensorFlow Addons' rule instead.

    The step function is called on `batch * beam_size` rows: the start tokens and
    initial states are repeated beam_size times along the batch axis (rows b*k ..
    b*k+k-1 belong to example b) and re-ordered with the surviving hypotheses at every
    step; a tensor the step function closes over (an attention memory) must be laid out
    the same way: `repeat_beams(memory, beam_size)`, not `np.tile`.

    Calling it (see `DecodingStrategy.__call__`) returns a `DecodeResult`, best first
    along axis 1: tokens `(batch, n_best, max_length)`, lengths (generated tokens, end
    included), scores (the scorer's) and log_probs `(batch, n_best)`, and alignments
    `(batch, n_best, max_length, source_length)` when the step function returns them.
    With `beam_size=1, n_best=1` it is exactly greedy search.

    Args:
        beam_size: k, the number of live hypotheses per example.
        n_best: how many hypotheses to return (1 <= n_best <= k; default k).
        scorer: a `kerasrnn.decoding.Scorer` (length normalisation, coverage penalty).
        constraints: a `kerasrnn.decoding.Constraints` (`tokens` of a logits processor
            is then the `(batch * beam_size, max_length)` buffer of each hypothesis).
        drop_finished: stop computing the rows of examples that have finished. A batch
            decodes until its last example ends; with this, the loop runs in up to four
            phases, each ending once fewer than 60% of its examples are still running,
            and the next phase runs on those alone. The results are the same (scores to
            float rounding). Needs a step function with a `take_rows(rows)` method that
            returns the step function for those rows only (`Seq2Seq.step_fn` has one)
            and shapes that may change at run time (TensorFlow outside XLA, PyTorch;
            not JAX). "auto" (default): where both hold.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> greedy = kerasrnn.decoding.GreedySearch()(step, [0], (), max_length=4, end_token=0)
    >>> keras.ops.convert_to_numpy(greedy.tokens[0, 0]).tolist()  # p = .5 * .4 = .2
    [1, 0, 0, 0]
    >>> beam = kerasrnn.decoding.BeamSearch(beam_size=2)(step, [0], (), 4, end_token=0)
    >>> keras.ops.convert_to_numpy(beam.tokens[0, 0]).tolist()  # p = .4 * .9 = .36
    [2, 0, 0, 0]
    """

    def __init__(
        self,
        beam_size=4,
        n_best=None,
        scorer=None,
        constraints=None,
        drop_finished="auto",
        **unknown,
    ):
        if unknown:
            raise unexpected_argument(
                type(self).__name__,
                unknown,
                "beam_size, n_best, scorer, constraints and drop_finished",
            )
        super().__init__(constraints)
        beam_size = check_int("beam_size", beam_size)
        if n_best is not None and not (is_int(n_best) and 1 <= n_best <= beam_size):
            raise ValueError(
                f"`n_best` must be an integer in [1, beam_size={beam_size}] or None, got "
                f"{n_best!r}; raise beam_size or lower n_best."
            )
        n_best = None if n_best is None else int(n_best)
        if drop_finished not in ("auto", True, False):
            raise ValueError(
                f"`drop_finished` must be 'auto', True or False, got {drop_finished!r}."
            )
        self.beam_size = beam_size
        self._n_best = n_best
        self.scorer = get_scorer(scorer)
        self.drop_finished = drop_finished

    @property
    def n_best(self):
        return self.beam_size if self._n_best is None else self._n_best

    @property
    def rows_per_example(self):
        return self.beam_size

    @property
    def needs_alignments(self):
        return self.scorer.needs_alignments

    def get_config(self):
        return {
            "beam_size": self.beam_size,
            "n_best": self._n_best,
            "scorer": (
                None
                if type(self.scorer).__name__ == "Scorer"
                and self.scorer.get_config() == get_scorer(None).get_config()
                else keras.saving.serialize_keras_object(self.scorer)
            ),
            "drop_finished": self.drop_finished,
            **super().get_config(),
        }

    def cache_key(self):
        key = super().cache_key()
        # the scorer by its class too (a subclass may rescore with the same config)
        return None if key is None else key + (type(self.scorer),)

    def _check_call(self, end_token):
        if end_token is None:
            raise ValueError(f"{type(self).__name__} needs an `end_token`.")

    def expand(self, start_tokens, initial_states):
        return repeat_beams(start_tokens, self.beam_size), repeat_beams(
            initial_states, self.beam_size
        )

    def _checked(self, step):
        if self.scorer.needs_alignments and not step.has_alignments:
            raise ValueError(
                f"The coverage penalty (coverage_penalty_weight="
                f"{self.scorer.coverage_penalty_weight}) needs the attention weights: "
                "the step function must return (logits, states, alignments)."
            )
        drop = self.drop_finished
        if drop is True:
            if not step.can_take_rows:
                raise ValueError(
                    "`drop_finished=True` needs a step function with a `take_rows(rows)` "
                    "method (the step function for a subset of its rows); this one has "
                    "none. Pass drop_finished='auto' or False."
                )
            if keras.backend.backend() == "jax":
                raise ValueError(
                    "`drop_finished=True` changes the batch size while decoding, which "
                    "`jax.jit` cannot compile; on JAX pass drop_finished='auto' or False."
                )
        elif drop == "auto":
            drop = step.can_take_rows and keras.backend.backend() != "jax"
        _check_repeated_rows(step.first_logits, self.beam_size)
        return bool(drop)

    def decode(self, step, start_tokens, initial_states, max_length, end_token, pad_token, limits):
        drop = self._checked(step)
        search = _Search(self, step, limits, max_length, end_token, pad_token, drop)
        return search.set_aside(start_tokens, initial_states)


@keras.saving.register_keras_serializable(package="kerasrnn")
class CompetingBeamSearch(BeamSearch):
    """Beam search with TensorFlow Addons' `BeamSearchDecoder` stop rule: finished
    hypotheses stay in the beam (their only extension is the end token again, at
    probability 1) and compete with the live ones under the scorer, live ones scored
    with the length penalty but without the coverage penalty; the search stops when
    every hypothesis in the beam has finished (or at the length limit), so a longer
    hypothesis that would score better is not cut off early. It returns the n_best
    best of the final beam.

    With `TFAScorer` it is TFA's beam search exactly
    (`kerasrnn.compat.tfa.beam_search_decoder` builds the pair). Arguments as
    `BeamSearch`.

    Example:

    >>> import kerasrnn
    >>> tfa_like = kerasrnn.decoding.CompetingBeamSearch(
    ...     beam_size=5, scorer=kerasrnn.decoding.TFAScorer(length_penalty_weight=0.6))
    >>> tfa_like.scorer
    TFAScorer(length_penalty_weight=0.6, coverage_penalty_weight=0.0)
    """

    def decode(self, step, start_tokens, initial_states, max_length, end_token, pad_token, limits):
        drop = self._checked(step)
        search = _Search(self, step, limits, max_length, end_token, pad_token, drop)
        return search.compete(start_tokens, initial_states)


def _check_repeated_rows(first_logits, k):
    """Eagerly, the k rows of an example see the same token and states at the first step,
    so a step function whose per-example tensors were repeated gives them the same
    logits; different logits mean a tensor it closes over was tiled (row i = example
    i % batch) instead. Costs nothing in a graph (not checkable) and no extra step."""
    if k == 1:
        return
    try:
        logits = ops.convert_to_numpy(first_logits)
    except Exception:  # symbolic (tf.function, jax.jit): not checkable
        return
    rows = logits.reshape((-1, k, logits.shape[-1]))
    if rows.shape[0] < 2:
        return
    if not np.allclose(rows, rows[:, :1], rtol=1e-4, atol=1e-4):
        raise ValueError(
            "Beam search's step function gave the beams of one example different logits "
            "at the first step: a tensor it closes over (e.g. the attention memory) was "
            "laid out with np.tile instead of repeated per example; use "
            f"kerasrnn.decoding.repeat_beams(memory, {k}) (or np.repeat(memory, {k}, "
            "axis=0); Seq2Seq: encoded.tile_memory(k))."
        )


class _Search:
    """One beam search call: the two loops and what they share."""

    # drop_finished: the loop's phases, and the share of a phase's examples still
    # running below which the next phase starts on those alone. On the reduced Multi30k
    # model (batches of 64 sorted by length) 4 phases at 60% leave 76% of the row-steps
    # of one loop; dropping every example the moment it ends would leave 73%.
    PHASES, SHRINK = 4, 0.6

    def __init__(self, strategy, step, limits, max_length, end_token, pad_token, drop_finished):
        self.step = step
        self.k = strategy.beam_size
        self.n_best = strategy.n_best
        self.scorer = strategy.scorer
        self.next_token = strategy.constraints.next_token(end_token, step.outputs_log_probs)
        self.limits = limits
        self.max_length = max_length
        self.end_token = end_token
        self.pad_token = pad_token
        self.drop_finished = drop_finished
        self.aligned = step.has_alignments
        self.batch_size = ops.shape(limits)[0]
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
            alignments = ops.reshape(alignments, (-1, self.k, self.step.source_length))
        return log_p, states, alignments

    def _loop(self, cond, body, state, finished, result):
        """`ops.while_loop(cond, body, (state,))`, returning what `result` takes from
        its final state, per example, in the batch's order.

        With `drop_finished` it runs in phases (see `BeamSearch`); `finished(state)`
        says which examples are done."""
        if not self.drop_finished:
            (state,) = ops.while_loop(cond, body, (state,), maximum_iterations=self.max_length)
            return result(state)
        examples = ops.arange(self.batch_size, dtype="int32")
        parts = []
        for phase in range(self.PHASES):
            phase_cond = cond
            if phase < self.PHASES - 1:
                threshold = self.SHRINK * ops.cast(ops.shape(examples)[0], "float32")

                def phase_cond(v, threshold=threshold):
                    running = ops.sum(ops.cast(ops.logical_not(finished(v)), "float32"))
                    return ops.logical_and(cond(v), running > threshold)

            (state,) = ops.while_loop(
                phase_cond, body, (state,), maximum_iterations=self.max_length
            )
            if phase == self.PHASES - 1:
                break
            done = finished(state)
            gone = ops.cast(ops.nonzero(done)[0], "int32")
            parts.append((ops.take(examples, gone, axis=0), _take(result(state), gone)))
            keep = ops.cast(ops.nonzero(ops.logical_not(done))[0], "int32")
            examples = ops.take(examples, keep, axis=0)
            state = self._keep_examples(state, keep)
        parts.append((examples, result(state)))
        order = ops.argsort(ops.concatenate([ids for ids, _ in parts], axis=0))
        return keras.tree.map_structure(
            lambda *pieces: ops.take(ops.concatenate(pieces, axis=0), order, axis=0),
            *[values for _, values in parts],
        )

    def _keep_examples(self, state, keep):
        """The loop state, the step function and the length limits of the examples
        `keep` only, for the next phase."""
        rows = ops.reshape(
            keep[:, None] * self.k + ops.arange(self.k, dtype="int32")[None, :], (-1,)
        )
        kept = {
            name: _take(value, rows if name in _PER_ROW else keep)
            for name, value in state._asdict().items()
            if name != "t"
        }
        self.step = self.step.take_rows(rows)
        self.limits = ops.take(self.limits, keep, axis=0)
        self.batch_offsets = ops.arange(ops.shape(keep)[0], dtype="int32")[:, None] * self.k
        return state._replace(**kept)

    def _reorder_states(self, states, parent):
        rows = ops.reshape(parent + self.batch_offsets, (-1,))
        return keras.tree.map_structure(lambda s: ops.take(s, rows, axis=0), states)

    def _first_logp(self):
        first_beam = ops.convert_to_tensor([0.0] + [NEG_INF] * (self.k - 1), "float32")
        return ops.tile(first_beam[None, :], [self.batch_size, 1])

    def _empty(self, n):
        """Token buffers `(batch, n, max_length)` and alignment histories (or ())."""
        tokens = ops.full((self.batch_size, n, self.max_length), self.pad_token, "int32")
        if not self.aligned:
            return tokens, ()
        shape = (self.batch_size, n, self.max_length, self.step.source_length)
        return tokens, ops.zeros(shape, "float32")

    # ---- the lecture notes' rule: finished hypotheses are set aside -----------------
    def set_aside(self, first_tokens, first_states):
        k, n_best, end_token = self.k, self.n_best, self.end_token
        scorer = self.scorer

        def cond(v):
            return ops.logical_not(ops.all(v.done))

        def body(v):
            t = v.t
            log_p, states, step_align = self._expand(t, v.last, v.states, v.alive_seqs)
            vocab_size = log_p.shape[-1]
            total = ops.reshape(v.alive_logp[:, :, None] + log_p, (-1, k * vocab_size))
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
            cand_seqs = write_step(_gather_beams(v.alive_seqs, parent), t, token, axis=2)
            cand_align, coverage = (), None
            if self.aligned:
                history = _gather_beams(v.alive_align, parent)
                written = _gather_beams(step_align, parent)
                cand_align = write_step(history, t, written, axis=2)
                coverage = ops.sum(cand_align, axis=2)

            # Only extensions inside the beam (the k best) complete; rows already done
            # take nothing more, so their complete hypotheses stay frozen.
            rank = ops.arange(width, dtype="int32")[None, :]
            completes = ops.logical_and(ends, rank < k)
            completes = ops.logical_and(completes, cand_logp > NEG_INF / 2)
            completes = ops.logical_and(completes, ops.logical_not(v.done)[:, None])
            lengths = ops.full(ops.shape(token), length, "int32")
            scored_lengths = lengths
            if not scorer.count_end_token:
                scored_lengths = lengths - ops.cast(picks_end, "int32")
            score = scorer(cand_logp, scored_lengths, coverage)
            if not scorer.count_end_token and coverage is not None:
                # TFA scores the step that picks the end token without coverage.
                score = ops.where(picks_end, scorer(cand_logp, scored_lengths), score)
            cand_score = ops.where(completes, score, NEG_INF)
            pool = v.pool
            pool_score, keep = ops.top_k(ops.concatenate([pool.scores, cand_score], 1), n_best)
            keep = ops.cast(keep, "int32")

            def merged(a, b):
                both = ops.concatenate([a, b], axis=1)
                if len(both.shape) == 2:
                    return ops.take_along_axis(both, keep, 1)
                return _gather_beams(both, keep)

            pool = _Pool(
                seqs=merged(pool.seqs, cand_seqs),
                scores=pool_score,
                log_probs=merged(pool.log_probs, cand_logp),
                lengths=merged(pool.lengths, lengths),
                valid=merged(pool.valid, completes),
                alignments=merged(pool.alignments, cand_align) if self.aligned else (),
            )

            # The live beam: the k best extensions that did not end.
            alive_logp, chosen = ops.top_k(ops.where(ends, NEG_INF, cand_logp), k)
            chosen = ops.cast(chosen, "int32")
            full = ops.sum(ops.cast(pool.valid, "int32"), axis=1) >= n_best
            return (
                _SetAside(
                    t=t + 1,
                    last=ops.reshape(ops.take_along_axis(token, chosen, 1), (-1,)),
                    states=self._reorder_states(states, ops.take_along_axis(parent, chosen, 1)),
                    alive_seqs=_gather_beams(cand_seqs, chosen),
                    alive_logp=alive_logp,
                    pool=pool,
                    done=ops.logical_or(v.done, ops.logical_or(full, length >= self.limits)),
                    alive_align=_gather_beams(cand_align, chosen) if self.aligned else (),
                ),
            )

        pool_seqs, pool_align = self._empty(n_best)
        alive_seqs, alive_align = self._empty(k)
        start = _SetAside(
            t=ops.convert_to_tensor(0, "int32"),
            last=first_tokens,
            states=first_states,
            alive_seqs=alive_seqs,
            alive_logp=self._first_logp(),
            pool=_Pool(
                seqs=pool_seqs,
                scores=ops.full((self.batch_size, n_best), NEG_INF, dtype="float32"),
                log_probs=ops.zeros((self.batch_size, n_best), "float32"),
                lengths=ops.zeros((self.batch_size, n_best), "int32"),
                valid=ops.zeros((self.batch_size, n_best), "bool"),
                alignments=pool_align,
            ),
            done=ops.zeros((self.batch_size,), "bool"),
            alive_align=alive_align,
        )
        pool = self._loop(cond, body, start, finished=lambda v: v.done, result=lambda v: v.pool)
        return DecodeResult(
            pool.seqs,
            pool.lengths,
            pool.scores,
            pool.log_probs,
            pool.alignments if self.aligned else None,
        )

    # ---- TensorFlow Addons' rule: finished hypotheses compete in the beam -----------
    def compete(self, first_tokens, first_states):
        k, end_token, scorer = self.k, self.end_token, self.scorer

        def cond(v):
            return ops.logical_not(ops.all(v.finished))

        def body(v):
            t = v.t
            log_p, states, step_align = self._expand(t, v.last, v.states, v.seqs)
            vocab_size = log_p.shape[-1]
            is_end = ops.equal(ops.arange(vocab_size, dtype="int32"), end_token)
            # A finished hypothesis' only extension is the end token, at probability 1.
            end_only = ops.where(is_end, 0.0, NEG_INF)[None, None, :]
            log_p = ops.where(v.finished[:, :, None], end_only, log_p)
            total = v.log_probs[:, :, None] + log_p
            live = ops.logical_not(v.finished)[:, :, None]
            grows = (
                live if scorer.count_end_token else ops.logical_and(live, ops.logical_not(is_end))
            )
            scored_lengths = v.lengths[:, :, None] + ops.cast(grows, "int32")
            score = scorer(total, scored_lengths)
            if self.aligned:
                step_align = ops.where(v.finished[:, :, None], 0.0, step_align)
                coverage = ops.sum(v.alignments, axis=2) + step_align
                with_coverage = v.finished[:, :, None]
                if scorer.count_end_token:
                    with_coverage = ops.logical_or(with_coverage, is_end[None, None, :])
                cp = (
                    scorer.coverage_penalty(coverage)[:, :, None]
                    if scorer.coverage_penalty_weight
                    else 0.0
                )
                score = ops.where(with_coverage, score + cp, score)
            scores, index = ops.top_k(ops.reshape(score, (-1, k * vocab_size)), k)
            index = ops.cast(index, "int32")
            parent, token = index // vocab_size, index % vocab_size
            parent_finished = ops.take_along_axis(v.finished, parent, 1)
            written = ops.where(parent_finished, self.pad_token, token)
            finished = ops.logical_or(parent_finished, ops.equal(token, end_token))
            finished = ops.logical_or(finished, (t + 1 >= self.limits)[:, None])
            alignments = ()
            if self.aligned:
                alignments = write_step(
                    _gather_beams(v.alignments, parent),
                    t,
                    _gather_beams(step_align, parent),
                    axis=2,
                )
            return (
                _Compete(
                    t=t + 1,
                    last=ops.reshape(token, (-1,)),
                    states=self._reorder_states(states, parent),
                    seqs=write_step(_gather_beams(v.seqs, parent), t, written, axis=2),
                    log_probs=ops.take_along_axis(
                        ops.reshape(total, (-1, k * vocab_size)), index, 1
                    ),
                    lengths=ops.take_along_axis(v.lengths, parent, 1)
                    + ops.cast(ops.logical_not(parent_finished), "int32"),
                    finished=finished,
                    scores=scores,
                    # An example whose beams had all finished before this step is settled:
                    # no later step changes it (the step after the last end rescores it,
                    # see TFAScorer), so drop_finished may drop it.
                    settled=ops.all(parent_finished, axis=1),
                    alignments=alignments,
                ),
            )

        seqs, align = self._empty(k)
        start = _Compete(
            t=ops.convert_to_tensor(0, "int32"),
            last=first_tokens,
            states=first_states,
            seqs=seqs,
            log_probs=self._first_logp(),
            lengths=ops.zeros((self.batch_size, k), "int32"),
            finished=ops.zeros((self.batch_size, k), "bool"),
            scores=ops.zeros((self.batch_size, k), "float32"),
            settled=ops.zeros((self.batch_size,), "bool"),
            alignments=align,
        )
        out = self._loop(
            cond,
            body,
            start,
            finished=lambda v: v.settled,
            result=lambda v: v._replace(last=(), states=(), t=()),
        )
        n = self.n_best
        return DecodeResult(
            out.seqs[:, :n],
            out.lengths[:, :n],
            out.scores[:, :n],
            out.log_probs[:, :n],
            out.alignments[:, :n] if self.aligned else None,
        )
