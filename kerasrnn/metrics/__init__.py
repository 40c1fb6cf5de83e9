"""Evaluation metrics."""
from kerasrnn.metrics.bleu import BleuScore, corpus_bleu, tokenize_13a

__all__ = ["BleuScore", "corpus_bleu", "tokenize_13a"]
