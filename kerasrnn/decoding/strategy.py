"""The decoding strategy's contract: `DecodingStrategy`, the base every strategy
subclasses, a policy over the one decoding loop (`kerasrnn.decoding.loop`).

`get` / `serialize` live above the strategies, in `kerasrnn.decoding.registry`."""

from typing import Any

import keras
from keras import ops

from kerasrnn.decoding.common import DecodeResult, StepFn, StepFunction, check_step_inputs
from kerasrnn.decoding.constraints import get_constraints
from kerasrnn.decoding.loop import Search, run


class DecodingStrategy:
    """A way of generating from a step function: greedy search, sampling, beam search or
    one of your own.

    A strategy is a small serialisable object holding its options (and the
    `Constraints` on its output); calling it runs the one decoding loop
    (`kerasrnn.decoding.loop.run`) over any step function `step_fn(tokens, states) ->
    (logits, states)` or `(logits, states, alignments)`, with the strategy as its
    policy. A subclass implements the hooks (and `get_config`); a new strategy that
    only chooses differently overrides `step` alone:

    * `initialize(search) -> carry`: its loop state, one row per example (any nested
      structure of tensors);
    * `sequences(carry)`: the tokens so far, int32 `(batch, k, max_length)` (what the
      constraints read);
    * `step(search, t, log_p, logits, alignments, carry) -> (tokens, parents, carry)`:
      one step, from the constrained log-probabilities and logits `(batch, k, vocab)`
      (and the attention weights `(batch, k, source_length)` or None) to the next
      tokens `(batch, k)`, the row each continues `(batch, k)` (None: its own) and the
      new carry;
    * `is_done(carry)`: bool `(batch,)`, examples with nothing left to do (the loop
      stops when all are); `is_settled(carry)`: those `drop_finished` may drop
      (default `is_done`);
    * `finalize(search, carry) -> DecodeResult`.

    `search` (a `kerasrnn.decoding.loop.Search`) holds the call's step function,
    length limits, `max_length`, `end_token`, `pad_token` and rows per example.

    Class attributes a caller (`Seq2Seq.generate`) reads:
        rows_per_example: how many rows of the step function belong to one example
            (beam search: `beam_size`; the caller repeats per-example memory that
            many times).
        jit_compilable: whether the loop may be compiled once and reused (not for
            sampling, whose seed state would be frozen into the compiled function).
        stops_at_n_best: whether the search stops once `n_best` hypotheses are
            complete (`Seq2Seq.generate` then completes all `rows_per_example` with
            `with_options(n_best=None)` and keeps the n best).

    Args:
        constraints: a `kerasrnn.decoding.Constraints` (or its config), shared by any
            number of strategies; None: no constraints.
    """

    rows_per_example = 1
    n_best = 1
    jit_compilable = True
    # whether the search stops once `n_best` hypotheses are complete (beam search's
    # set-aside rule: `with_options(n_best=None)` then completes them all)
    stops_at_n_best = False

    def __init__(self, constraints=None):
        self.constraints = get_constraints(constraints)

    @property
    def needs_alignments(self):
        """Whether the strategy reads the step function's alignments itself."""
        return False

    def __call__(
        self,
        step_fn: StepFn,
        start_tokens: Any,
        initial_states: Any,
        max_length: int,
        end_token: int | None = None,
        pad_token: int = 0,
        source_lengths: Any = None,
    ) -> DecodeResult:
        """Decodes a batch.

        Args:
            step_fn: `step_fn(tokens, states) -> (logits, states)` or `(logits, states,
                alignments)`; `tokens` is int32 `(rows,)`, `logits` `(rows,
                vocab_size)` unnormalised scores, `states` any nested structure of
                tensors with a leading batch axis (returned in the structure it was
                given), `alignments` `(rows, source_length)` attention weights,
                collected per output token.
            start_tokens: `(batch,)` ids fed at the first step (e.g. `[START]`, or
                the last prompt token for a language model whose states already saw
                the prompt).
            initial_states: the decoder states before the first step, `(batch, ...)`.
            max_length: Python int, the most tokens generated (the output width).
            end_token: id that finishes a sequence (kept in the output); None runs
                every sequence to its length limit (beam search needs one).
            pad_token: id written after a sequence has finished.
            source_lengths: int `(batch,)`, read by the constraints'
                `max_length_ratio`.

        Returns:
            A `DecodeResult`: hypotheses along axis 1, best first.
        """
        start_tokens = check_step_inputs(start_tokens, max_length, end_token)
        self._check_call(end_token)
        limits = self.constraints.limits(
            keras.ops.shape(start_tokens)[0], max_length, source_lengths
        )
        start_tokens, initial_states = self.expand(start_tokens, initial_states)
        step = StepFunction(step_fn, start_tokens, initial_states)
        return self.decode(
            step, start_tokens, initial_states, max_length, end_token, pad_token, limits
        )

    def _check_call(self, end_token):
        """Checks of the call's arguments before any op runs (beam search: the end
        token)."""
        del end_token  # any is fine here

    def expand(self, start_tokens, initial_states):
        """The start tokens and states per row (beam search repeats them)."""
        return start_tokens, initial_states

    def decode(self, step, start_tokens, initial_states, max_length, end_token, pad_token, limits):
        """Runs the decoding loop with this strategy's hooks (`step` is the checked
        `StepFunction`, `limits` the per-example length limits)."""
        search = Search(
            step,
            limits,
            max_length,
            end_token,
            pad_token,
            self.constraints,
            self.rows_per_example,
            self.drops_finished(step),
        )
        return run(self, search, start_tokens, initial_states)

    # ---- the loop's hooks ------------------------------------------------------------
    def drops_finished(self, step):
        """Whether this call's loop drops the examples that have finished (in
        phases); checks the step function for what the strategy needs."""
        del step
        return False

    def initialize(self, search):
        raise NotImplementedError(f"{type(self).__name__} must implement `initialize`.")

    def sequences(self, carry):
        raise NotImplementedError(f"{type(self).__name__} must implement `sequences`.")

    def step(self, search, t, log_p, logits, alignments, carry):
        raise NotImplementedError(f"{type(self).__name__} must implement `step`.")

    def is_done(self, carry):
        raise NotImplementedError(f"{type(self).__name__} must implement `is_done`.")

    def is_settled(self, carry):
        return self.is_done(carry)

    def finalize(self, search, carry):
        raise NotImplementedError(f"{type(self).__name__} must implement `finalize`.")

    def run_while(self, cond, body, loop_vars, maximum_iterations):
        """`keras.ops.while_loop` (sampling threads its seed state through it)."""
        return ops.while_loop(cond, body, loop_vars, maximum_iterations=maximum_iterations)

    # ---- options ---------------------------------------------------------------------
    def with_options(self, **options):
        """A copy of this strategy with some options changed, the others as they are
        (the same `Constraints` and scorer objects).

        Example:

        >>> import kerasrnn
        >>> kerasrnn.decoding.BeamSearch(5, n_best=2).with_options(n_best=None)
        BeamSearch(beam_size=5, n_best=None, scorer=None, drop_finished='auto', groups=1)
        """
        config = self.get_config()
        names = set(config) | {"constraints"}
        unknown = sorted(set(options) - names)
        if unknown:
            raise ValueError(
                f"{type(self).__name__} has no option {unknown[0]!r}; its options are "
                f"{sorted(names)}."
            )
        config.update(options)
        for name in ("constraints", "scorer"):
            if name in names and name not in options and hasattr(self, name):
                config[name] = getattr(self, name)
        return type(self).from_config(config)

    def get_config(self):
        config = {}
        if self.constraints.cache_key() != get_constraints(None).cache_key():
            config["constraints"] = keras.saving.serialize_keras_object(self.constraints)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def cache_key(self):
        """A hashable summary of the options (for compiled-decoder caches), or None."""
        config = {k: v for k, v in self.get_config().items() if k != "constraints"}
        try:
            return (type(self), _frozen(config), self.constraints.cache_key())
        except TypeError:  # an unhashable option (an array, a tensor)
            return None

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "constraints")
        if self.constraints.cache_key() != get_constraints(None).cache_key():
            args += (", " if args else "") + f"constraints={self.constraints!r}"
        return f"{type(self).__name__}({args})"


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    hash(value)  # TypeError for arrays and tensors
    return value
