"""The encoder-decoder as a library model, keras-hub style (keras.ops only, on every
backend; its preprocessor's text handling is TensorFlow's).

* `Seq2SeqBackbone` -- the layers: embeddings, an `RNNEncoder`, a bridge
  (`kerasrnn.layers.Bridge`), the attentive decoder and the readout, with
  `call_encoder` and `call_decoder_step`;
* `Seq2Seq` -- the task around a backbone: `fit` with teacher forcing (or a
  `ScheduledSampling` regime), `encode`, `step_fn` and `generate` (greedy, sampling,
  beam search) with alignments;
* `Seq2SeqPreprocessor` -- source texts to ids and generated ids to translations,
  each side by a `kerasrnn.data.text.TextSide`;
* `attentive_seq2seq` -- a built `Seq2Seq` from an encoder cell, an `AttentionCell`
  and the preprocessor (the translator recipe's model);
* `CopyReadout` -- copy attention (a pointer-generator readout) for `Seq2Seq`;
* `RNNEncoder` -- an embedding-free recurrent encoder returning the memory and the final
  states;
* `ScheduledSampling`, `sampling_probability` -- scheduled sampling and its schedules,
  and `SamplingProbabilityLog`, a callback that logs p.
"""

from kerasrnn.layers.bridge import Bridge, CopyBridge, DenseBridge, NoBridge, ZerosBridge
from kerasrnn.seq2seq.backbone import Encoded, Seq2SeqBackbone
from kerasrnn.seq2seq.builder import attentive_seq2seq
from kerasrnn.seq2seq.encoder import RNNEncoder
from kerasrnn.seq2seq.model import Seq2Seq
from kerasrnn.seq2seq.pointer import CopyReadout
from kerasrnn.seq2seq.preprocessor import Seq2SeqPreprocessor
from kerasrnn.seq2seq.sampling import (
    SAMPLING_MODES,
    SCHEDULES,
    SamplingProbabilityLog,
    ScheduledSampling,
    sampling_probability,
)

__all__ = [
    "Bridge",
    "CopyBridge",
    "CopyReadout",
    "DenseBridge",
    "Encoded",
    "NoBridge",
    "RNNEncoder",
    "SAMPLING_MODES",
    "SCHEDULES",
    "SamplingProbabilityLog",
    "ScheduledSampling",
    "Seq2Seq",
    "Seq2SeqBackbone",
    "Seq2SeqPreprocessor",
    "ZerosBridge",
    "sampling_probability",
    "attentive_seq2seq",
]
