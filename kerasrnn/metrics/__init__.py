"""Evaluation metrics: masked token accuracy, entity-level F1 (conlleval), BLEU and chrF
(corpus and sentence), and the scores of a whole test set (per-class F1, a tagger's, a
translator's)."""

from kerasrnn.metrics.accuracy import MaskedAccuracy
from kerasrnn.metrics.bleu import BleuScore, corpus_bleu, sentence_bleu, tokenize_13a
from kerasrnn.metrics.chrf import corpus_chrf, sentence_chrf
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
    "corpus_chrf",
    "entity_scores",
    "entity_spans",
    "relatedness_scores",
    "sentence_bleu",
    "sentence_chrf",
    "tagging_scores",
    "translation_report",
    "translation_scores",
    "tokenize_13a",
]
