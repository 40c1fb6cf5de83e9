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
