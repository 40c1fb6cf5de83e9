"""Evaluation metrics: masked token accuracy and BLEU."""
from kerasrnn.metrics.accuracy import MaskedAccuracy
from kerasrnn.metrics.bleu import BleuScore, corpus_bleu, tokenize_13a

__all__ = ["MaskedAccuracy", "BleuScore", "corpus_bleu", "tokenize_13a"]
