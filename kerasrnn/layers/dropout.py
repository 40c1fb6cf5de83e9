"""Word dropout: whole tokens replaced by the unknown-word id in training."""

import keras
from keras import ops

from kerasrnn.validation import check_id, check_rate

_DEFAULT_IDS = {"unk_id": 1, "pad_id": 0}


@keras.saving.register_keras_serializable(package="kerasrnn")
class WordDropout(keras.layers.Layer):
    """In training, replaces each real token id by `unk_id` with probability `rate`.

    .. math::  \\tilde x_t = \\begin{cases} \\text{unk\\_id} & \\text{if } u_t < r
        \\text{ and } x_t \\ne \\text{pad\\_id} \\\\ x_t & \\text{otherwise}
        \\end{cases}, \\quad u_t \\sim U(0, 1)

    Padding stays padding, so masks are unchanged. The `[UNK]` embedding is then trained
    on words in context, and a model with character features learns to lean on them for
    unknown words. At inference the ids pass through unchanged.

    Args:
        rate: the replacement probability r, in [0, 1).
        unk_id: the id written instead (default 1, `kerasrnn.data`'s `[UNK]`).
        pad_id: the id never replaced (default 0, `[PAD]`).
        seed: seed of the draws.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.layers.WordDropout(0.5, seed=1)
    >>> np.asarray(layer(np.array([[5, 6, 0]]))).tolist()  # inference: unchanged
    [[5, 6, 0]]
    """

    def __init__(self, rate=0.1, unk_id=1, pad_id=0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = check_rate("rate", rate)
        self.unk_id, self.pad_id = check_id("unk_id", unk_id), check_id("pad_id", pad_id)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, ids, training=False):
        if not training or not self.rate:
            return ids
        drop = keras.random.uniform(ops.shape(ids), seed=self.seed_generator) < self.rate
        drop = ops.logical_and(drop, ops.not_equal(ids, self.pad_id))
        return ops.where(drop, ops.full_like(ids, self.unk_id), ids)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = {**super().get_config(), "rate": self.rate, "seed": self.seed}
        # The ids only when they differ from the defaults: the recipes' former
        # `kerasrnn>WordDropout` (same registered name, no such arguments) then reads
        # these files too, in whichever order the two classes were registered.
        config.update(
            {
                name: value
                for name, value in (("unk_id", self.unk_id), ("pad_id", self.pad_id))
                if value != _DEFAULT_IDS[name]
            }
        )
        return config
