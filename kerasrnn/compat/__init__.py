"""Migration helpers: TensorFlow Addons weights and configurations into kerasrnn."""

from kerasrnn.compat import tfa

__all__ = ["tfa"]
