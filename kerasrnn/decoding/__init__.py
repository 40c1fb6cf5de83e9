"""Decoding: greedy, sampling and beam search over any step function.

A decoder is a step function `step_fn(tokens, states) -> (logits, states)` (or
`(logits, states, alignments)`): int32 tokens `(batch,)` in, unnormalised next-token
scores `(batch, vocab_size)` out, any nested structure of `(batch, ...)` state tensors
carried along, and optionally the step's attention weights `(batch, source_length)`.
All loops are `keras.ops.while_loop`s over tensors (batched; usable in `tf.function`,
XLA, a SavedModel or `jax.jit`), and all return a `DecodeResult` with hypotheses along
axis 1: tokens `(batch, n_best, max_length)`, `n_best = 1` for greedy and sampling.
"""
from kerasrnn.decoding.beam_search import beam_search, coverage_penalty
from kerasrnn.decoding.common import DecodeResult, length_penalty
from kerasrnn.decoding.ensemble import Ensemble
from kerasrnn.decoding.replace_unk import replace_unk, unk_source_positions
from kerasrnn.decoding.sampling import (
    decode_with_sampler,
    greedy_search,
    make_sampler,
    sample,
)

__all__ = [
    "DecodeResult",
    "Ensemble",
    "beam_search",
    "coverage_penalty",
    "decode_with_sampler",
    "greedy_search",
    "length_penalty",
    "make_sampler",
    "replace_unk",
    "sample",
    "unk_source_positions",
]
