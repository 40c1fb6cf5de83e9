"""Long short-term memory and its classic variants in one cell."""

import keras
from keras import ops

from kerasrnn.cells.base import RecurrentCell, check_gate_bias_options, chrono_bias


@keras.saving.register_keras_serializable(package="kerasrnn")
class LSTMCell(RecurrentCell):
    """Long short-term memory cell, with the 1997, peephole and coupled variants.

    With sigma = `recurrent_activation` (sigmoid), phi = `activation` (tanh):

    .. math::

        i_t &= \\sigma(W_i x_t + U_i h_{t-1} + p_i \\odot c_{t-1} + b_i) \\\\
        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + p_f \\odot c_{t-1} + b_f) \\\\
        \\tilde c_t &= \\phi(W_c x_t + U_c h_{t-1} + b_c) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t \\\\
        o_t &= \\sigma(W_o x_t + U_o h_{t-1} + p_o \\odot c_t + b_o) \\\\
        h_t &= o_t \\odot \\phi(c_t)

    The peephole terms p (diagonal, one vector per gate: `peephole_i`, `peephole_f`,
    `peephole_o`) exist only with `peephole=True` (Gers & Schmidhuber 2000); note that
    f and i look at c_{t-1} and o at the new c_t.

    Variants:
        * `forget_gate=False`: the original 1997 cell, c_t = c_{t-1} + i_t * c~_t
          (no f_t, no W_f/U_f/b_f).
        * `coupled=True`: coupled input-forget gate, c_t = f_t * c_{t-1} + (1 - f_t) * c~_t
          (no separate i_t, no W_i/U_i/b_i/p_i).
        Both at once would leave no gate on the cell and are rejected.

    States are [h, c]; the output is h_t. Weights use `keras.layers.LSTM`'s layout:
    `kernel` (input_dim x k units), `recurrent_kernel` (units x k units) and `bias`
    (k units) hold the gate blocks in Keras' order i, f, c, o, leaving out the gates a
    variant does not have (k = 4, or 3 for the 1997 and coupled cells). The default
    cell exchanges weights with `keras.layers.LSTM` by `set_weights`.

    Args:
        units: width of h_t and c_t.
        forget_gate: whether the cell has a forget gate (False: the 1997 cell).
        peephole: whether the gates see the cell state (diagonal peephole weights).
        coupled: couple the input gate to the forget gate, i_t = 1 - f_t.
        unit_forget_bias: initialise b_f to 1 (Jozefowicz et al. 2015); the other
            gates' biases still come from `bias_initializer` (zeros by default), as in
            Keras' own LSTM cell.
        peephole_initializer: initializer of the peephole vectors (default zeros, so a
            new peephole cell starts as the plain cell).
        forget_bias: a value added to the forget-gate bias at initialisation,
            b_f = forget_bias + (draw of `bias_initializer`); when given it replaces
            `unit_forget_bias` (None: b_f from `unit_forget_bias`). Larger values start
            the cell remembering longer (Gers et al. 2000; Jozefowicz et al. 2015).
        chrono_init: T_max >= 2 for the "chrono" initialisation of Tallec & Ollivier
            (2018): b_f ~ log(U[1, T_max - 1]) per unit and b_i = -b_f, so that the
            cell's characteristic forgetting times spread over [1, T_max - 1]
            (None: off). Excludes `forget_bias`.
        learn_initial_state: learn h_0 and c_0 (the weights `initial_h`,
            `initial_c`); see `kerasrnn.cells.base.RecurrentCell`.
        The other arguments are Keras' (see `kerasrnn.cells.base.RecurrentCell`).

    Example:

    >>> import numpy as np, keras, kerasrnn
    >>> layer = keras.layers.RNN(kerasrnn.LSTMCell(8, peephole=True), return_state=True)
    >>> h, h_last, c_last = layer(np.zeros((2, 5, 3), "float32"))
    >>> tuple(h.shape), tuple(c_last.shape)
    ((2, 8), (2, 8))
    """

    def __init__(
        self,
        units,
        forget_gate=True,
        peephole=False,
        coupled=False,
        unit_forget_bias=True,
        peephole_initializer="zeros",
        forget_bias=None,
        chrono_init=None,
        **kwargs,
    ):
        if coupled and not forget_gate:
            raise ValueError(
                "`coupled=True` ties the input gate to the forget gate (i = 1 - f), so it "
                "needs `forget_gate=True`; got coupled=True, forget_gate=False."
            )
        super().__init__(units, **kwargs)
        self.forget_bias, self.chrono_init = check_gate_bias_options(
            self, forget_bias, chrono_init, "forget", forget_gate
        )
        self.forget_gate = bool(forget_gate)
        self.peephole = bool(peephole)
        self.coupled = bool(coupled)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.peephole_initializer = keras.initializers.get(peephole_initializer)
        self.gates = tuple(
            gate
            for gate in "ifco"
            if not (gate == "i" and coupled) and not (gate == "f" and not forget_gate)
        )

    @property
    def gate_count(self):
        return len(self.gates)

    @property
    def state_size(self):
        return [self.units, self.units]

    state_names = ("h", "c")

    def make_bias_initializer(self):
        special = self.chrono_init is not None or self.forget_bias is not None
        if not special and not (self.unit_forget_bias and self.forget_gate):
            return self.bias_initializer
        units, gates, base = self.units, self.gates, self.bias_initializer
        chrono_init, forget_bias, seed = self.chrono_init, self.forget_bias, self.seed

        def initializer(shape, dtype=None):
            blocks = {gate: base((units,), dtype=dtype) for gate in gates}
            if chrono_init is not None:
                blocks["f"] = chrono_bias(units, chrono_init, seed, dtype)
                if "i" in blocks:
                    blocks["i"] = -blocks["f"]
            elif forget_bias is not None:
                blocks["f"] = blocks["f"] + forget_bias
            else:
                blocks["f"] = ops.ones((units,), dtype=dtype)
            return ops.concatenate([blocks[gate] for gate in gates])

        return initializer

    def _build_extra(self, input_dim):
        if self.peephole:
            for gate in self.gates:
                if gate != "c":
                    setattr(
                        self,
                        f"peephole_{gate}",
                        self.add_weight(
                            shape=(self.units,),
                            name=f"peephole_{gate}",
                            initializer=self.peephole_initializer,
                        ),
                    )

    def recurrent_step(self, projected, h_tm1, states):
        c_tm1 = states[1]
        z = projected + self.recurrent_preactivation(h_tm1)
        blocks = dict(zip(self.gates, ops.split(z, self.gate_count, axis=-1)))
        gate = self.recurrent_activation
        candidate = self.activation(blocks["c"])
        if self.forget_gate:
            f_pre = blocks["f"]
            if self.peephole:
                f_pre = f_pre + self.peephole_f * c_tm1
            f = gate(f_pre)
        if self.coupled:
            c = f * c_tm1 + (1.0 - f) * candidate
        else:
            i_pre = blocks["i"]
            if self.peephole:
                i_pre = i_pre + self.peephole_i * c_tm1
            i = gate(i_pre)
            c = (f * c_tm1 if self.forget_gate else c_tm1) + i * candidate
        o_pre = blocks["o"]
        if self.peephole:
            o_pre = o_pre + self.peephole_o * c
        h = gate(o_pre) * self.output_activation(c)
        return h, [h, c]

    def recurrent_preactivation(self, h_tm1):
        """U h_{t-1} for all gates; layer-normalised cells override it."""
        return ops.matmul(h_tm1, self.recurrent_kernel)

    def output_activation(self, c):
        """phi(c_t) in h_t = o_t * phi(c_t); layer-normalised cells override it."""
        return self.activation(c)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "forget_gate": self.forget_gate,
                "peephole": self.peephole,
                "coupled": self.coupled,
                "unit_forget_bias": self.unit_forget_bias,
                "peephole_initializer": keras.initializers.serialize(self.peephole_initializer),
                "forget_bias": self.forget_bias,
                "chrono_init": self.chrono_init,
            }
        )
        return config
