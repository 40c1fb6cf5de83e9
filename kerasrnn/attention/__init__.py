"""Attention: score functions, probability functions and attention layers.

`Attention(score=...)` takes every classic score; `BahdanauAttention` and `LuongAttention`
are the two papers' layers under their usual names, and `BahdanauMonotonicAttention` /
`LuongMonotonicAttention` their monotonic forms (Raffel et al. 2017). Each layer splits
into `prepare` (once per source) and `attend` / `step` (once per query), which the
attentive cell (`kerasrnn.AttentionCell`) uses at each decoder step.
"""

from kerasrnn.attention import monotonic, probability, scores
from kerasrnn.attention.coverage import CoverageLoss, coverage_loss
from kerasrnn.attention.layers import (
    Attention,
    AttentionMemory,
    BahdanauAttention,
    LuongAttention,
    masked_softmax,
    repeat_memory,
)
from kerasrnn.attention.monotonic import (
    BahdanauMonotonicAttention,
    LuongMonotonicAttention,
    monotonic_attention,
)
from kerasrnn.attention.probability import hardmax, sparsemax

__all__ = [
    "Attention",
    "AttentionMemory",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "CoverageLoss",
    "LuongAttention",
    "LuongMonotonicAttention",
    "coverage_loss",
    "hardmax",
    "masked_softmax",
    "monotonic",
    "monotonic_attention",
    "probability",
    "repeat_memory",
    "scores",
    "sparsemax",
]
