"""Losses for sequence models (keras.ops only; every backend)."""

from kerasrnn.losses.sequence import MaskedSequenceCrossEntropy, SequenceCrossEntropy

__all__ = ["SequenceCrossEntropy", "MaskedSequenceCrossEntropy"]
