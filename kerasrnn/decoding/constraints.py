"""What a decoder may generate, shared by every strategy: `Constraints` (length limits,
a minimum length, n-gram blocking, forbidden tokens, logits processors) and `NextToken`,
which applies them to one step's logits."""

import keras
from keras import ops

from kerasrnn.decoding.common import check_count, length_limits
from kerasrnn.ops import NEG_INF
from kerasrnn.validation import check_number


@keras.saving.register_keras_serializable(package="kerasrnn")
class Constraints:
    """The rules on a decoder's output, given once and shared by every strategy.

    Per step t (t tokens generated so far, `tokens` the `(rows, max_length)` buffer of
    them with `pad_token` from position t on) the step's logits z become the
    log-probabilities a strategy chooses from:

    1. each logits processor in order: z <- processor(t, tokens, z);
    2. forbidden tokens: z_v <- -inf (renormalised away: they are never generated);
    3. log p = log_softmax(z);
    4. blocked tokens get log p = -inf *without* renormalising the rest (so scores
       stay the decoder's log-probabilities): the end token while t < `min_length`,
       and every token that would repeat an n-gram of the hypothesis.

    and the number of tokens an example may generate is
    min(max_length, ceil(max_length_ratio * source_length)) when `max_length_ratio`
    is set (the strategy is then called with `source_lengths`).

    Args:
        min_length: the end token is not allowed before `min_length` other tokens.
        block_ngram_repeat: n; no n-gram occurs twice in an output (1: no token twice).
        forbidden_tokens: ids never generated (e.g. [UNK]).
        max_length_ratio: example b generates at most ceil(ratio * source_lengths[b])
            tokens (at least one, at most `max_length`).
        logits_processors: a list of callables `(step, tokens, logits) -> logits`,
            applied first, in order: forced prefixes and other rules of your own.
            A processor registered with `keras.saving.register_keras_serializable`
            survives `get_config`; a lambda does not.

    Example:

    >>> import kerasrnn
    >>> rules = kerasrnn.decoding.Constraints(min_length=2, forbidden_tokens=[1])
    >>> greedy = kerasrnn.decoding.GreedySearch(constraints=rules)
    >>> beam = kerasrnn.decoding.BeamSearch(beam_size=3, constraints=rules)
    >>> greedy.constraints.get_config()["forbidden_tokens"]
    [1]
    """

    def __init__(
        self,
        min_length=None,
        block_ngram_repeat=None,
        forbidden_tokens=(),
        max_length_ratio=None,
        logits_processors=(),
    ):
        self.min_length = check_count("min_length", min_length)
        self.block_ngram_repeat = check_count("block_ngram_repeat", block_ngram_repeat, minimum=1)
        self.forbidden_tokens = [check_count("forbidden_tokens", t) for t in forbidden_tokens]
        self.max_length_ratio = check_number(
            "max_length_ratio", max_length_ratio, "(0, inf)", allow_none=True
        )
        if callable(logits_processors):
            raise TypeError(
                "`logits_processors` takes a list of callables; got one callable: pass [processor]."
            )
        logits_processors = list(logits_processors)
        for processor in logits_processors:
            if not callable(processor):
                raise TypeError(
                    "`logits_processors` must hold callables (step, tokens, logits) -> "
                    f"logits, got {processor!r}."
                )
        self.logits_processors = logits_processors

    def limits(self, batch_size, max_length, source_lengths=None):
        """Per-example maximum number of generated tokens, int32 `(batch,)`."""
        if source_lengths is not None and self.max_length_ratio is None:
            source_lengths = None  # the lengths only matter with a ratio
        return length_limits(batch_size, max_length, source_lengths, self.max_length_ratio)

    def next_token(self, end_token, outputs_log_probs=False):
        """The per-step function applying these constraints (see `NextToken`)."""
        return NextToken(self, end_token, outputs_log_probs)

    def cache_key(self):
        """A hashable summary (processors by identity) for compiled-decoder caches."""
        return (
            tuple(self.forbidden_tokens),
            self.min_length,
            self.block_ngram_repeat,
            self.max_length_ratio,
            tuple(self.logits_processors),
        )

    def get_config(self):
        return {
            "min_length": self.min_length,
            "block_ngram_repeat": self.block_ngram_repeat,
            "forbidden_tokens": list(self.forbidden_tokens),
            "max_length_ratio": self.max_length_ratio,
            "logits_processors": [
                keras.saving.serialize_keras_object(p) for p in self.logits_processors
            ],
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["logits_processors"] = [
            keras.saving.deserialize_keras_object(p) if isinstance(p, dict) else p
            for p in config.get("logits_processors", ())
        ]
        return cls(**config)

    def __repr__(self):
        set_ = {k: v for k, v in self.get_config().items() if v not in (None, [], ())}
        return "Constraints(" + ", ".join(f"{k}={v!r}" for k, v in set_.items()) + ")"


def get_constraints(constraints):
    """None -> no constraints; a `Constraints` as is; a dict -> its config."""
    if constraints is None:
        return Constraints()
    if isinstance(constraints, Constraints):
        return constraints
    if isinstance(constraints, dict):
        if "class_name" in constraints:
            return keras.saving.deserialize_keras_object(constraints)
        return Constraints(**constraints)
    raise TypeError(
        "`constraints` must be a kerasrnn.decoding.Constraints, its config dict or None; "
        f"got {constraints!r}."
    )


class NextToken:
    """One step's logits -> (log-probabilities to choose from, logits for a sampler),
    under `constraints` (see `Constraints` for the order of the rules).

    A step function that declares `outputs_log_probs` (an `Ensemble`) returns
    log-probabilities: they are used as they are, never renormalised.
    """

    def __init__(self, constraints, end_token, outputs_log_probs=False):
        self.end_token = end_token
        self.min_length = constraints.min_length
        self.ngram = constraints.block_ngram_repeat
        self.forbidden = constraints.forbidden_tokens
        self.processors = constraints.logits_processors
        if self.min_length and end_token is None:
            raise ValueError("`min_length` needs an `end_token` (the token it holds back).")
        self.outputs_log_probs = outputs_log_probs

    def processed_logits(self, t, tokens, logits):
        for processor in self.processors:
            processed = ops.cast(ops.convert_to_tensor(processor(t, tokens, logits)), "float32")
            if len(processed.shape) != 2 or tuple(processed.shape[1:]) != tuple(logits.shape[1:]):
                raise ValueError(
                    "A logits processor `(step, tokens, logits) -> logits` must return "
                    f"logits of the shape it received, {tuple(logits.shape)}; got "
                    f"{tuple(processed.shape)} from {processor!r}."
                )
            logits = processed
        if self.forbidden:
            vocab_size = logits.shape[-1]
            if max(self.forbidden) >= vocab_size:
                raise ValueError(
                    f"`forbidden_tokens` holds id {max(self.forbidden)}, outside the "
                    f"decoder's vocabulary of {vocab_size}."
                )
            ids = ops.arange(vocab_size, dtype="int32")[:, None]
            forbidden = ops.any(
                ops.equal(ids, ops.convert_to_tensor(self.forbidden, "int32")[None, :]), axis=1
            )
            logits = ops.where(forbidden[None, :], NEG_INF, logits)
        return logits

    def blocked(self, t, tokens, vocab_size):
        """bool `(rows, vocab_size)`: tokens not allowed at step t; None if none are."""
        blocked = None
        if self.min_length:
            is_end = ops.equal(ops.arange(vocab_size, dtype="int32"), self.end_token)
            blocked = ops.logical_and(is_end[None, :], t < self.min_length)
            blocked = ops.broadcast_to(blocked, (ops.shape(tokens)[0], vocab_size))
        if self.ngram:
            repeats = repeated_ngram_tokens(tokens, t, self.ngram, vocab_size)
            blocked = repeats if blocked is None else ops.logical_or(blocked, repeats)
        return blocked

    def __call__(self, t, tokens, logits):
        """(log-probabilities to choose from, logits for a sampler) at step t."""
        logits = self.processed_logits(t, tokens, logits)
        log_p = logits if self.outputs_log_probs else ops.log_softmax(logits, axis=-1)
        blocked = self.blocked(t, tokens, logits.shape[-1])
        if blocked is not None:
            log_p = ops.where(blocked, NEG_INF, log_p)
            logits = ops.where(blocked, NEG_INF, logits)
        return log_p, logits


def repeated_ngram_tokens(tokens, t, n, vocab_size):
    """bool `(rows, vocab_size)`: v is True where appending v at position t would repeat
    an n-gram already in tokens[:, :t] (n = 1: v already occurs).

    The n-gram ending at t is (y_{t-n+1} .. y_{t-1}, v); it repeats the n-gram starting
    at j (j + n <= t) when y_{j..j+n-2} = y_{t-n+1..t-1} and v = y_{j+n-1}.
    """
    max_length = tokens.shape[1]
    rows = ops.shape(tokens)[0]
    starts = max_length - n + 1
    if starts <= 0:
        return ops.zeros((rows, vocab_size), "bool")
    # windows[:, j, i] = y_{j+i}
    windows = ops.stack([tokens[:, i : i + starts] for i in range(n)], axis=-1)
    j = ops.arange(starts, dtype="int32")
    match = ops.broadcast_to((j + n <= t)[None, :], (rows, starts))
    if n > 1:
        last = ops.clip(t - n + 1 + ops.arange(n - 1, dtype="int32"), 0, max_length - 1)
        suffix = ops.take(tokens, last, axis=1)  # (rows, n - 1)
        same = ops.all(ops.equal(windows[:, :, : n - 1], suffix[:, None, :]), axis=-1)
        match = ops.logical_and(match, same)
    # Scatter-add a 1 at (row, y_{j+n-1}) for every matching j: memory O(rows * vocab).
    row_ids = ops.broadcast_to(ops.arange(rows, dtype="int32")[:, None], (rows, starts))
    indices = ops.stack([ops.reshape(row_ids, (-1,)), ops.reshape(windows[:, :, n - 1], (-1,))], 1)
    counts = ops.scatter(
        indices, ops.reshape(ops.cast(match, "float32"), (-1,)), (rows, vocab_size)
    )
    return counts > 0
