"""Decoding strategies as objects, over any step function.

A decoder is a step function `step_fn(tokens, states) -> (logits, states)` (or
`(logits, states, alignments)`): int32 tokens `(batch,)` in, unnormalised next-token
scores `(batch, vocab_size)` out, any nested structure of `(batch, ...)` state tensors
carried along, and optionally the step's attention weights `(batch, source_length)`.

A strategy (`GreedySearch`, `RandomSampling`, `BeamSearch`, `CompetingBeamSearch`,
`DiverseBeamSearch`, `ExhaustiveSearch`, or a subclass of your own) holds its options,
a `Scorer` for beam search's ranking and the `Constraints` on the output; calling it
runs the one decoding loop (`kerasrnn.decoding.loop`: a `keras.ops.while_loop` with
the strategy's `step` as its hook) over tensors
(batched; usable in `tf.function`, XLA, a SavedModel or `jax.jit`) and returns a
`DecodeResult` with hypotheses along axis 1: tokens `(batch, n_best, max_length)`,
`n_best = 1` for greedy search and sampling. `get("beam")` and `serialize` name and
save them as keras-hub's samplers; `greedy_search`, `sample` and `beam_search` build and
run one in a call. Step-function wrappers combine models: `Ensemble` (several decoders)
and `ShallowFusion` (a decoder and a target-side language model). Over decoded texts,
`mbr_select` picks the candidate of minimum Bayes risk.
"""

from kerasrnn.decoding.beam_search import BeamSearch, CompetingBeamSearch, repeat_beams
from kerasrnn.decoding.common import DecodeResult, StepFn
from kerasrnn.decoding.constraints import Constraints
from kerasrnn.decoding.diverse_beam import DiverseBeamSearch
from kerasrnn.decoding.ensemble import Ensemble
from kerasrnn.decoding.exhaustive import ExhaustiveSearch
from kerasrnn.decoding.functions import beam_search, greedy_search, sample
from kerasrnn.decoding.fusion import ShallowFusion
from kerasrnn.decoding.mbr import MBRChoice, mbr_select
from kerasrnn.decoding.registry import get, search, serialize
from kerasrnn.decoding.replace_unk import replace_unk, unk_source_positions
from kerasrnn.decoding.sampling import GreedySearch, RandomSampling
from kerasrnn.decoding.scorer import Scorer, TFAScorer, coverage_penalty, length_penalty
from kerasrnn.decoding.strategy import DecodingStrategy

__all__ = [
    "BeamSearch",
    "CompetingBeamSearch",
    "Constraints",
    "DecodeResult",
    "DecodingStrategy",
    "DiverseBeamSearch",
    "Ensemble",
    "ExhaustiveSearch",
    "GreedySearch",
    "MBRChoice",
    "RandomSampling",
    "Scorer",
    "ShallowFusion",
    "StepFn",
    "TFAScorer",
    "beam_search",
    "coverage_penalty",
    "get",
    "greedy_search",
    "length_penalty",
    "mbr_select",
    "repeat_beams",
    "replace_unk",
    "sample",
    "search",
    "serialize",
    "unk_source_positions",
]
