"""AWD-LSTM's regularisers (Merity et al. 2018) as Keras objects.

* `WeightDrop`: DropConnect on a cell's recurrent kernel, one mask per batch (Wan et al.
  2013), keeping `kerasrnn.RNN`'s fused kernels;
* locked (variational) dropout over time: `keras.layers.SpatialDropout1D` is exactly
  that (one mask per sequence and feature, shared over time), so there is no class here;
* `EmbeddingDropout`: whole-word dropout on an embedding matrix's rows;
* `ActivationRegularization`: AR and TAR as a pass-through layer that adds the loss.
"""

import contextlib

import keras
from keras import ops

from kerasrnn.dropout_masks import ForwardsDropoutMasks
from kerasrnn.validation import check_number, check_rate


def _check_cell(cell):
    if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
        raise TypeError(
            f"WeightDrop wraps a recurrent cell (state_size, call(inputs, states)), such "
            f"as kerasrnn.LSTMCell(64); got {cell!r}. Wrap the cell, then put it in the RNN."
        )
    return cell


@keras.saving.register_keras_serializable(package="kerasrnn")
class WeightDrop(ForwardsDropoutMasks, keras.layers.Layer):
    """DropConnect on the recurrent kernel U of the cell it wraps (AWD-LSTM's WeightDrop).

    In training, one Bernoulli mask M over U's entries is drawn per forward call of the
    RNN layer (per batch) and used at every time step:

    .. math::  \\tilde U = \\frac{M \\odot U}{1 - p}, \\quad M_{jk} \\sim
        \\text{Bernoulli}(1 - p), \\qquad E[\\tilde U] = U

    so each hidden-to-hidden connection is dropped for the whole sequence (Wan et al.
    2013; Merity et al. 2018). At inference U is used unchanged.

    Why a cell wrapper: it composes with every recurrent container (`kerasrnn.RNN`,
    `kerasrnn.RNNStack`, `keras.layers.RNN`, `StackedRNNCells`, `Bidirectional`; each
    layer and direction draws its own mask) and with any cell that keeps
    its recurrent weights in `recurrent_kernel` (the kerasrnn cells and Keras' own
    `LSTMCell` / `GRUCell` / `SimpleRNNCell`). Because the mask is fixed for the whole
    call, the dropped kernel is an ordinary weight matrix, so `kerasrnn.RNN` still runs a
    wrapped standard LSTM/GRU cell on the fused kernels (cuDNN on a GPU): it reads
    `fused_cell` and calls under `substituted_weights(training)`. In the generic
    loop the cell is called with its `recurrent_kernel` attribute pointing at the dropped
    kernel for the step (what AWD-LSTM's PyTorch WeightDrop does), so gradients reach U
    through the mask. The mask is drawn where Keras draws its dropout masks (before the
    time loop, in `get_recurrent_dropout_mask`), which keeps JAX's loop stateless; like
    Keras' dropout masks it is drawn at inference too (one draw of U's size per call)
    and not used there.

    Args:
        cell: the recurrent cell whose `recurrent_kernel` is dropped.
        rate: the drop probability p, in [0, 1) (AWD-LSTM: 0.5).
        seed: seed of the masks.

    Example:

    >>> import numpy as np, kerasrnn
    >>> cell = kerasrnn.layers.WeightDrop(kerasrnn.LSTMCell(8), rate=0.5, seed=1)
    >>> layer = kerasrnn.RNN(cell, return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 3), "float32"), training=True).shape)
    (2, 5, 8)
    """

    def __init__(self, cell, rate=0.5, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.cell = _check_cell(cell)
        self.rate = check_rate("rate", rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._weight_mask = None
        # Keras' DropoutRNNCell reads these; the wrapper's own dropout is on the weights
        self.dropout = 0.0
        self.recurrent_dropout = 0.0

    @property
    def fused_cell(self):
        """The cell `kerasrnn.RNN` checks for its fused kernels (the wrapped one)."""
        return self.cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    def get_initial_state(self, batch_size=None):
        return self.cell.get_initial_state(batch_size=batch_size)

    def build(self, input_shape):
        if not self.cell.built:
            self.cell.build(input_shape)
        if getattr(self.cell, "recurrent_kernel", None) is None:
            raise TypeError(
                f"WeightDrop drops `recurrent_kernel`, which {type(self.cell).__name__} "
                f"does not have; wrap a cell with a recurrent kernel (LSTM, GRU, simple)."
            )
        self.built = True

    # ---- masks: drawn with Keras' dropout masks, before the time loop ---------------
    def get_recurrent_dropout_mask(self, step_input):
        if self._weight_mask is None and self.rate > 0:
            self._weight_mask = self._draw_mask()
        return super().get_recurrent_dropout_mask(step_input)

    def reset_recurrent_dropout_mask(self):
        self._weight_mask = None
        super().reset_recurrent_dropout_mask()

    def _draw_mask(self):
        kernel = self.cell.recurrent_kernel
        ones = ops.ones(tuple(kernel.shape), dtype=self.cell.compute_dtype)
        return keras.random.dropout(ones, self.rate, seed=self.seed_generator)

    def dropped_recurrent_kernel(self, training=False):
        """U / (1 - p) masked in training (the mask of this forward call), U otherwise."""
        kernel = self.cell.recurrent_kernel
        if not training or not self.rate:
            return kernel
        if self._weight_mask is None:  # called outside keras.layers.RNN: one mask until reset
            self._weight_mask = self._draw_mask()
        return ops.cast(kernel, self._weight_mask.dtype) * self._weight_mask

    @contextlib.contextmanager
    def substituted_weights(self, training=False):
        """Within it, the wrapped cell's `recurrent_kernel` is the dropped kernel."""
        variable = self.cell.recurrent_kernel
        dropped = self.dropped_recurrent_kernel(training)
        if dropped is variable:
            yield
            return
        # object.__setattr__: a plain swap, kept out of Keras' (and torch's) weight tracking
        object.__setattr__(self.cell, "recurrent_kernel", dropped)
        try:
            yield
        finally:
            object.__setattr__(self.cell, "recurrent_kernel", variable)

    def call(self, inputs, states, training=False):
        with self.substituted_weights(training):
            return self.cell(inputs, states, training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "cell": keras.saving.serialize_keras_object(self.cell),
            "rate": self.rate,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["cell"] = keras.saving.deserialize_keras_object(config["cell"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="kerasrnn")
class EmbeddingDropout(keras.layers.Embedding):
    """`keras.layers.Embedding` with whole-word (embedding) dropout (Gal & Ghahramani 2016).

    In training, each row of the embedding matrix E (one word type) is dropped for the
    whole batch with probability p and the others are scaled:

    .. math::  \\tilde E_{w} = \\frac{m_w}{1 - p} E_w, \\quad m_w \\sim
        \\text{Bernoulli}(1 - p)

    so every occurrence of a dropped word in the batch gets the zero vector (unlike
    ordinary dropout on the output, which drops entries per position). At inference E is
    used unchanged. All of `keras.layers.Embedding`'s arguments work as there
    (`mask_zero` included: the Keras mask is computed from the ids, so it is unchanged).

    Args:
        input_dim: vocabulary size.
        output_dim: embedding width.
        rate: the drop probability p of a word type, in [0, 1) (AWD-LSTM: 0.1).
        seed: seed of the masks.
        **kwargs: `keras.layers.Embedding`'s other arguments.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.layers.EmbeddingDropout(10, 4, rate=0.1, mask_zero=True)
    >>> x = np.array([[3, 4, 0]])
    >>> tuple(layer(x, training=True).shape), np.asarray(layer.compute_mask(x)).tolist()
    ((1, 3, 4), [[True, True, False]])
    """

    def __init__(self, input_dim, output_dim, rate=0.1, seed=None, **kwargs):
        super().__init__(input_dim, output_dim, **kwargs)
        self.rate = check_rate("rate", rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=False):
        if not training or not self.rate:
            return super().call(inputs)
        if inputs.dtype != "int32" and inputs.dtype != "int64":
            inputs = ops.cast(inputs, "int32")
        embeddings = self.embeddings
        keep = keras.random.dropout(
            ops.ones((self.input_dim, 1), dtype=embeddings.dtype),
            self.rate,
            seed=self.seed_generator,
        )
        outputs = ops.take(embeddings * keep, inputs, axis=0)
        return ops.cast(outputs, dtype=self.compute_dtype)

    def compute_output_spec(self, inputs, training=False):
        return super().compute_output_spec(inputs)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


@keras.saving.register_keras_serializable(package="kerasrnn")
class ActivationRegularization(keras.layers.Layer):
    """Activation (AR) and temporal activation (TAR) regularisation; passes its input on.

    On a sequence h of shape (batch, time, units) with Keras mask m (1 on real steps):

    .. math::

        \\text{AR} &= \\alpha \\, \\frac{\\sum_{b,t} m_{bt} \\lVert h_{bt} \\rVert^2}
            {d \\sum_{b,t} m_{bt}} \\\\
        \\text{TAR} &= \\beta \\, \\frac{\\sum_{b,t \\ge 1} m_{bt} m_{b,t-1}
            \\lVert h_{bt} - h_{b,t-1} \\rVert^2}{d \\sum_{b,t \\ge 1} m_{bt} m_{b,t-1}}

    (d = units): alpha * mean(h_t^2) and beta * mean((h_t - h_{t-1})^2) over the real
    steps, as in Merity et al. (2018), who put AR on the dropped output of the last
    layer and TAR on the undropped one (use two layers for that). The sum is added
    with `add_loss` in training only, so evaluation losses (perplexity) stay the plain
    data loss; the input and its mask pass through unchanged.

    Args:
        alpha: weight of AR (AWD-LSTM: 2).
        beta: weight of TAR (AWD-LSTM: 1).

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.layers.ActivationRegularization(alpha=2.0, beta=1.0)
    >>> h = np.array([[[1.0], [3.0]]], "float32")
    >>> _ = layer(h, training=True)
    >>> [round(float(loss), 4) for loss in layer.losses]  # 2 * (1 + 9) / 2 + 1 * 2 ** 2
    [14.0]
    """

    def __init__(self, alpha=0.0, beta=0.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = check_number("alpha", alpha)
        self.beta = check_number("beta", beta)
        self.supports_masking = True

    def call(self, inputs, mask=None, training=False):
        if len(inputs.shape) != 3:
            raise ValueError(
                f"ActivationRegularization takes sequences of shape (batch, time, units); "
                f"got shape {tuple(inputs.shape)}. Use return_sequences=True on the RNN."
            )
        if training and (self.alpha or self.beta):
            self.add_loss(self.penalty(inputs, mask))
        return inputs

    def penalty(self, inputs, mask=None):
        """alpha * AR + beta * TAR of `inputs` (computed in float32 at least)."""
        h = ops.cast(inputs, "float32")
        units = ops.cast(ops.shape(h)[-1], "float32")
        if mask is None:
            m = ops.ones(ops.shape(h)[:2], dtype="float32")
        else:
            m = ops.cast(mask, "float32")
        total = ops.zeros((), dtype="float32")
        if self.alpha:
            squares = ops.sum(ops.square(h), axis=-1)
            total += self.alpha * ops.sum(squares * m) / ops.maximum(ops.sum(m) * units, 1.0)
        if self.beta:
            pair = m[:, 1:] * m[:, :-1]
            steps = ops.sum(ops.square(h[:, 1:] - h[:, :-1]), axis=-1)
            total += self.beta * ops.sum(steps * pair) / ops.maximum(ops.sum(pair) * units, 1.0)
        return total

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha, "beta": self.beta}
