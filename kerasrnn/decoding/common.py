"""What every decoding strategy shares: the result type, the step-function contract
(and its checks), the per-example length limits and the loops' buffer writes."""

import collections
import copy
from typing import Any, Protocol

import keras
from keras import ops

from kerasrnn.validation import check_int


class DecodeResult(
    collections.namedtuple(
        "DecodeResult",
        ["tokens", "lengths", "scores", "log_probs", "alignments"],
        defaults=(None,),
    )
):
    """What a decoder returns (a namedtuple, so it passes through `tf.function`).

    Greedy search, sampling and beam search share one layout: hypotheses along axis 1,
    best first (`n_best = 1` for greedy search and sampling).

    Attributes:
        tokens: int32 `(batch, n_best, max_length)`, the generated ids (the end token
            included when one was produced), `pad_token` after it.
        lengths: int32 `(batch, n_best)`, number of generated tokens, end token
            included.
        scores: float32 `(batch, n_best)`, the ranking score: the log-probability
            divided by the length penalty, plus the coverage penalty (equal to
            `log_probs` without either).
        log_probs: float32 `(batch, n_best)`, sum_t log p(y_t | y_<t, x) under the
            decoder's distribution.
        alignments: float32 `(batch, n_best, max_length, source_length)`, the attention
            weights the step function returned at each generated token of each kept
            hypothesis (zeros after its end); None when the step function returns no
            alignments.
    """


def check_step_inputs(start_tokens, max_length, end_token):
    check_int("max_length", max_length)  # (the static length of the output buffer)
    check_int("end_token", end_token, minimum=0, allow_none=True)
    start_tokens = ops.cast(ops.convert_to_tensor(start_tokens), "int32")
    if len(start_tokens.shape) != 1:
        raise ValueError(
            f"`start_tokens` must have shape (batch,), one id per example; got shape "
            f"{tuple(start_tokens.shape)}."
        )
    return start_tokens


def unexpected_argument(caller, unknown, accepted):
    """The one-line TypeError for the arguments `unknown` (a dict) that `caller` does
    not take: it names the first, what `caller` takes (`accepted`), and where
    TensorFlow Addons' argument names are taken (the core knows none of them)."""
    name = next(iter(unknown))
    return TypeError(
        f"{caller} got an unexpected argument {name}={unknown[name]!r}: it takes "
        f"{accepted} (for TensorFlow Addons' argument names, use "
        "kerasrnn.compat.tfa.beam_search_decoder, which takes them and names kerasrnn's "
        "equivalent of the others)."
    )


def check_count(name, value, minimum=0):
    """A Python int >= minimum (None allowed for 'off')."""
    return check_int(name, value, minimum=minimum, allow_none=True)


