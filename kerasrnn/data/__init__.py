"""Text to ids, tf.data pipelines and corpus loaders (TensorFlow-specific)."""
from kerasrnn.data.vocabulary import (
    END,
    END_ID,
    PAD,
    PAD_ID,
    SPECIAL_TOKENS,
    START,
    START_ID,
    UNK,
    UNK_ID,
    Vocabulary,
)

__all__ = [
    "Vocabulary",
    "SPECIAL_TOKENS",
    "PAD",
    "UNK",
    "START",
    "END",
    "PAD_ID",
    "UNK_ID",
    "START_ID",
    "END_ID",
]
