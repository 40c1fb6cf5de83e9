"""Token-by-token decoding: `GreedySearch` (argmax) and `RandomSampling` (temperature,
top-k, top-p) share one loop; a subclass changes how a token is chosen (`choose`).

Sampling delegates the draw to keras-hub's samplers (`RandomSampler`, `TopKSampler`,
`TopPSampler`): their `compute_probabilities` applies the temperature, their
`get_next_token` filters and draws, and their `run_loop` threads the seed state through
the loop on JAX as keras-hub does. Their own `__call__` is not used because it works on
a prompt buffer rather than a (tokens, states) step function and returns neither scores
nor lengths. Greedy search needs none of it (an argmax), so it runs without keras-hub.
"""

import collections

import keras
from keras import ops

from kerasrnn.decoding.common import DecodeResult, write_step
from kerasrnn.decoding.strategy import DecodingStrategy
from kerasrnn.validation import check_int, check_number

# The loop's state, one row per example.
_Loop = collections.namedtuple(
    "_Loop",
    ["t", "last", "states", "tokens", "lengths", "log_probs", "finished", "alignments"],
)


@keras.saving.register_keras_serializable(package="kerasrnn")
class GreedySearch(DecodingStrategy):
    """Greedy decoding: y_t = argmax_y p(y | y_<t, x), until the end token or the limit.

    Calling it (see `DecodingStrategy.__call__` for the arguments) returns a
    `DecodeResult` with tokens `(batch, 1, max_length)`, lengths, scores = log_probs =
    sum_t log p(y_t | y_<t, x) `(batch, 1)`, and alignments `(batch, 1, max_length,
    source_length)` if the step function returns them. Tokens the constraints block
    are masked without renormalising the rest, so the scores stay the decoder's
    log-probabilities. The loop is a `keras.ops.while_loop` over tensors: batched, and
    usable inside `tf.function`/XLA, a SavedModel or `jax.jit`.

    The loop picks each token with `choose(logits)`; a subclass overriding it is a
    strategy of its own (`RandomSampling` is one).

    Args:
        constraints: a `kerasrnn.decoding.Constraints`, or None.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(
    ...     [[.1, .6, .3], [.1, .1, .8], [.7, .2, .1]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> out = kerasrnn.decoding.GreedySearch()(step, [0], (), max_length=4, end_token=2)
    >>> keras.ops.convert_to_numpy(out.tokens[:, 0]).tolist()
    [[1, 2, 0, 0]]
    """

    def choose(self, logits):
        """The next token per row, int `(rows,)`, from the constrained logits
        `(rows, vocab_size)` (blocked tokens at `kerasrnn.ops.NEG_INF`)."""
        return ops.argmax(logits, axis=-1)

    def run_loop(self, cond, body, loop_vars, maximum_iterations):
        return ops.while_loop(cond, body, loop_vars, maximum_iterations=maximum_iterations)

    def decode(self, step, start_tokens, initial_states, max_length, end_token, pad_token, limits):
        next_token = self.constraints.next_token(end_token, step.outputs_log_probs)
        batch_size = ops.shape(start_tokens)[0]

        def cond(v):
            return ops.logical_not(ops.all(v.finished))

        def body(v):
            logits, states, step_alignments = step(v.last, v.states)
            log_p, logits = next_token(v.t, v.tokens, logits)
            chosen = ops.cast(self.choose(logits), "int32")
            # Scores are under the decoder's own distribution, whatever the temperature.
            log_p = ops.take_along_axis(log_p, chosen[:, None], axis=-1)[:, 0]
            alive = ops.logical_not(v.finished)
            chosen = ops.where(alive, chosen, pad_token)
            alignments = v.alignments
            if step.has_alignments:
                written = ops.where(alive[:, None], step_alignments, 0.0)
                alignments = write_step(alignments, v.t, written, axis=1)
            finished = ops.logical_or(v.finished, v.t + 1 >= limits)
            if end_token is not None:
                finished = ops.logical_or(finished, ops.equal(chosen, end_token))
            return (
                _Loop(
                    t=v.t + 1,
                    last=chosen,
                    states=states,
                    tokens=write_step(v.tokens, v.t, chosen, axis=1),
                    lengths=v.lengths + ops.cast(alive, "int32"),
                    log_probs=v.log_probs + ops.where(alive, log_p, 0.0),
                    finished=finished,
                    alignments=alignments,
                ),
            )

        start = _Loop(
            t=ops.convert_to_tensor(0, "int32"),
            last=start_tokens,
            states=initial_states,
            tokens=ops.full((batch_size, max_length), pad_token, dtype="int32"),
            lengths=ops.zeros((batch_size,), "int32"),
            log_probs=ops.zeros((batch_size,), "float32"),
            finished=ops.zeros((batch_size,), "bool"),
            # () when the step function returns no alignments: an empty structure
            alignments=(
                ops.zeros((batch_size, max_length, step.source_length), "float32")
                if step.has_alignments
                else ()
            ),
        )
        (out,) = self.run_loop(cond, body, (start,), max_length)
        log_probs = out.log_probs[:, None]
        alignments = out.alignments[:, None] if step.has_alignments else None
        return DecodeResult(
            out.tokens[:, None], out.lengths[:, None], log_probs, log_probs, alignments
        )


