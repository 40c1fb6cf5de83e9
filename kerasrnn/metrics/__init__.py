"""Evaluation metrics: masked token accuracy, entity-level F1 (conlleval), BLEU, and
the scores of a whole test set (per-class F1, a tagger's, a translator's)."""

from kerasrnn.metrics.accuracy import MaskedAccuracy
from kerasrnn.metrics.bleu import BleuScore, corpus_bleu, tokenize_13a
from kerasrnn.metrics.entities import entity_scores, entity_spans
from kerasrnn.metrics.scores import (
    class_scores,
    classification_scores,
    relatedness_scores,
    tagging_scores,
    translation_report,
    translation_scores,
)

__all__ = [
    "MaskedAccuracy",
    "BleuScore",
    "class_scores",
    "classification_scores",
    "corpus_bleu",
    "entity_scores",
    "entity_spans",
    "relatedness_scores",
    "tagging_scores",
    "translation_report",
    "translation_scores",
    "tokenize_13a",
]
