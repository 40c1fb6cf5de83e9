"""The one decoding loop every strategy runs: a `keras.ops.while_loop` over a step
function, with the strategy as its policy.

At step t the loop calls the decoder on the last tokens of every row, applies the
`Constraints` (log p_t = log_softmax(processed logits), blocked tokens at `NEG_INF`),
and hands the result to the strategy's hook:

    carry                   = strategy.initialize(search)
    while not all(strategy.is_done(carry)):             # at most max_length times
        logits, states, a   = step_fn(last, states)
        log_p, logits       = constraints(t, strategy.sequences(carry), logits)
        last, parents, carry = strategy.step(search, t, log_p, logits, a, carry)
        states              = states of the rows `parents` (beam search re-orders them)
    return strategy.finalize(search, carry)

`last` and `states` have one row per hypothesis (`batch * rows_per_example`, rows
b*k .. b*k+k-1 for example b); the strategy's `carry` (any nested structure of
tensors) has one row per example. The hooks see hypotheses along axis 1: `log_p`,
`logits` `(batch, k, vocab)`, alignments `(batch, k, source_length)`, and return the
next tokens `(batch, k)` and, where hypotheses change places, the parent of each
`(batch, k)` (None: row i continues row i).

With `search.drop_finished` the loop runs in phases (beam search's `drop_finished`):
each phase ends once fewer than `SHRINK` of its examples are still running (by the
strategy's `is_settled`), and the next one runs on those alone; the carries of the
examples dropped are set aside and put back in the batch's order before `finalize`.
"""

import keras
from keras import ops

# drop_finished: the loop's phases, and the share of a phase's examples still running
# below which the next phase starts on those alone. On the reduced Multi30k model
# (batches of 64 sorted by length) 4 phases at 60% leave 76% of the row-steps of one
# loop; dropping every example the moment it ends would leave 73%.
PHASES, SHRINK = 4, 0.6


class Search:
    """What one decoding call's hooks read: the checked step function, the per-example
    length limits, the output width and special tokens, and the layout of the rows.

    Attributes:
        step: the `StepFunction` (its `vocab_size`, `has_alignments`, `source_length`).
        limits: int32 `(batch,)`, the most tokens example b may generate.
        max_length: the output buffers' width (a Python int).
        end_token, pad_token: ids (end_token may be None for greedy search/sampling).
        rows: hypotheses per example (`rows_per_example`; beam search's k).
        batch_size: the number of examples (a scalar tensor; it shrinks between
            `drop_finished` phases).
        drop_finished: whether the loop runs in phases.
    """

    def __init__(self, step, limits, max_length, end_token, pad_token, constraints, rows, drop):
        self.step = step
        self.limits = limits
        self.max_length = max_length
        self.end_token = end_token
        self.pad_token = pad_token
        self.next_token = constraints.next_token(end_token, step.outputs_log_probs)
        self.rows = rows
        self.drop_finished = bool(drop)
        self.aligned = step.has_alignments
        self._set_batch(ops.shape(limits)[0])

    def _set_batch(self, batch_size):
        self.batch_size = batch_size
        self.row_offsets = ops.arange(batch_size, dtype="int32")[:, None] * self.rows

    def reorder(self, states, parents):
        """The decoder states of rows `parents` `(batch, k)` (indices within each
        example), row by row."""
        rows = ops.reshape(parents + self.row_offsets, (-1,))
        return keras.tree.map_structure(lambda s: ops.take(s, rows, axis=0), states)

    def keep_examples(self, keep):
        """Narrows the call to the examples `keep` (int32, indices into the current
        batch); returns the rows they own."""
        rows = ops.reshape(
            keep[:, None] * self.rows + ops.arange(self.rows, dtype="int32")[None, :], (-1,)
        )
        self.step = self.step.take_rows(rows)
        self.limits = ops.take(self.limits, keep, axis=0)
        self._set_batch(ops.shape(keep)[0])
        return rows


def _take(structure, indices):
    return keras.tree.map_structure(lambda x: ops.take(x, indices, axis=0), structure)


def run(strategy, search, start_tokens, initial_states):
    """Decodes with `strategy`'s hooks (see the module docstring); returns what its
    `finalize` returns."""
    rows, vocab_size = search.rows, search.step.vocab_size

    def per_example(x, tail):
        return ops.reshape(x, (-1, rows) + tail)

    def cond(t, last, states, carry):
        del t, last, states
        return ops.logical_not(ops.all(strategy.is_done(carry)))

    def body(t, last, states, carry):
        logits, states, alignments = search.step(last, states)
        sequences = ops.reshape(strategy.sequences(carry), (-1, search.max_length))
        log_p, logits = search.next_token(t, sequences, logits)
        if alignments is not None:
            alignments = per_example(alignments, (search.step.source_length,))
        tokens, parents, carry = strategy.step(
            search,
            t,
            per_example(log_p, (vocab_size,)),
            per_example(logits, (vocab_size,)),
            alignments,
            carry,
        )
        if parents is not None:
            states = search.reorder(states, parents)
        return t + 1, ops.reshape(ops.cast(tokens, "int32"), (-1,)), states, carry

    def loop(cond, loop_vars):
        return strategy.run_while(cond, body, loop_vars, search.max_length)

    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        start_tokens,
        initial_states,
        strategy.initialize(search),
    )
    if not search.drop_finished:
        return strategy.finalize(search, loop(cond, loop_vars)[3])
    examples = ops.arange(search.batch_size, dtype="int32")
    parts = []
    for phase in range(PHASES):
        phase_cond = cond
        if phase < PHASES - 1:
            threshold = SHRINK * ops.cast(ops.shape(examples)[0], "float32")

            def phase_cond(t, last, states, carry, threshold=threshold):
                settled = strategy.is_settled(carry)
                running = ops.sum(ops.cast(ops.logical_not(settled), "float32"))
                return ops.logical_and(cond(t, last, states, carry), running > threshold)

        t, last, states, carry = loop(phase_cond, loop_vars)
        if phase == PHASES - 1:
            break
        settled = strategy.is_settled(carry)
        gone = ops.cast(ops.nonzero(settled)[0], "int32")
        parts.append((ops.take(examples, gone, axis=0), _take(carry, gone)))
        keep = ops.cast(ops.nonzero(ops.logical_not(settled))[0], "int32")
        examples = ops.take(examples, keep, axis=0)
        kept_rows = search.keep_examples(keep)
        loop_vars = (t, _take(last, kept_rows), _take(states, kept_rows), _take(carry, keep))
    parts.append((examples, carry))
    order = ops.argsort(ops.concatenate([ids for ids, _ in parts], axis=0))
    carry = keras.tree.map_structure(
        lambda *pieces: ops.take(ops.concatenate(pieces, axis=0), order, axis=0),
        *[values for _, values in parts],
    )
    return strategy.finalize(search, carry)
