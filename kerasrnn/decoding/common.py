"""What greedy, sampling and beam search share: the result type, checks, length limits
and the length penalties."""
import collections

import keras
from keras import ops

# A finite "minus infinity": -inf would turn into NaN in (-inf) - (-inf) and 0 * -inf.
NEG_INF = -1e9


class DecodeResult(
    collections.namedtuple("DecodeResult", ["tokens", "lengths", "scores", "log_probs"])
):
    """What a decoder returns (a namedtuple, so it passes through `tf.function`).

    Greedy search and sampling give one sequence per example; beam search gives the
    `n_best` best per example, best first, with one more leading axis of size `n_best`.

    Attributes:
        tokens: int32 `(batch, [n_best,] max_length)`, the generated ids (the end token
            included when one was produced), `pad_token` after it.
        lengths: int32 `(batch, [n_best])`, number of generated tokens, end token
            included.
        scores: float32 `(batch, [n_best])`, the ranking score: the log-probability
            divided by the length penalty (equal to `log_probs` without normalisation).
        log_probs: float32 `(batch, [n_best])`, sum_t log p(y_t | y_<t, x) under the
            model's own (unscaled) distribution.
    """


def check_step_inputs(start_tokens, max_length, end_token):
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(
            f"`max_length` must be a positive Python integer (the static length of the "
            f"output buffer), got max_length={max_length!r}."
        )
    if end_token is not None and (
        isinstance(end_token, bool) or not isinstance(end_token, int) or end_token < 0
    ):
        raise ValueError(
            f"`end_token` must be a non-negative integer id or None, got "
            f"end_token={end_token!r}."
        )
    start_tokens = ops.cast(ops.convert_to_tensor(start_tokens), "int32")
    if len(start_tokens.shape) != 1:
        raise ValueError(
            f"`start_tokens` must have shape (batch,), one id per example; got shape "
            f"{tuple(start_tokens.shape)}."
        )
    return start_tokens


def check_logits(logits, batch_size):
    if len(logits.shape) != 2:
        raise ValueError(
            f"`step_fn` must return logits of shape (batch, vocab_size); got shape "
            f"{tuple(logits.shape)}."
        )
    return ops.cast(logits, "float32")


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
        raise ValueError(
            f"`max_length_ratio` must be positive, got {max_length_ratio!r}."
        )
    source_lengths = ops.cast(ops.convert_to_tensor(source_lengths), "float32")
    ratio_limits = ops.cast(ops.ceil(float(max_length_ratio) * source_lengths), "int32")
    return ops.clip(ratio_limits, 1, max_length)


def length_penalty(lengths, length_normalization, alpha=0.6):
    """The divisor lp(t) of the ranking score log p(y) / lp(t).

    * `None`: lp = 1, the raw log-probability (favours short outputs);
    * `"average"`: lp = t, the mean log-probability per token (1/t sum_i log p(y_i|...));
    * `"gnmt"`: lp = ((5 + t) / 6) ** alpha (Wu et al. 2016, GNMT).
    """
    lengths = ops.cast(lengths, "float32")
    if length_normalization is None:
        return ops.ones_like(lengths)
    if length_normalization == "average":
        return ops.maximum(lengths, 1.0)
    if length_normalization == "gnmt":
        return ops.power((5.0 + lengths) / 6.0, float(alpha))
    raise ValueError(
        "`length_normalization` must be None, 'average' or 'gnmt', got "
        f"length_normalization={length_normalization!r}."
    )


def map_states(fn, states):
    return keras.tree.map_structure(fn, states)
