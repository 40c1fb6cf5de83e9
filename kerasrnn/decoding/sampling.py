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

# The loop's carry, one row per example (tokens and alignments with the result's
# hypothesis axis, of size 1).
_Greedy = collections.namedtuple(
    "_Greedy", ["tokens", "lengths", "log_probs", "finished", "alignments"]
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

    Its `step` picks each token with `choose(logits)`; a subclass overriding it is a
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

    # ---- the loop's hooks (see DecodingStrategy) ------------------------------------
    def initialize(self, search):
        batch_size, max_length = search.batch_size, search.max_length
        return _Greedy(
            tokens=ops.full((batch_size, 1, max_length), search.pad_token, dtype="int32"),
            lengths=ops.zeros((batch_size,), "int32"),
            log_probs=ops.zeros((batch_size,), "float32"),
            finished=ops.zeros((batch_size,), "bool"),
            # () when the step function returns no alignments: an empty structure
            alignments=(
                ops.zeros((batch_size, 1, max_length, search.step.source_length), "float32")
                if search.aligned
                else ()
            ),
        )

    def sequences(self, carry):
        return carry.tokens

    def is_done(self, carry):
        return carry.finished

    def step(self, search, t, log_p, logits, alignments, carry):
        chosen = ops.cast(self.choose(logits[:, 0]), "int32")
        # Scores are under the decoder's own distribution, whatever the temperature.
        log_p = ops.take_along_axis(log_p[:, 0], chosen[:, None], axis=-1)[:, 0]
        alive = ops.logical_not(carry.finished)
        chosen = ops.where(alive, chosen, search.pad_token)
        history = carry.alignments
        if search.aligned:
            written = ops.where(alive[:, None, None], alignments, 0.0)
            history = write_step(history, t, written, axis=2)
        finished = ops.logical_or(carry.finished, t + 1 >= search.limits)
        if search.end_token is not None:
            finished = ops.logical_or(finished, ops.equal(chosen, search.end_token))
        carry = _Greedy(
            tokens=write_step(carry.tokens, t, chosen[:, None], axis=2),
            lengths=carry.lengths + ops.cast(alive, "int32"),
            log_probs=carry.log_probs + ops.where(alive, log_p, 0.0),
            finished=finished,
            alignments=history,
        )
        return chosen[:, None], None, carry

    def finalize(self, search, carry):
        log_probs = carry.log_probs[:, None]
        alignments = carry.alignments if search.aligned else None
        return DecodeResult(carry.tokens, carry.lengths[:, None], log_probs, log_probs, alignments)


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

    def initialize(self, search):
        if self.seed is not None:
            # A seeded strategy repeats its draw from call to call.
            state = self._sampler.seed_generator.state
            state.assign(ops.convert_to_tensor([self.seed, 0], dtype=state.dtype))
        return super().initialize(search)

    def choose(self, logits):
        return self._sampler.get_next_token(self._sampler.compute_probabilities(logits))

    def run_while(self, cond, body, loop_vars, maximum_iterations):
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
