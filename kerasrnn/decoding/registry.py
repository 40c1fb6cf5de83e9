"""`get`, `serialize` and `search`: decoding strategies by name, config or beam width,
keras-hub style (a module above the strategies; the classes themselves are found
through Keras' serialization registry, `register_keras_serializable(package=
"kerasrnn")`)."""

import keras

from kerasrnn.decoding.beam_search import BeamSearch
from kerasrnn.decoding.diverse_beam import DiverseBeamSearch
from kerasrnn.decoding.sampling import GreedySearch, RandomSampling
from kerasrnn.decoding.strategy import DecodingStrategy

# The short names `get` takes, each a strategy with its default options.
ALIASES = {"greedy": GreedySearch, "sample": RandomSampling, "beam": BeamSearch}


def get(identifier: "str | dict | DecodingStrategy") -> DecodingStrategy:
    """A decoding strategy from a name ("greedy", "sample", "beam": the defaults), a
    config dict (what `serialize` returns) or a strategy (returned as is).

    Example:

    >>> import kerasrnn
    >>> kerasrnn.decoding.get("beam")
    BeamSearch(beam_size=4, n_best=None, scorer=None, drop_finished='auto', groups=1)
    >>> kerasrnn.decoding.get(kerasrnn.decoding.serialize(
    ...     kerasrnn.decoding.RandomSampling(top_k=5)))
    RandomSampling(temperature=1.0, top_k=5, top_p=None, seed=None)
    """
    if isinstance(identifier, DecodingStrategy):
        return identifier
    if isinstance(identifier, str):
        if identifier not in ALIASES:
            raise ValueError(
                f"Unknown decoding strategy {identifier!r}: use one of {sorted(ALIASES)} "
                "or a kerasrnn.decoding strategy object."
            )
        return ALIASES[identifier]()
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


def search(beam_size=1, n_best=1, scorer=None, constraints=None, groups=1, diversity=0.0):
    """The search a beam width calls for: `GreedySearch` when `beam_size` and `n_best`
    are 1, else a `BeamSearch` of ``max(beam_size, n_best)`` beams returning the
    `n_best` best, in `groups` groups with the Hamming `diversity` of
    `DiverseBeamSearch` between them when `groups` > 1; all with `constraints` (and
    the beams with `scorer`). A command line's ``--beam-size`` / ``--n-best`` /
    ``--beam-groups`` map to it.

    Example:

    >>> import kerasrnn
    >>> kerasrnn.decoding.search(1), kerasrnn.decoding.search(5, 2).n_best
    (GreedySearch(), 2)
    """
    if max(beam_size, n_best) <= 1:
        return GreedySearch(constraints)
    width = max(beam_size, n_best)
    if groups == 1:
        return BeamSearch(width, n_best, scorer, constraints)
    return DiverseBeamSearch(
        width, groups, diversity, n_best=n_best, scorer=scorer, constraints=constraints
    )
