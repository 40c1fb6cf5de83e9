"""Bridges (how an encoder's final states become a decoder's initial states), reachable
as `kerasrnn.layers.bridge` and `kerasrnn.layers.Bridge` ...; they are defined in
`kerasrnn.cells.bridge`, beside the attentive RNN of the core that applies them."""

from kerasrnn.cells.bridge import (
    Bridge,
    CopyBridge,
    DenseBridge,
    NoBridge,
    ZerosBridge,
    get,
    join_directions,
)

__all__ = [
    "Bridge",
    "CopyBridge",
    "DenseBridge",
    "NoBridge",
    "ZerosBridge",
    "get",
    "join_directions",
]
