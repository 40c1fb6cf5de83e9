"""Evaluation metrics: masked token accuracy, entity-level F1 (conlleval) and BLEU."""

from kerasrnn.metrics.accuracy import MaskedAccuracy
from kerasrnn.metrics.bleu import BleuScore, corpus_bleu, tokenize_13a
from kerasrnn.metrics.entities import entity_scores, entity_spans

__all__ = [
    "MaskedAccuracy",
    "BleuScore",
    "corpus_bleu",
    "entity_scores",
    "entity_spans",
    "tokenize_13a",
]
