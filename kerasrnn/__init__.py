"""kerasrnn: textbook-exact recurrent cells, attention and decoding for Keras 3.

The core (cells, attention, decoding) uses `keras.ops` only and runs on every Keras
backend. `kerasrnn.data` and `kerasrnn.export` are TensorFlow-specific and are not
imported here.
"""
from kerasrnn import attention, decoding, metrics
from kerasrnn.attention import Attention, BahdanauAttention, LuongAttention
from kerasrnn.cells import *  # noqa: F401,F403
from kerasrnn.cells import __all__ as _cells_all

__version__ = "0.1.0"
__all__ = list(_cells_all) + [
    "attention",
    "decoding",
    "metrics",
    "Attention",
    "BahdanauAttention",
    "LuongAttention",
]
