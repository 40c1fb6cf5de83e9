"""kerasrnn: textbook-exact recurrent cells, attention and decoding for Keras 3.

The core (cells, attention, decoding, seq2seq, layers, losses, metrics) uses
`keras.ops` only and runs on every Keras backend. `kerasrnn.callbacks` (no TensorFlow
either) is imported too, so that a `.keras` file saved with one of its learning-rate
schedules loads after ``import kerasrnn``. `kerasrnn.compat`, `kerasrnn.data`,
`kerasrnn.datasets`, `kerasrnn.distribute`, `kerasrnn.export`, `kerasrnn.tasks` and
`kerasrnn.visualize` are reachable as attributes too, but imported on first use, so
``import kerasrnn`` never imports TensorFlow itself.
"""

import importlib

from kerasrnn._startup import quiet_command_line, warn_if_torch_threads_oversubscribed

quiet_command_line()  # `python -m kerasrnn.X` / `recipes.X`: before Keras is imported
warn_if_torch_threads_oversubscribed()

from kerasrnn import attention, callbacks, decoding, layers, losses, metrics, models, seq2seq  # noqa: E402,I001
from kerasrnn.attention import Attention, BahdanauAttention, LuongAttention  # noqa: E402
from kerasrnn.cells import *  # noqa: E402,F401,F403
from kerasrnn.cells import __all__ as _cells_all  # noqa: E402

from kerasrnn.models.preset import installed_version  # noqa: E402

__version__ = installed_version()  # the one version source: the package's metadata
_LAZY = ("compat", "data", "datasets", "distribute", "export", "tasks", "visualize")
__all__ = list(_cells_all) + [
    "attention",
    "callbacks",
    "decoding",
    "layers",
    "losses",
    "metrics",
    "models",
    "seq2seq",
    "Attention",
    "BahdanauAttention",
    "LuongAttention",
    *_LAZY,
]


def __getattr__(name):
    # TensorFlow-specific (compat, data, export), standard-library (datasets), NumPy-only
    # (tasks) or matplotlib (visualize) modules, loaded on use.
    if name in _LAZY:
        return importlib.import_module(f"kerasrnn.{name}")
    raise AttributeError(f"module 'kerasrnn' has no attribute {name!r}")