@keras.saving.register_keras_serializable(package="kerasrnn")
class RandomSampling(GreedySearch):
    """Ancestral sampling: y_t ~ softmax(logits_t / temperature), optionally restricted.

    * `temperature` tau: p_tau(y) is proportional to exp(z_y / tau); tau < 1 sharpens,
      tau > 1 flattens.
    * `top_k`: draw only among the k most likely tokens (renormalised).
    * `top_p` (nucleus): draw among the smallest set of most likely tokens whose total
      probability reaches p. With `top_k` too, the k most likely are kept first.
    * `seed`: an int makes the draw repeat exactly from call to call.

    The result is as `GreedySearch`'s (tokens `(batch, 1, max_length)`); scores are the
    log-probabilities under the model's unscaled distribution.

    Args:
        temperature: tau > 0.
        top_k: a positive int or None.
        top_p: in (0, 1] or None.
        seed: an int (repeatable draws) or None.
        constraints: a `kerasrnn.decoding.Constraints`, or None.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.full((5, 5), .2, "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> sampling = kerasrnn.decoding.RandomSampling(top_k=2, seed=7)
    >>> a = sampling(step, [0, 0], (), max_length=6)
    >>> b = sampling(step, [0, 0], (), max_length=6)
    >>> bool((keras.ops.convert_to_numpy(a.tokens) == keras.ops.convert_to_numpy(b.tokens)).all())
    True
    """

    # the seed generator's state would be frozen into a compiled function
    jit_compilable = False

    def __init__(self, temperature=1.0, top_k=None, top_p=None, seed=None, constraints=None):
        super().__init__(constraints)
        # (GreedySearch is argmax decoding, the limit of temperature -> 0)
        self.temperature = check_number("temperature", temperature, "(0, inf)")
        top_k = check_int("top_k", top_k, allow_none=True)
        top_p = check_number("top_p", top_p, "(0, 1]", allow_none=True)
        self.top_k, self.top_p, self.seed = top_k, top_p, seed
        # Made once, here: its seed state is a variable, which a tf.function may only
        # create on its first trace.
        self._sampler = self.keras_hub_sampler()

    def keras_hub_sampler(self):
        """The keras-hub sampler that draws the tokens."""
        from keras_hub import samplers

        if self.top_p is not None:
            # With both set, keras-hub keeps the k most likely first, then the nucleus.
            return samplers.TopPSampler(
                p=float(self.top_p), k=self.top_k, seed=self.seed, temperature=self.temperature
            )
        if self.top_k is not None:
            return samplers.TopKSampler(k=self.top_k, seed=self.seed, temperature=self.temperature)
        return samplers.RandomSampler(seed=self.seed, temperature=self.temperature)

    def decode(self, step, start_tokens, initial_states, max_length, end_token, pad_token, limits):
        if self.seed is not None:
            # A seeded strategy repeats its draw from call to call.
            state = self._sampler.seed_generator.state
            state.assign(ops.convert_to_tensor([self.seed, 0], dtype=state.dtype))
        return super().decode(
            step, start_tokens, initial_states, max_length, end_token, pad_token, limits
        )

    def choose(self, logits):
        return self._sampler.get_next_token(self._sampler.compute_probabilities(logits))

    def run_loop(self, cond, body, loop_vars, maximum_iterations):
        return self._sampler.run_loop(
            cond, body, loop_vars=loop_vars, maximum_iterations=maximum_iterations
        )

    def get_config(self):
        return {
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "seed": self.seed,
            **super().get_config(),
        }
