"""Greedy decoding and sampling (temperature, top-k, top-p) over a step function.

The token choice is delegated to keras-hub's samplers (`GreedySampler`, `RandomSampler`,
`TopKSampler`, `TopPSampler`): their `compute_probabilities` applies the temperature and
their `get_next_token` does the filtering and the draw. Their own `__call__` is not used
because it works on a prompt buffer rather than a (tokens, states) step function and
returns neither scores nor lengths; their `run_loop` is, so that on JAX the samplers'
seed state is threaded through the loop as keras-hub does it.
"""
from keras import ops

from kerasrnn.decoding.common import (
    DecodeResult,
    StepFunction,
    check_step_inputs,
    length_limits,
    write_step,
)
from kerasrnn.decoding.constraints import NextToken


def make_sampler(temperature=1.0, top_k=None, top_p=None, seed=None):
    """The keras-hub sampler for the given options (see `sample`)."""
    from keras_hub import samplers

    if temperature is None or float(temperature) <= 0:
        raise ValueError(
            f"`temperature` must be positive (use greedy_search for argmax decoding), "
            f"got temperature={temperature!r}."
        )
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"`top_k` must be a positive integer or None, got top_k={top_k!r}.")
    if top_p is not None and not 0.0 < float(top_p) <= 1.0:
        raise ValueError(f"`top_p` must be in (0, 1] or None, got top_p={top_p!r}.")
    temperature = float(temperature)
    if top_p is not None:
        # With both set, keras-hub keeps the k most likely first, then the nucleus.
        return samplers.TopPSampler(p=float(top_p), k=top_k, seed=seed, temperature=temperature)
    if top_k is not None:
        return samplers.TopKSampler(k=top_k, seed=seed, temperature=temperature)
    return samplers.RandomSampler(seed=seed, temperature=temperature)


def decode_with_sampler(
    sampler,
    step_fn,
    start_tokens,
    initial_states,
    max_length,
    end_token=None,
    pad_token=0,
    source_lengths=None,
    max_length_ratio=None,
    min_length=None,
    block_ngram_repeat=None,
    logits_processor=None,
):
    """Generate with any keras-hub `Sampler`; see `greedy_search` for the arguments."""
    start_tokens = check_step_inputs(start_tokens, max_length, end_token)
    batch_size = ops.shape(start_tokens)[0]
    limits = length_limits(batch_size, max_length, source_lengths, max_length_ratio)
    step = StepFunction(step_fn, start_tokens, initial_states)
    next_token = NextToken(
        end_token, min_length, block_ngram_repeat, logits_processor, step.outputs_log_probs
    )

    def cond(t, last, states, tokens, lengths, log_probs, finished, *alignments):
        return ops.logical_not(ops.all(finished))

    def body(t, last, states, tokens, lengths, log_probs, finished, *alignments):
        logits, states, step_alignments = step(last, states)
        log_p, logits = next_token(t, tokens, logits)
        chosen = sampler.get_next_token(sampler.compute_probabilities(logits))
        chosen = ops.cast(chosen, "int32")
        # Scores are under the decoder's own distribution, whatever the temperature.
        log_p = ops.take_along_axis(log_p, chosen[:, None], axis=-1)[:, 0]
        alive = ops.logical_not(finished)
        chosen = ops.where(alive, chosen, pad_token)
        tokens = write_step(tokens, t, chosen, axis=1)
        lengths = lengths + ops.cast(alive, "int32")
        log_probs = log_probs + ops.where(alive, log_p, 0.0)
        if alignments:
            written = ops.where(alive[:, None], step_alignments, 0.0)
            alignments = (write_step(alignments[0], t, written, axis=1),)
        finished = ops.logical_or(finished, t + 1 >= limits)
        if end_token is not None:
            finished = ops.logical_or(finished, ops.equal(chosen, end_token))
        return (t + 1, chosen, states, tokens, lengths, log_probs, finished, *alignments)

    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        start_tokens,
        initial_states,
        ops.full((batch_size, max_length), pad_token, dtype="int32"),
        ops.zeros((batch_size,), "int32"),
        ops.zeros((batch_size,), "float32"),
        ops.zeros((batch_size,), "bool"),
    )
    if step.has_alignments:
        loop_vars += (ops.zeros((batch_size, max_length, step.source_length), "float32"),)
    outputs = sampler.run_loop(cond, body, loop_vars=loop_vars, maximum_iterations=max_length)
    tokens, lengths, log_probs = outputs[3], outputs[4], outputs[5]
    alignments = outputs[7][:, None] if step.has_alignments else None
    return DecodeResult(
        tokens[:, None], lengths[:, None], log_probs[:, None], log_probs[:, None], alignments
    )


