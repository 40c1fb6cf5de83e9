"""Exhaustive search: every output sequence scored, for vocabularies and lengths small
enough to enumerate (the reference point that shows beam search's search error)."""

import keras
import numpy as np
from keras import ops

from kerasrnn.decoding.common import DecodeResult, check_count, write_step
from kerasrnn.decoding.scorer import Scorer, get_scorer
from kerasrnn.decoding.strategy import DecodingStrategy
from kerasrnn.ops import NEG_INF

# The most rows (vocab_size ** max_length per example) an exhaustive search enumerates.
MAX_ROWS = 1 << 16


@keras.saving.register_keras_serializable(package="kerasrnn")
class ExhaustiveSearch(DecodingStrategy):
    """Exhaustive search: y* = argmax_y score(y | x) over every sequence y of at most
    `max_length` tokens that ends with the end token or at the length limit, ranked by
    the `scorer` as beam search ranks its complete hypotheses.

    Each of the V^L token sequences (V = `vocab_size`, L = `max_length`) is one row of
    the step function, fed its own tokens; a row whose sequence ends early stands for
    its hypothesis only when the tokens after the end are all id 0 (every other row
    is a duplicate and is not counted). It is exact and costs V^L rows per example, so
    it is refused past 65,536 rows: for vocabularies and lengths small enough to
    enumerate (a test's reference, the search error of greedy and small beams).

    Args:
        vocab_size: V, the step function's vocabulary size.
        max_length: L, the output length it enumerates (the call's `max_length`
            must be the same).
        n_best: how many hypotheses to return, best first.
        scorer: a `kerasrnn.decoding.Scorer` (default: log p / |y|).
        constraints: a `kerasrnn.decoding.Constraints`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> best = kerasrnn.decoding.ExhaustiveSearch(3, 4)(step, [0], (), 4, end_token=0)
    >>> keras.ops.convert_to_numpy(best.tokens[0, 0]).tolist()  # p = .4 * .9 = .36
    [2, 0, 0, 0]
    """

    def __init__(self, vocab_size, max_length, n_best=1, scorer=None, constraints=None):
        super().__init__(constraints)
        check_count("vocab_size", vocab_size, 2)
        check_count("max_length", max_length, 1)
        check_count("n_best", n_best, 1)
        if vocab_size is None or max_length is None or n_best is None:
            raise ValueError("`vocab_size`, `max_length` and `n_best` must be integers.")
        rows = vocab_size**max_length
        if rows > MAX_ROWS:
            raise ValueError(
                f"ExhaustiveSearch enumerates vocab_size ** max_length = {vocab_size}^"
                f"{max_length} = {rows} sequences per example, over its limit of {MAX_ROWS}: "
                "use a smaller vocabulary or length, or BeamSearch."
            )
        if n_best > rows:
            raise ValueError(f"`n_best` ({n_best}) is more than the {rows} sequences there are.")
        self.vocab_size, self.max_length, self.n_best = vocab_size, max_length, n_best
        self.scorer = get_scorer(scorer)
        # digits[r, t]: the token row r feeds at step t (r written in base V)
        powers = vocab_size ** np.arange(max_length - 1, -1, -1)
        self._digits = (np.arange(rows)[:, None] // powers[None, :]) % vocab_size

    @property
    def rows_per_example(self):
        return self.vocab_size**self.max_length

    @property
    def needs_alignments(self):
        return self.scorer.needs_alignments

    def _check_call(self, end_token):
        if end_token is None:
            raise ValueError("ExhaustiveSearch needs an `end_token`.")

    def drops_finished(self, step):
        if step.vocab_size != self.vocab_size:
            raise ValueError(
                f"ExhaustiveSearch(vocab_size={self.vocab_size}) got a step function with "
                f"{step.vocab_size} logits per row: pass vocab_size={step.vocab_size}."
            )
        if self.scorer.needs_alignments and not step.has_alignments:
            raise ValueError(
                "The coverage penalty needs the attention weights: the step function must "
                "return (logits, states, alignments)."
            )
        return False

    def expand(self, start_tokens, initial_states):
        rows = self.rows_per_example
        return keras.tree.map_structure(
            lambda x: ops.repeat(x, rows, axis=0), (start_tokens, initial_states)
        )

    # ---- the loop's hooks (see DecodingStrategy) ------------------------------------
    def initialize(self, search):
        if search.max_length != self.max_length:
            raise ValueError(
                f"ExhaustiveSearch(max_length={self.max_length}) was called with "
                f"max_length={search.max_length}: pass the same length to both."
            )
        batch_size, rows = search.batch_size, self.rows_per_example
        carry = {
            "seqs": ops.full((batch_size, rows, self.max_length), search.pad_token, "int32"),
            "log_probs": ops.zeros((batch_size, rows), "float32"),
            "lengths": ops.zeros((batch_size, rows), "int32"),
            "finished": ops.zeros((batch_size, rows), "bool"),
            "ended": ops.zeros((batch_size, rows), "bool"),  # by the end token
            "canonical": ops.ones((batch_size, rows), "bool"),  # not a duplicate
        }
        if search.aligned:
            shape = (batch_size, rows, self.max_length, search.step.source_length)
            carry["alignments"] = ops.zeros(shape, "float32")
        return carry

    def sequences(self, carry):
        return carry["seqs"]

    def is_done(self, carry):
        return ops.all(carry["finished"], axis=1)

    def step(self, search, t, log_p, logits, alignments, carry):
        del logits
        digits = ops.convert_to_tensor(self._digits, "int32")
        token = ops.broadcast_to(ops.take(digits, t, axis=1)[None, :], ops.shape(log_p)[:2])
        token_logp = ops.take_along_axis(log_p, token[:, :, None], axis=2)[:, :, 0]
        alive = ops.logical_not(carry["finished"])
        picks_end = ops.logical_and(alive, ops.equal(token, search.end_token))
        new = dict(carry)
        new["seqs"] = write_step(
            carry["seqs"], t, ops.where(alive, token, search.pad_token), axis=2
        )
        new["log_probs"] = carry["log_probs"] + ops.where(alive, token_logp, 0.0)
        new["lengths"] = carry["lengths"] + ops.cast(alive, "int32")
        new["ended"] = ops.logical_or(carry["ended"], picks_end)
        new["finished"] = ops.logical_or(
            ops.logical_or(carry["finished"], picks_end), (t + 1 >= search.limits)[:, None]
        )
        new["canonical"] = ops.logical_and(
            carry["canonical"], ops.logical_or(alive, ops.equal(token, 0))
        )
        if search.aligned:
            written = ops.where(alive[:, :, None], alignments, 0.0)
            new["alignments"] = write_step(carry["alignments"], t, written, axis=2)
        return token, None, new

    def finalize(self, search, carry):
        scorer, log_probs = self.scorer, carry["log_probs"]
        lengths = carry["lengths"]
        scored_lengths = lengths
        if not scorer.count_end_token:
            scored_lengths = lengths - ops.cast(carry["ended"], "int32")
        coverage = ops.sum(carry["alignments"], axis=2) if search.aligned else None
        score = scorer(log_probs, scored_lengths, coverage)
        if not scorer.count_end_token and coverage is not None:
            # as beam search: the step that picks the end token scored without coverage
            score = ops.where(carry["ended"], scorer(log_probs, scored_lengths), score)
        valid = ops.logical_and(carry["canonical"], log_probs > NEG_INF / 2)
        scores, best = ops.top_k(ops.where(valid, score, NEG_INF), self.n_best)
        best = ops.cast(best, "int32")

        def pick(x):
            if len(x.shape) == 2:
                return ops.take_along_axis(x, best, 1)
            flat = ops.reshape(x, (-1,) + tuple(x.shape[2:]))
            offsets = ops.arange(ops.shape(x)[0], dtype="int32")[:, None] * x.shape[1]
            picked = ops.take(flat, ops.reshape(best + offsets, (-1,)), axis=0)
            return ops.reshape(picked, (-1, self.n_best) + tuple(x.shape[2:]))

        return DecodeResult(
            pick(carry["seqs"]),
            pick(lengths),
            scores,
            pick(log_probs),
            pick(carry["alignments"]) if search.aligned else None,
        )

    def get_config(self):
        return {
            "vocab_size": self.vocab_size,
            "max_length": self.max_length,
            "n_best": self.n_best,
            "scorer": (
                None
                if type(self.scorer) is Scorer
                and self.scorer.get_config() == get_scorer(None).get_config()
                else keras.saving.serialize_keras_object(self.scorer)
            ),
            **super().get_config(),
        }
