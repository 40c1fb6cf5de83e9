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

from kerasrnn.decoding.common import DecodeResult, unexpected_argument, write_step
from kerasrnn.decoding.scorer import Scorer, get_scorer
from kerasrnn.decoding.strategy import DecodingStrategy
from kerasrnn.ops import NEG_INF
from kerasrnn.validation import check_int, is_int

# The loop's carries, one row per example. Set-aside beam search: one `_Group` per
# group of hypotheses (one group: the whole beam), each with its live hypotheses and
# the complete ones set aside (its pool, best first).
_Group = collections.namedtuple(
    "_Group", ["alive_seqs", "alive_logp", "pool", "done", "alive_align"]
)
_Pool = collections.namedtuple(
    "_Pool", ["seqs", "scores", "log_probs", "lengths", "valid", "alignments"]
)
# Competing beam search: the beam itself.
_Compete = collections.namedtuple(
    "_Compete", ["seqs", "log_probs", "lengths", "finished", "scores", "settled", "alignments"]
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

    With `groups=G` the beam is G groups of m = k / G hypotheses (rows g*m .. g*m+m-1
    of an example's k), each its own set-aside search: at every step the groups take
    the step in turn, group g ranking its extensions by

        log p(y_<=t | x) - penalty_g(y_<t, y_t)

    where penalty_g is `group_penalty`, which sees what the earlier groups chose at this
    step (none by default: G independent beam searches of k / G). Each group sets
    min(n_best, m) complete hypotheses aside and stops when it has them; the result is
    the `n_best` best of all groups, by the scorer. The kept log-probabilities and the
    scores are the model's, without the penalty. A diversity term is a subclass that
    overrides `group_penalty` (`DiverseBeamSearch`).

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
        groups: G, the number of groups the beam is searched in (`beam_size` a multiple
            of it; default 1, the whole beam).

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

    stops_at_n_best = True

    def __init__(
        self,
        beam_size=4,
        n_best=None,
        scorer=None,
        constraints=None,
        drop_finished="auto",
        groups=1,
        **unknown,
    ):
        if unknown:
            raise unexpected_argument(
                type(self).__name__,
                unknown,
                "beam_size, n_best, scorer, constraints, drop_finished and groups",
            )
        super().__init__(constraints)
        beam_size = check_int("beam_size", beam_size)
        groups = check_int("groups", groups)
        if beam_size % groups:
            raise ValueError(
                f"`beam_size` ({beam_size}) must be a multiple of `groups` ({groups}), "
                f"each group holding beam_size / groups hypotheses: pass beam_size="
                f"{(beam_size // groups + 1) * groups} or a `groups` that divides {beam_size}."
            )
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
        self.groups = groups
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
                if type(self.scorer) is Scorer
                and self.scorer.get_config() == get_scorer(None).get_config()
                else keras.saving.serialize_keras_object(self.scorer)
            ),
            "drop_finished": self.drop_finished,
            "groups": self.groups,
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

    def drops_finished(self, step):
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

    # ---- the loop's hooks: the lecture notes' rule, finished hypotheses set aside -----
    def initialize(self, search):
        size = self.beam_size // self.groups
        pool_size = min(self.n_best, size)
        groups = []
        for _ in range(self.groups):
            pool_seqs, pool_align = _empty(search, pool_size)
            alive_seqs, alive_align = _empty(search, size)
            pool = _Pool(
                seqs=pool_seqs,
                scores=ops.full((search.batch_size, pool_size), NEG_INF, dtype="float32"),
                log_probs=ops.zeros((search.batch_size, pool_size), "float32"),
                lengths=ops.zeros((search.batch_size, pool_size), "int32"),
                valid=ops.zeros((search.batch_size, pool_size), "bool"),
                alignments=pool_align,
            )
            done = ops.zeros((search.batch_size,), "bool")
            groups.append(
                _Group(alive_seqs, _first_logp(search.batch_size, size), pool, done, alive_align)
            )
        return tuple(groups)

    def sequences(self, carry):
        if len(carry) == 1:
            return carry[0].alive_seqs
        return ops.concatenate([group.alive_seqs for group in carry], axis=1)

    def is_done(self, carry):
        done = carry[0].done
        for group in carry[1:]:
            done = ops.logical_and(done, group.done)
        return done

    def step(self, search, t, log_p, logits, alignments, carry):
        """The groups of hypotheses take the step in turn (`advance`), group g's
        extensions ranked with its `group_penalty`, which sees the tokens of the
        earlier groups' beams at this step; one group (the default) is the whole beam."""
        del logits  # beam search ranks log-probabilities
        size = self.beam_size // len(carry)
        whole = len(carry) == 1
        tokens, parents, groups, beams = [], [], [], []
        for g, group in enumerate(carry):
            rows = slice(g * size, (g + 1) * size)
            group_log_p = log_p if whole else log_p[:, rows]
            aligned = alignments if whole or alignments is None else alignments[:, rows]
            # the earlier groups' beams at this step, (batch, g * size); (batch, 0) first
            earlier = ops.concatenate(beams, 1) if beams else _no_tokens(log_p)
            penalty = self.group_penalty(g, group_log_p, earlier)
            token, parent, group, beam = self.advance(
                search, t, group_log_p, aligned, group, penalty
            )
            tokens.append(token)
            parents.append(parent + g * size if g else parent)
            groups.append(group)
            beams.append(beam)
        if whole:
            return tokens[0], parents[0], tuple(groups)
        return ops.concatenate(tokens, 1), ops.concatenate(parents, 1), tuple(groups)

    def group_penalty(self, group, log_p, earlier_tokens):
        """The penalty group `group` subtracts from its extensions' log-probabilities to
        rank them at this step: the hook a diversity term overrides.

        Group g extends each of its m live hypotheses y_<t by every token y and ranks
        the extensions by

            log p(y_<t, y | x) - penalty[b, i, y]

        (b the example, i the hypothesis); the log-probabilities kept, and the scores,
        are the model's. The groups take each step in turn, so group g sees the tokens
        groups 0 .. g-1 chose at this step. `DiverseBeamSearch`'s is Hamming diversity,
        lambda times the number of those tokens equal to y.

        Args:
            group: g, the group's index (a Python int in [0, groups)).
            log_p: float32 `(batch, m, vocab)`, the next-token log-probabilities of the
                group's m live hypotheses (after the constraints).
            earlier_tokens: int32 `(batch, g * m)`, the last tokens of each earlier
                group's beam at this step (its m best extensions, those that end
                included), group by group; `(batch, 0)` for the first group.

        Returns:
            None (the default: no penalty, and no op), or a float tensor that
            broadcasts to `(batch, m, vocab)`.
        """
        del group, log_p, earlier_tokens
        return None

    def advance(self, search, t, log_p, alignments, group, penalty=None):
        """One step of one group of m hypotheses: log_p `(batch, m, vocab)`, the step's
        alignments `(batch, m, source_length)` or None, the group's carry; `penalty`
        (broadcast to log_p's shape) is subtracted from the extensions' log-probabilities
        to rank them (not from the log-probabilities kept).

        The 2m best extensions are the candidates: those among the m best that end
        (the end token, or the length limit) are set aside in the group's pool, ranked
        by the scorer; the m best that do not end are the group's live hypotheses.
        Returns their last tokens and parents `(batch, m)`, the new carry, and the
        tokens of the m best extensions `(batch, m)` (the group's beam at this step,
        those that end included)."""
        size, vocab_size = log_p.shape[1], log_p.shape[-1]
        scorer, end_token = self.scorer, search.end_token
        total = ops.reshape(group.alive_logp[:, :, None] + log_p, (-1, size * vocab_size))
        # The best 2m extensions hold at least m that do not end (each parent ends once).
        width = min(2 * size, size * vocab_size)
        if penalty is None:
            cand_rank, cand_index = ops.top_k(total, width)
            cand_logp = cand_rank
        else:
            ranked = group.alive_logp[:, :, None] + log_p - penalty
            cand_rank, cand_index = ops.top_k(ops.reshape(ranked, ops.shape(total)), width)
            cand_logp = ops.take_along_axis(total, ops.cast(cand_index, "int32"), 1)
        cand_index = ops.cast(cand_index, "int32")
        parent = cand_index // vocab_size
        token = cand_index % vocab_size
        length = t + 1
        picks_end = ops.equal(token, end_token)
        ends = ops.logical_or(picks_end, (length >= search.limits)[:, None])
        cand_seqs = write_step(_gather_beams(group.alive_seqs, parent), t, token, axis=2)
        cand_align, coverage = (), None
        if search.aligned:
            history = _gather_beams(group.alive_align, parent)
            written = _gather_beams(alignments, parent)
            cand_align = write_step(history, t, written, axis=2)
            coverage = ops.sum(cand_align, axis=2)

        # Only extensions inside the beam (the m best) complete; rows already done take
        # nothing more, so their complete hypotheses stay frozen.
        rank = ops.arange(width, dtype="int32")[None, :]
        completes = ops.logical_and(ends, rank < size)
        completes = ops.logical_and(completes, cand_logp > NEG_INF / 2)
        completes = ops.logical_and(completes, ops.logical_not(group.done)[:, None])
        lengths = ops.full(ops.shape(token), length, "int32")
        scored_lengths = lengths
        if not scorer.count_end_token:
            scored_lengths = lengths - ops.cast(picks_end, "int32")
        score = scorer(cand_logp, scored_lengths, coverage)
        if not scorer.count_end_token and coverage is not None:
            # TFA scores the step that picks the end token without coverage.
            score = ops.where(picks_end, scorer(cand_logp, scored_lengths), score)
        cand_score = ops.where(completes, score, NEG_INF)
        pool = group.pool
        pool_size = pool.scores.shape[1]
        pool_score, keep = ops.top_k(ops.concatenate([pool.scores, cand_score], 1), pool_size)
        keep = ops.cast(keep, "int32")

        def merged(a, b):
            return _pick(ops.concatenate([a, b], axis=1), keep)

        pool = _Pool(
            seqs=merged(pool.seqs, cand_seqs),
            scores=pool_score,
            log_probs=merged(pool.log_probs, cand_logp),
            lengths=merged(pool.lengths, lengths),
            valid=merged(pool.valid, completes),
            alignments=merged(pool.alignments, cand_align) if search.aligned else (),
        )

        # The live hypotheses: the m best extensions that did not end.
        alive_rank, chosen = ops.top_k(ops.where(ends, NEG_INF, cand_rank), size)
        chosen = ops.cast(chosen, "int32")
        alive_logp = alive_rank if penalty is None else ops.take_along_axis(cand_logp, chosen, 1)
        full = ops.sum(ops.cast(pool.valid, "int32"), axis=1) >= pool_size
        group = _Group(
            alive_seqs=_gather_beams(cand_seqs, chosen),
            alive_logp=alive_logp,
            pool=pool,
            done=ops.logical_or(group.done, ops.logical_or(full, length >= search.limits)),
            alive_align=_gather_beams(cand_align, chosen) if search.aligned else (),
        )
        live_tokens = ops.take_along_axis(token, chosen, 1)
        return live_tokens, ops.take_along_axis(parent, chosen, 1), group, token[:, :size]

    def finalize(self, search, carry):
        if len(carry) == 1:
            pool = carry[0].pool
        else:  # the groups' pools together, best first
            pool = keras.tree.map_structure(
                lambda *parts: ops.concatenate(parts, axis=1), *[group.pool for group in carry]
            )
            _, best = ops.top_k(pool.scores, self.n_best)
            best = ops.cast(best, "int32")
            pool = keras.tree.map_structure(lambda x: _pick(x, best), pool)
        return DecodeResult(
            pool.seqs,
            pool.lengths,
            pool.scores,
            pool.log_probs,
            pool.alignments if search.aligned else None,
        )


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
    `BeamSearch`, without `groups` (the beam is one).

    Example:

    >>> import kerasrnn
    >>> tfa_like = kerasrnn.decoding.CompetingBeamSearch(
    ...     beam_size=5, scorer=kerasrnn.decoding.TFAScorer(length_penalty_weight=0.6))
    >>> tfa_like.scorer
    TFAScorer(length_penalty_weight=0.6, coverage_penalty_weight=0.0)
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
        super().__init__(beam_size, n_best, scorer, constraints, drop_finished)

    def get_config(self):
        config = super().get_config()
        del config["groups"]  # always one
        return config

    def initialize(self, search):
        k, batch_size = self.beam_size, search.batch_size
        seqs, align = _empty(search, k)
        return _Compete(
            seqs=seqs,
            log_probs=_first_logp(batch_size, k),
            lengths=ops.zeros((batch_size, k), "int32"),
            finished=ops.zeros((batch_size, k), "bool"),
            scores=ops.zeros((batch_size, k), "float32"),
            settled=ops.zeros((batch_size,), "bool"),
            alignments=align,
        )

    def sequences(self, carry):
        return carry.seqs

    def is_done(self, carry):
        return ops.all(carry.finished, axis=1)

    def is_settled(self, carry):
        return carry.settled

    def step(self, search, t, log_p, logits, alignments, carry):
        del logits
        k, end_token, scorer = self.beam_size, search.end_token, self.scorer
        vocab_size = log_p.shape[-1]
        is_end = ops.equal(ops.arange(vocab_size, dtype="int32"), end_token)
        # A finished hypothesis' only extension is the end token, at probability 1.
        end_only = ops.where(is_end, 0.0, NEG_INF)[None, None, :]
        log_p = ops.where(carry.finished[:, :, None], end_only, log_p)
        total = carry.log_probs[:, :, None] + log_p
        live = ops.logical_not(carry.finished)[:, :, None]
        grows = live if scorer.count_end_token else ops.logical_and(live, ops.logical_not(is_end))
        scored_lengths = carry.lengths[:, :, None] + ops.cast(grows, "int32")
        score = scorer(total, scored_lengths)
        if search.aligned:
            alignments = ops.where(carry.finished[:, :, None], 0.0, alignments)
            coverage = ops.sum(carry.alignments, axis=2) + alignments
            with_coverage = carry.finished[:, :, None]
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
        parent_finished = ops.take_along_axis(carry.finished, parent, 1)
        written = ops.where(parent_finished, search.pad_token, token)
        finished = ops.logical_or(parent_finished, ops.equal(token, end_token))
        finished = ops.logical_or(finished, (t + 1 >= search.limits)[:, None])
        history = ()
        if search.aligned:
            history = write_step(
                _gather_beams(carry.alignments, parent),
                t,
                _gather_beams(alignments, parent),
                axis=2,
            )
        carry = _Compete(
            seqs=write_step(_gather_beams(carry.seqs, parent), t, written, axis=2),
            log_probs=ops.take_along_axis(ops.reshape(total, (-1, k * vocab_size)), index, 1),
            lengths=ops.take_along_axis(carry.lengths, parent, 1)
            + ops.cast(ops.logical_not(parent_finished), "int32"),
            finished=finished,
            scores=scores,
            # An example whose beams had all finished before this step is settled: no
            # later step changes it (the step after the last end rescores it, see
            # TFAScorer), so drop_finished may drop it.
            settled=ops.all(parent_finished, axis=1),
            alignments=history,
        )
        return token, parent, carry

    def finalize(self, search, carry):
        n = self.n_best
        return DecodeResult(
            carry.seqs[:, :n],
            carry.lengths[:, :n],
            carry.scores[:, :n],
            carry.log_probs[:, :n],
            carry.alignments[:, :n] if search.aligned else None,
        )


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


def _no_tokens(log_p):
    """int32 `(batch, 0)`: the earlier groups' tokens the first group sees."""
    return ops.cast(log_p[:, 0, :0], "int32")


def _pick(values, indices):
    """values `(batch, n, ...)`, indices `(batch, m)` -> `(batch, m, ...)`."""
    if len(values.shape) == 2:
        return ops.take_along_axis(values, indices, 1)
    return _gather_beams(values, indices)


def _first_logp(batch_size, k):
    """The first step's beam: one live hypothesis per example (the others at NEG_INF,
    so the k rows, which see the same token and states, do not give k copies)."""
    first_beam = ops.convert_to_tensor([0.0] + [NEG_INF] * (k - 1), "float32")
    return ops.tile(first_beam[None, :], [batch_size, 1])


def _empty(search, n):
    """Token buffers `(batch, n, max_length)` and alignment histories (or ())."""
    tokens = ops.full((search.batch_size, n, search.max_length), search.pad_token, "int32")
    if not search.aligned:
        return tokens, ()
    shape = (search.batch_size, n, search.max_length, search.step.source_length)
    return tokens, ops.zeros(shape, "float32")
