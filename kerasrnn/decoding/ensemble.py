"""Ensemble decoding: several decoders vote with the mean of their log-probabilities."""

from keras import ops


class Ensemble:
    """A step function that combines several step functions (models) into one.

    log p(y | y_<t, x) = 1/M sum_m log p_m(y | y_<t, x)

    the mean of the members' log-probabilities (each member's logits are
    log-softmaxed first), used as they are: the decoders do not renormalise an
    ensemble's output (`outputs_log_probs = True`), so a hypothesis' `log_probs` is the
    mean of the members' log-probabilities of it. (Sampling draws from the renormalised
    product of the members' distributions.) Each member keeps its own states: the
    ensemble's states are a tuple with one entry per member, in order, and every member
    sees only its own. If members return alignments (`(batch, source_length)`, the
    same source), the ensemble returns their mean.

    Works with `greedy_search`, `sample` and `beam_search` (which repeats and
    re-orders every member's states with the beams).

    Args:
        step_fns: a list of step functions `(tokens, states) -> (logits, states)` or
            `(logits, states, alignments)`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> a = keras.ops.convert_to_tensor(np.log([[.6, .3, .1]] * 3).astype("float32"))
    >>> b = keras.ops.convert_to_tensor(np.log([[.2, .3, .5]] * 3).astype("float32"))
    >>> step_a = lambda tokens, states: (keras.ops.take(a, tokens, axis=0), states)
    >>> step_b = lambda tokens, states: (keras.ops.take(b, tokens, axis=0), states)
    >>> both = kerasrnn.decoding.Ensemble([step_a, step_b])
    >>> out = kerasrnn.decoding.greedy_search(both, [0], ((), ()), max_length=1)
    >>> int(out.tokens[0, 0, 0]), round(float(np.exp(out.log_probs[0, 0])), 4)  # sqrt(.6*.2)
    (0, 0.3464)
    """

    outputs_log_probs = True

    def __init__(self, step_fns):
        step_fns = list(step_fns)
        if not step_fns or not all(callable(f) for f in step_fns):
            raise ValueError(
                f"`step_fns` must be a non-empty list of step functions, got {step_fns!r}."
            )
        self.step_fns = step_fns

    def __call__(self, tokens, states):
        if not isinstance(states, (tuple, list)) or len(states) != len(self.step_fns):
            raise ValueError(
                f"An Ensemble of {len(self.step_fns)} step functions takes a tuple of "
                f"{len(self.step_fns)} states, one per member; got "
                f"{type(states).__name__} of length "
                f"{len(states) if isinstance(states, (tuple, list)) else 'n/a'}."
            )
        log_probs, new_states, alignments = [], [], []
        for step_fn, member_states in zip(self.step_fns, states):
            out = step_fn(tokens, member_states)
            logits = ops.cast(out[0], "float32")
            if getattr(step_fn, "outputs_log_probs", False):
                log_probs.append(logits)
            else:
                log_probs.append(ops.log_softmax(logits, axis=-1))
            new_states.append(out[1])
            if len(out) == 3:
                alignments.append(ops.cast(out[2], "float32"))
        mean = ops.mean(ops.stack(log_probs, axis=0), axis=0)
        if alignments:
            return mean, tuple(new_states), ops.mean(ops.stack(alignments, axis=0), axis=0)
        return mean, tuple(new_states)
