"""Reusable Keras layers for sequence models: masking, pooling, word dropout and the
batch/time reshapes of per-word networks.

Every layer is registered as ``kerasrnn>Name``, so a `.keras` file that uses one loads
after ``import kerasrnn``.
"""
from kerasrnn.layers.dropout import WordDropout
from kerasrnn.layers.masking import NotPadding
from kerasrnn.layers.naive_bayes import NaiveBayesExpert
from kerasrnn.layers.pooling import MaskedPooling1D
from kerasrnn.layers.reshape import MergeBatchTime, SplitBatchTime

__all__ = [
    "MaskedPooling1D",
    "MergeBatchTime",
    "NaiveBayesExpert",
    "NotPadding",
    "SplitBatchTime",
    "WordDropout",
]
