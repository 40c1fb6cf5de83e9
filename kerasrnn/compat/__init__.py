"""Migration helpers: TensorFlow Addons and PyTorch weights and configurations into kerasrnn.

`kerasrnn.compat.torch` converts PyTorch `state_dict`s with NumPy and imports PyTorch
only to read a `.pt` file.
"""

from kerasrnn.compat import tfa, torch

__all__ = ["tfa", "torch"]
