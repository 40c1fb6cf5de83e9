"""Constraints on the next token, shared by greedy search, sampling and beam search:
a user's logits processor, a minimum length and n-gram blocking."""
from keras import ops

from kerasrnn.decoding.common import NEG_INF, check_count


class NextToken:
    """Turns a step's logits into the log-probabilities a decoder chooses from.

    Per step t (t tokens generated so far, `tokens` the `(rows, max_length)` buffer of
    them with `pad_token` from position t on):

    1. `logits_processor(t, tokens, logits) -> logits`, the user's hook (forbidden
       tokens, forced prefixes, ...);
    2. log p = log_softmax(logits) (skipped for a step function that declares
       `outputs_log_probs`, e.g. an ensemble: its log-probabilities are used as they are);
    3. blocked tokens get log p = NEG_INF, *without* renormalising the rest (so scores
       stay the decoder's log-probabilities): the end token while t < `min_length`,
       and every token that would repeat an n-gram of the hypothesis
       (`block_ngram_repeat=n`).
    """

    def __init__(
        self,
        end_token,
        min_length=None,
        block_ngram_repeat=None,
        logits_processor=None,
        outputs_log_probs=False,
    ):
        self.end_token = end_token
        self.min_length = check_count("min_length", min_length)
        self.ngram = check_count("block_ngram_repeat", block_ngram_repeat, minimum=1)
        if self.min_length and end_token is None:
            raise ValueError("`min_length` needs an `end_token` (the token it holds back).")
        if logits_processor is not None and not callable(logits_processor):
            raise ValueError(
                "`logits_processor` must be a callable (step, tokens, logits) -> logits, "
                f"got {logits_processor!r}."
            )
        self.logits_processor = logits_processor
        self.outputs_log_probs = outputs_log_probs

    def processed_logits(self, t, tokens, logits):
        if self.logits_processor is None:
            return logits
        processed = self.logits_processor(t, tokens, logits)
        processed = ops.cast(ops.convert_to_tensor(processed), "float32")
        if tuple(processed.shape[1:]) != tuple(logits.shape[1:]) or len(processed.shape) != 2:
            raise ValueError(
                "`logits_processor(step, tokens, logits)` must return logits of the "
                f"shape it received, {tuple(logits.shape)}; got {tuple(processed.shape)}."
            )
        return processed

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
