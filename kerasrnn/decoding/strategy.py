"""The decoding strategy's contract: `DecodingStrategy`, the base every strategy
subclasses, and `get` / `serialize` (as keras-hub's samplers)."""

from typing import Any

import keras

from kerasrnn.decoding.common import DecodeResult, StepFn, StepFunction, check_step_inputs
from kerasrnn.decoding.constraints import get_constraints


class DecodingStrategy:
    """A way of generating from a step function: greedy search, sampling, beam search or
    one of your own.

    A strategy is a small serialisable object holding its options (and the
    `Constraints` on its output); calling it runs its loop over any step function
    `step_fn(tokens, states) -> (logits, states)` or `(logits, states, alignments)`.
    A subclass implements `decode(step, start_tokens, initial_states, max_length,
    end_token, pad_token, limits)` (`step` is the checked `StepFunction`, `limits` the
    per-example length limits) and `get_config`.

    Class attributes a caller (`Seq2Seq.generate`) reads:
        rows_per_example: how many rows of the step function belong to one example
            (beam search: `beam_size`; the caller repeats per-example memory that
            many times).
        jit_compilable: whether the loop may be compiled once and reused (not for
            sampling, whose seed state would be frozen into the compiled function).

    Args:
        constraints: a `kerasrnn.decoding.Constraints` (or its config), shared by any
            number of strategies; None: no constraints.
    """

    rows_per_example = 1
    n_best = 1
    jit_compilable = True

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
        raise NotImplementedError(f"{type(self).__name__} must implement `decode`.")

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


def _names():
    from kerasrnn.decoding.beam_search import BeamSearch
    from kerasrnn.decoding.sampling import GreedySearch, RandomSampling

    return {"greedy": GreedySearch, "sample": RandomSampling, "beam": BeamSearch}


def get(identifier: "str | dict | DecodingStrategy") -> DecodingStrategy:
    """A decoding strategy from a name ("greedy", "sample", "beam": the defaults), a
    config dict (what `serialize` returns) or a strategy (returned as is).

    Example:

    >>> import kerasrnn
    >>> kerasrnn.decoding.get("beam")
    BeamSearch(beam_size=4, n_best=None, scorer=None, drop_finished='auto')
    >>> kerasrnn.decoding.get(kerasrnn.decoding.serialize(
    ...     kerasrnn.decoding.RandomSampling(top_k=5)))
    RandomSampling(temperature=1.0, top_k=5, top_p=None, seed=None)
    """
    if isinstance(identifier, DecodingStrategy):
        return identifier
    if isinstance(identifier, str):
        names = _names()
        if identifier not in names:
            raise ValueError(
                f"Unknown decoding strategy {identifier!r}: use one of {sorted(names)} "
                "or a kerasrnn.decoding strategy object."
            )
        return names[identifier]()
    if isinstance(identifier, dict):
        strategy = keras.saving.deserialize_keras_object(identifier)
        if isinstance(strategy, DecodingStrategy):
            return strategy
    raise TypeError(
        "A decoding strategy is 'greedy', 'sample', 'beam', a kerasrnn.decoding "
        f"strategy (GreedySearch(), BeamSearch(...), ...) or its config; got "
        f"{identifier!r}."
    )


def serialize(strategy: "str | dict | DecodingStrategy") -> dict:
    """A strategy's config dict (`get` rebuilds it)."""
    return keras.saving.serialize_keras_object(get(strategy))
