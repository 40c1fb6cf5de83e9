"""`get` and `serialize`: decoding strategies by name or config, keras-hub style (a
module above the strategies; the classes themselves are found through Keras'
serialization registry, `register_keras_serializable(package="kerasrnn")`)."""

import keras

from kerasrnn.decoding.beam_search import BeamSearch
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
