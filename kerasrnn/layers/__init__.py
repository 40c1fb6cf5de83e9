"""Reusable Keras layers, losses and metrics the recipes are built from."""
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
from kerasrnn.layers.scalar_mix import ScalarMix
