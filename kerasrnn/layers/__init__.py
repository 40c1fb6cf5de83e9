"""Reusable Keras layers for sequence models: masking, pooling, word dropout, the
batch/time reshapes of per-word networks, the encoder-decoder bridges, a Naive Bayes
expert, the linear-chain CRF and ELMo's scalar mix.

Every layer is registered as ``kerasrnn>Name``, so a `.keras` file that uses one loads
after ``import kerasrnn``.
"""
from kerasrnn.layers import bridge
from kerasrnn.layers.bridge import (
    Bridge,
    CopyBridge,
    DenseBridge,
    NoBridge,
    ZerosBridge,
    join_directions,
)
from kerasrnn.layers.crf import (
    CRF,
    CRFAccuracy,
    CRFLoss,
    crf_decode,
    crf_forward,
    crf_log_likelihood,
    crf_log_norm,
    crf_marginals,
    crf_sequence_score,
)
from kerasrnn.layers.dropout import WordDropout
from kerasrnn.layers.masking import NotPadding
from kerasrnn.layers.naive_bayes import NaiveBayesExpert
from kerasrnn.layers.pooling import MaskedPooling1D
from kerasrnn.layers.reshape import MergeBatchTime, SplitBatchTime
from kerasrnn.layers.scalar_mix import ScalarMix

__all__ = [
    "Bridge",
    "CopyBridge",
    "DenseBridge",
    "NoBridge",
    "ZerosBridge",
    "join_directions",
    "CRF",
    "CRFAccuracy",
    "CRFLoss",
    "MaskedPooling1D",
    "MergeBatchTime",
    "NaiveBayesExpert",
    "NotPadding",
    "ScalarMix",
    "SplitBatchTime",
    "WordDropout",
    "crf_decode",
    "crf_forward",
    "crf_log_likelihood",
    "crf_log_norm",
    "crf_marginals",
    "crf_sequence_score",
]
