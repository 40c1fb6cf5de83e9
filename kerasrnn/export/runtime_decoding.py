"""Decoding strategies whose graphs convert to the runtimes' builtin ops (the recipes'
ONNX and LiteRT exports of the translator and the language model)."""

import keras

from kerasrnn.decoding import GreedySearch


class TopOneGreedySearch(GreedySearch):
    """`GreedySearch` whose argmax is ``top_k(logits, 1)`` (the same token: the first
    of the largest), which converts to LiteRT builtins and ONNX alike (Keras' float
    `argmax` tests the sign bit with a `BitwiseAnd`, no LiteRT builtin)."""

    def choose(self, logits):
        return keras.ops.top_k(logits, 1)[1][:, 0]


def runtime_strategy(strategy):
    """`strategy` as the runtimes' graphs run it, with its scorer and constraints:
    greedy search as a `TopOneGreedySearch`, beam search without `drop_finished` (its
    phases gather rows with a data-dependent shape). Sampling is not exported."""
    from kerasrnn import decoding

    if isinstance(strategy, decoding.BeamSearch):
        return type(strategy).from_config(dict(strategy.get_config(), drop_finished=False))
    if isinstance(strategy, decoding.GreedySearch):
        return TopOneGreedySearch.from_config(strategy.get_config())
    raise ValueError(
        f"the export runs greedy or beam search, got {type(strategy).__name__} "
        "(sampling is not exported)."
    )
