"""The strategies as functions: one call builds the strategy and runs it (for a script
that decodes once; keep the object to decode again with the same options)."""

from typing import Any

from kerasrnn.decoding.beam_search import BeamSearch
from kerasrnn.decoding.common import DecodeResult, StepFn, unexpected_argument
from kerasrnn.decoding.constraints import Constraints
from kerasrnn.decoding.sampling import GreedySearch, RandomSampling
from kerasrnn.decoding.scorer import Scorer


def greedy_search(
    step_fn: StepFn,
    start_tokens: Any,
    initial_states: Any,
    max_length: int,
    end_token: int | None = None,
    pad_token: int = 0,
    constraints: Constraints | None = None,
) -> DecodeResult:
    """`GreedySearch(constraints)(step_fn, start_tokens, initial_states, max_length,
    end_token, pad_token)`: see `GreedySearch`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(
    ...     [[.1, .6, .3], [.1, .1, .8], [.7, .2, .1]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> out = kerasrnn.decoding.greedy_search(step, [0], (), max_length=4, end_token=2)
    >>> keras.ops.convert_to_numpy(out.tokens[:, 0]).tolist()
    [[1, 2, 0, 0]]
    """
    return GreedySearch(constraints)(
        step_fn, start_tokens, initial_states, max_length, end_token, pad_token
    )


def sample(
    step_fn: StepFn,
    start_tokens: Any,
    initial_states: Any,
    max_length: int,
    end_token: int | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    constraints: Constraints | None = None,
) -> DecodeResult:
    """`RandomSampling(temperature, top_k, top_p, seed, constraints)(step_fn,
    start_tokens, initial_states, max_length, end_token)`: see `RandomSampling`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.full((5, 5), .2, "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> out = kerasrnn.decoding.sample(step, [0, 0], (), max_length=6, top_k=2, seed=7)
    >>> tuple(out.tokens.shape)
    (2, 1, 6)
    """
    strategy = RandomSampling(temperature, top_k, top_p, seed, constraints)
    return strategy(step_fn, start_tokens, initial_states, max_length, end_token)


def beam_search(
    step_fn: StepFn,
    start_tokens: Any,
    initial_states: Any,
    max_length: int,
    end_token: int,
    beam_size: int = 4,
    n_best: int | None = None,
    scorer: Scorer | None = None,
    constraints: Constraints | None = None,
    pad_token: int = 0,
    **unknown: Any,
) -> DecodeResult:
    """`BeamSearch(beam_size, n_best, scorer, constraints, drop_finished="auto")(step_fn,
    start_tokens, initial_states, max_length, end_token, pad_token)`: see `BeamSearch`.

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> table = keras.ops.convert_to_tensor(np.log(np.array(  # token 0 is the end
    ...     [[.1, .5, .4], [.4, .3, .3], [.9, .05, .05]], "float32")))
    >>> step = lambda tokens, states: (keras.ops.take(table, tokens, axis=0), states)
    >>> beam = kerasrnn.decoding.beam_search(step, [0], (), 4, end_token=0, beam_size=2)
    >>> keras.ops.convert_to_numpy(beam.tokens[0, 0]).tolist()  # p = .4 * .9 = .36
    [2, 0, 0, 0]
    """
    if unknown:
        raise unexpected_argument(
            "beam_search",
            unknown,
            "step_fn, start_tokens, initial_states, max_length, "
            "end_token, beam_size, n_best, scorer, constraints and pad_token",
        )
    strategy = BeamSearch(beam_size, n_best, scorer, constraints)
    return strategy(step_fn, start_tokens, initial_states, max_length, end_token, pad_token)
