"""Reusable Keras layers for sequence models: masking, pooling, word dropout, the
batch/time reshapes of per-word networks, the encoder-decoder bridges, a Naive Bayes
expert, the linear-chain CRF with tag-scheme constraints, ELMo's biLM features and scalar
mix, sentence-pair features, ULMFiT's concat pooling, and AWD-LSTM's regularisers
(WeightDrop, EmbeddingDropout, ActivationRegularization).

Every layer is registered as ``kerasrnn>Name``, so a `.keras` file that uses one loads
after ``import kerasrnn``.
"""

from kerasrnn.layers.bilm import BiLMFeatures, reverse_padded
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
    constrain,
    crf_decode,
    crf_decode_n_best,
    crf_forward,
    crf_log_likelihood,
    crf_log_norm,
    crf_marginals,
    crf_sequence_score,
    potentials_mask,
)
from kerasrnn.layers.dropout import WordDropout
from kerasrnn.layers.masking import NotPadding
from kerasrnn.layers.naive_bayes import NaiveBayesExpert
from kerasrnn.layers.pair import ExpectedScore, PairFeatures
from kerasrnn.layers.pooling import ConcatPooling1D, MaskedPooling1D
from kerasrnn.layers.regularization import (
    ActivationRegularization,
    EmbeddingDropout,
    WeightDrop,
)
from kerasrnn.layers.reshape import MergeBatchTime, SplitBatchTime
from kerasrnn.layers.scalar_mix import ScalarMix
from kerasrnn.layers.tag_schemes import (
    allowed_transitions,
    check_tags,
    convert_tags,
    detect_scheme,
    is_entity_tags,
    training_schemes,
)

__all__ = [
    "ActivationRegularization",
    "EmbeddingDropout",
    "WeightDrop",
    "BiLMFeatures",
    "Bridge",
    "CopyBridge",
    "DenseBridge",
    "NoBridge",
    "ZerosBridge",
    "join_directions",
    "CRF",
    "CRFAccuracy",
    "CRFLoss",
    "ConcatPooling1D",
    "ExpectedScore",
    "MaskedPooling1D",
    "MergeBatchTime",
    "NaiveBayesExpert",
    "NotPadding",
    "PairFeatures",
    "ScalarMix",
    "SplitBatchTime",
    "WordDropout",
    "allowed_transitions",
    "check_tags",
    "constrain",
    "convert_tags",
    "crf_decode",
    "crf_decode_n_best",
    "crf_forward",
    "crf_log_likelihood",
    "crf_log_norm",
    "crf_marginals",
    "crf_sequence_score",
    "detect_scheme",
    "is_entity_tags",
    "potentials_mask",
    "reverse_padded",
    "training_schemes",
]
