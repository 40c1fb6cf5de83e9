"""Attention: score functions and attention layers.

`Attention(score=...)` takes every classic score; `BahdanauAttention` and `LuongAttention`
are the two papers' layers under their usual names. Each layer splits into `prepare`
(once per source) and `attend` (once per query), which the attentive cell
(`kerasrnn.AttentionCell`) uses at each decoder step.
"""
from kerasrnn.attention import scores
from kerasrnn.attention.layers import (
    Attention,
    AttentionMemory,
    BahdanauAttention,
    LuongAttention,
    masked_softmax,
)

__all__ = [
    "Attention",
    "AttentionMemory",
    "BahdanauAttention",
    "LuongAttention",
    "masked_softmax",
    "scores",
]