def describe_structure(structure):
    """The nested structure of tensors as text: containers kept, leaves as
    `<shape dtype>`, so a user sees their own states rather than a loop's internals."""
    if isinstance(structure, dict):
        inner = ", ".join(f"{k!r}: {describe_structure(v)}" for k, v in structure.items())
        return "{" + inner + "}"
    if isinstance(structure, (list, tuple)):
        items = [describe_structure(v) for v in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure).__name__ + "(" + ", ".join(items) + ")"
        if isinstance(structure, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if structure is None:
        return "None"
    shape = getattr(structure, "shape", None)
    dtype = getattr(structure, "dtype", None)
    if shape is None:
        return type(structure).__name__
    dims = ", ".join("None" if d is None else str(d) for d in shape)
    dtype = keras.backend.standardize_dtype(dtype) if dtype is not None else "?"
    return f"<({dims}{',' if len(shape) == 1 else ''}) {dtype}>"


class StepFn(Protocol):
    """The decoder contract every strategy runs: ``step_fn(tokens, states) -> (logits,
    states)`` or ``(logits, states, alignments)``.

    `tokens` is int32 `(rows,)`; `logits` `(rows, vocab_size)` unnormalised scores;
    `states` any nested structure of `(rows, ...)` tensors, returned in the structure it
    was given; `alignments` `(rows, source_length)` attention weights. A plain function
    or lambda satisfies it; so does `Seq2Seq.step_fn(encoded)`.
    """

    def __call__(self, tokens: Any, states: Any) -> tuple: ...


class StepFunction:
    """Calls a user's `step_fn` with the contract's checks.

    `step_fn(tokens, states)` returns `(logits, states)` or `(logits, states,
    alignments)`. Whether alignments come back, and their source length, is found by
    one probing call on the start tokens before the loop (its results are used for
    shapes only: in a `tf.function`, XLA or `jax.jit` graph the unused computation is
    pruned; run eagerly it costs one extra step).
    """

    def __init__(self, step_fn, start_tokens, states):
        if not callable(step_fn):
            raise ValueError(f"`step_fn` must be callable, got {step_fn!r}.")
        self.step_fn = step_fn
        self.initial_structure = states
        # A step function (e.g. an ensemble's) may declare that it returns
        # log-probabilities; they are then used as they are, never renormalised.
        self.outputs_log_probs = bool(getattr(step_fn, "outputs_log_probs", False))
        logits, _, alignments = self(start_tokens, states)
        self.first_logits = logits  # beam search checks its rows (tiled memory)
        self.vocab_size = logits.shape[-1]
        self.has_alignments = alignments is not None
        self.source_length = alignments.shape[-1] if self.has_alignments else None
        if self.has_alignments and self.source_length is None:
            raise ValueError(
                "The alignments a `step_fn` returns need a static source length "
                f"(last axis); got shape {tuple(alignments.shape)}."
            )

    @property
    def can_take_rows(self):
        return callable(getattr(self.step_fn, "take_rows", None))

    def take_rows(self, rows):
        """This step function for the rows `rows` only (beam search's
        `drop_finished`), through the user's `step_fn.take_rows`; not probed again."""
        taken = copy.copy(self)
        taken.step_fn = self.step_fn.take_rows(rows)
        return taken

    def __call__(self, tokens, states):
        out = self.step_fn(tokens, states)
        if not isinstance(out, (tuple, list)) or len(out) not in (2, 3):
            raise ValueError(
                "`step_fn(tokens, states)` must return (logits, states) or (logits, "
                f"states, alignments); got {describe_structure(out)}."
            )
        logits, new_states = out[0], out[1]
        alignments = out[2] if len(out) == 3 else None
        logits = ops.convert_to_tensor(logits)
        if len(logits.shape) != 2:
            raise ValueError(
                f"`step_fn` must return logits of shape (batch, vocab_size); got shape "
                f"{tuple(logits.shape)}."
            )
        new_states = self._check_states(new_states)
        if alignments is not None:
            alignments = ops.cast(ops.convert_to_tensor(alignments), "float32")
            if len(alignments.shape) != 2:
                raise ValueError(
                    "The alignments a `step_fn` returns must have shape (batch, "
                    f"source_length); got shape {tuple(alignments.shape)}."
                )
        return ops.cast(logits, "float32"), new_states, alignments

    def _check_states(self, new_states):
        expected = self.initial_structure
        problem = None
        if _skeleton(expected) != _skeleton(new_states):
            problem = "structures"
        if problem is None:
            # Same nesting (list and tuple count as equal): hand the loop the
            # containers it was given, then compare each state's shape and dtype.
            new_states = keras.tree.pack_sequence_as(expected, keras.tree.flatten(new_states))
            for old, new in zip(keras.tree.flatten(expected), keras.tree.flatten(new_states)):
                old_shape, new_shape = tuple(old.shape), tuple(new.shape)
                same_shape = len(old_shape) == len(new_shape) and all(
                    a is None or b is None or a == b for a, b in zip(old_shape[1:], new_shape[1:])
                )
                if not same_shape:
                    problem = "shapes"
                elif keras.backend.standardize_dtype(old.dtype) != keras.backend.standardize_dtype(
                    new.dtype
                ):
                    problem = "dtypes"
        if problem is not None:
            raise ValueError(
                f"`step_fn` must return its states with the same structure, shapes and "
                f"dtypes as it received them (the {problem} differ). Expected "
                f"{describe_structure(expected)}, received "
                f"{describe_structure(new_states)}."
            )
        return new_states


def _skeleton(structure):
    """The nesting of a structure, lists and tuples alike, leaves as None."""
    if isinstance(structure, dict):
        return {key: _skeleton(value) for key, value in structure.items()}
    if isinstance(structure, (list, tuple)):
        return tuple(_skeleton(value) for value in structure)
    return None


def length_limits(batch_size, max_length, source_lengths=None, max_length_ratio=None):
    """Per-example maximum number of generated tokens, int32 `(batch,)`.

    `max_length` caps everything (it is the static buffer width); with
    `max_length_ratio`, example b may generate at most ceil(ratio * source_lengths[b])
    tokens (at least one).
    """
    limits = ops.full((batch_size,), max_length, dtype="int32")
    if max_length_ratio is None and source_lengths is None:
        return limits
    if max_length_ratio is None or source_lengths is None:
        raise ValueError(
            "`max_length_ratio` and `source_lengths` go together: pass both or neither "
            f"(got max_length_ratio={max_length_ratio!r}, source_lengths "
            f"{'given' if source_lengths is not None else 'None'})."
        )
    if float(max_length_ratio) <= 0:
        raise ValueError(f"`max_length_ratio` must be positive, got {max_length_ratio!r}.")
    source_lengths = ops.cast(ops.convert_to_tensor(source_lengths), "float32")
    ratio_limits = ops.cast(ops.ceil(float(max_length_ratio) * source_lengths), "int32")
    return ops.clip(ratio_limits, 1, max_length)


def write_step(buffer, t, values, axis):
    """`buffer` with `values` written at position `t` of `axis` (`values` has the
    buffer's shape without that axis): the loops' per-step write into their output
    buffers.

    On TensorFlow it is a select over the buffer, not `ops.slice_update`: outside XLA
    TensorFlow runs the latter's XlaDynamicUpdateSlice by compiling it for each new
    shape, 30-50 ms every time a batch of another size arrives on a 2-core CPU,
    and beam search's `drop_finished` makes a new size at
    every phase.
    """
    values = ops.expand_dims(values, axis)
    if keras.backend.backend() != "tensorflow":
        start = [0] * len(buffer.shape)
        start[axis] = t
        return ops.slice_update(buffer, start, ops.cast(values, buffer.dtype))
    shape = [1] * len(buffer.shape)
    shape[axis] = buffer.shape[axis]
    here = ops.reshape(ops.equal(ops.arange(buffer.shape[axis], dtype="int32"), t), shape)
    return ops.where(here, ops.cast(values, buffer.dtype), buffer)
