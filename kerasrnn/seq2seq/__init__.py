"""The encoder-decoder as a library model (keras.ops only; every backend).

* `RNNEncoder` -- an embedding-free recurrent encoder returning the memory and the final
  states;
* `Seq2Seq` -- embeddings, encoder, bridge, attentive decoder and readout as one
  `keras.Model`: `fit` with teacher forcing (optionally scheduled sampling), `encode`,
  `step_fn` and `generate` (greedy, sampling, beam search) with alignments;
* `sampling_probability` -- the scheduled-sampling schedules, and
  `SamplingProbabilityLog`, a callback that logs p.
"""
from kerasrnn.seq2seq.encoder import RNNEncoder
from kerasrnn.seq2seq.model import Encoded, Seq2Seq
from kerasrnn.seq2seq.sampling import (
    SAMPLING_MODES,
    SCHEDULES,
    SamplingProbabilityLog,
    sampling_probability,
)

__all__ = [
    "RNNEncoder",
    "Seq2Seq",
    "Encoded",
    "sampling_probability",
    "SamplingProbabilityLog",
    "SCHEDULES",
    "SAMPLING_MODES",
]