def greedy_search(
    step_fn,
    start_tokens,
    initial_states,
    max_length,
    end_token=None,
    pad_token=0,
    source_lengths=None,
    max_length_ratio=None,
    min_length=None,
    block_ngram_repeat=None,
    logits_processor=None,
):
    """Greedy decoding: y_t = argmax_y p(y | y_<t, x), until the end token or the limit.

    Args:
        step_fn: `step_fn(tokens, states) -> (logits, states)` or `(logits, states,
            alignments)`; `tokens` is int32 `(batch,)`, `logits` `(batch, vocab_size)`
            unnormalised scores, `states` any nested structure of tensors with a
            leading batch axis (returned in the structure it was given), `alignments`
            `(batch, source_length)` attention weights, collected per output token.
        start_tokens: `(batch,)` ids fed at the first step (e.g. `[START]`, or the last
            prompt token for a language model whose states already saw the prompt).
        initial_states: the decoder states before the first step.
        max_length: Python int, the most tokens generated (the output width).
        end_token: id that finishes a sequence (it is kept in the output); None runs
            every sequence to its length limit.
        pad_token: id written after a sequence has finished.
        source_lengths, max_length_ratio: optionally limit example b to
            ceil(max_length_ratio * source_lengths[b]) tokens (still at most max_length).
        min_length: the end token is not allowed before `min_length` other tokens.
        block_ngram_repeat: n; no n-gram occurs twice in an output (1: no token twice).
        logits_processor: `logits_processor(step, tokens, logits) -> logits`, applied
            to each step's logits before anything else; `step` is the number of tokens
            generated so far, `tokens` the int32 `(batch, max_length)` buffer of them
            (`pad_token` from position `step` on). For forbidden tokens, forced
            prefixes and other constraints of your own.

    Returns:
        A `DecodeResult` with tokens `(batch, 1, max_length)`, lengths, scores =
        log_probs = sum_t log p(y_t | y_<t, x) `(batch, 1)`, and alignments
        `(batch, 1, max_length, source_length)` if the step function returns them.
        Blocked tokens are masked without renormalising the rest, so the scores stay
        the decoder's log-probabilities.

    The loop is a `keras.ops.while_loop` over tensors, so it runs batched inside
    `tf.function`/XLA, a SavedModel or `jax.jit`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(
    ...     [[.1, .6, .3], [.1, .1, .8], [.7, .2, .1]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> out = kerasrnn.decoding.greedy_search(step, [0], (), max_length=4, end_token=2)
    >>> keras.ops.convert_to_numpy(out.tokens[:, 0]).tolist()
    [[1, 2, 0, 0]]
    """
    from keras_hub.samplers import GreedySampler

    return decode_with_sampler(
        GreedySampler(),
        step_fn,
        start_tokens,
        initial_states,
        max_length,
        end_token=end_token,
        pad_token=pad_token,
        source_lengths=source_lengths,
        max_length_ratio=max_length_ratio,
        min_length=min_length,
        block_ngram_repeat=block_ngram_repeat,
        logits_processor=logits_processor,
    )


def sample(
    step_fn,
    start_tokens,
    initial_states,
    max_length,
    end_token=None,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    pad_token=0,
    source_lengths=None,
    max_length_ratio=None,
    min_length=None,
    block_ngram_repeat=None,
    logits_processor=None,
):
    """Ancestral sampling: y_t ~ softmax(logits_t / temperature), optionally restricted.

    * `temperature` tau: p_tau(y) is proportional to exp(z_y / tau); tau < 1 sharpens,
      tau > 1 flattens.
    * `top_k`: draw only among the k most likely tokens (renormalised).
    * `top_p` (nucleus): draw among the smallest set of most likely tokens whose total
      probability reaches p. With `top_k` too, the k most likely are kept first.
    * `seed`: an int makes the draw repeat exactly from call to call.

    The other arguments and the result are as in `greedy_search` (tokens
    `(batch, 1, max_length)`); scores are the log-probabilities under the model's
    unscaled distribution.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.full((5, 5), .2, "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> a = kerasrnn.decoding.sample(step, [0, 0], (), max_length=6, top_k=2, seed=7)
    >>> b = kerasrnn.decoding.sample(step, [0, 0], (), max_length=6, top_k=2, seed=7)
    >>> bool((keras.ops.convert_to_numpy(a.tokens) == keras.ops.convert_to_numpy(b.tokens)).all())
    True
    """
    return decode_with_sampler(
        make_sampler(temperature, top_k, top_p, seed),
        step_fn,
        start_tokens,
        initial_states,
        max_length,
        end_token=end_token,
        pad_token=pad_token,
        source_lengths=source_lengths,
        max_length_ratio=max_length_ratio,
        min_length=min_length,
        block_ngram_repeat=block_ngram_repeat,
        logits_processor=logits_processor,
    )
