"""Decoding: greedy, sampling and beam search over any step function.

A decoder is a step function `step_fn(tokens, states) -> (logits, states)`: int32 tokens
`(batch,)` in, unnormalised next-token scores `(batch, vocab_size)` out, and any nested
structure of `(batch, ...)` state tensors carried along. All loops are
`keras.ops.while_loop`s over tensors (batched; usable in `tf.function`, XLA, a SavedModel
or `jax.jit`).
"""
from kerasrnn.decoding.beam_search import beam_search
from kerasrnn.decoding.common import DecodeResult, length_penalty
from kerasrnn.decoding.sampling import (
    decode_with_sampler,
    greedy_search,
    make_sampler,
    sample,
)

__all__ = [
    "DecodeResult",
    "beam_search",
    "decode_with_sampler",
    "greedy_search",
    "length_penalty",
    "make_sampler",
    "sample",
]
