"""What every kerasrnn cell shares: Keras' argument names, dropout masks, checks, config.

A cell here is an ordinary Keras layer obeying Keras' cell contract (`state_size`,
`output_size`, `call(inputs, states, training=False) -> (output, new_states)`,
`get_initial_state(batch_size)`), so `keras.layers.RNN`, `StackedRNNCells` and
`Bidirectional` take it unchanged.
"""

import functools

import keras
from keras import ops

from kerasrnn._private import DropoutRNNCell
from kerasrnn.validation import check_int, check_rate, is_number


@functools.cache
def config_keys(cell_class):
    """The options of `cell_class` (a `RecurrentCell` or a subclass), in the order of
    its config: the keys of ``cell_class(1).get_config()``, Keras' own (name,
    trainable, dtype) included. The one list of a cell's options that the code reading
    them (the fused-kernel test of `kerasrnn.RNN`, the TF Addons converter) derives
    its own from, so an option added to the cell reaches both.

    >>> from kerasrnn.cells.base import config_keys
    >>> config_keys(RecurrentCell)[3:6]
    ('units', 'activation', 'recurrent_activation')
    """
    return tuple(cell_class(1).get_config())


def check_units(units):
    """`units` must be a positive integer; anything else is named in the error."""
    return check_int("units", units)


class RecurrentCell(DropoutRNNCell, keras.layers.Layer):
    """Base of the kerasrnn cells: weights, dropout and config handled once.

    Subclasses define `gate_count` (how many `units`-wide blocks the fused kernels hold),
    `_build_extra(input_dim)` for weights beyond kernel/recurrent_kernel/bias,
    `recurrent_step` (and `input_projection` where W x_t + b is not the whole input part) and
    `state_size`.

    Args:
        units: positive integer, the width of the hidden state.
        activation: the candidate / output nonlinearity (default tanh).
        recurrent_activation: the gate nonlinearity (default sigmoid), for gated cells.
        use_bias: whether the pre-activations get a bias vector.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers of the
            input kernel W, the recurrent kernel U and the bias b.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: their regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint: their constraints.
        dropout: fraction of the input units dropped; one mask per sequence, the same
            at every time step (Gal & Ghahramani 2016).
        recurrent_dropout: the same for the recurrent state h_{t-1}.
        seed: seed of the dropout masks.
        learn_initial_state: learn the initial state(s) h_0 (and c_0) as trainable
            vectors (`initial_h`, `initial_c`, one per state, shared by every sequence)
            instead of starting from zeros; they are used whenever the RNN layer is
            called without `initial_state`.
        initial_state_initializer: initializer of those vectors (default zeros, so a
            new cell starts as a zero-state one).
    """

    gate_count = 1
    # names of the states, in `state_size` order (the learned initial states' names)
    state_names: tuple[str, ...] = ("h",)

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        learn_initial_state=False,
        initial_state_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_units(units)
        self.activation = keras.activations.get(activation)
        self.recurrent_activation = keras.activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = keras.regularizers.get(recurrent_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.recurrent_constraint = keras.constraints.get(recurrent_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = check_rate("recurrent_dropout", recurrent_dropout)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)
        self.learn_initial_state = bool(learn_initial_state)
        self.initial_state_initializer = keras.initializers.get(initial_state_initializer)
        self.initial_state_weights = []

    # ---- the cell contract -------------------------------------------------------
    @property
    def output_size(self):
        return self.units

    def get_initial_state(self, batch_size=None):
        if self.learn_initial_state and self.initial_state_weights:
            return [
                ops.broadcast_to(
                    ops.cast(weight, self.compute_dtype)[None], (batch_size, weight.shape[0])
                )
                for weight in self.initial_state_weights
            ]
        return [
            ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in _as_list(self.state_size)
        ]

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError(
                f"{type(self).__name__} takes one time step of shape (batch, features) "
                f"at a time (inside keras.layers.RNN, sequences of shape "
                f"(batch, time, features)); got inputs of shape {tuple(input_shape)}."
            )
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} needs a known feature dimension; got inputs of "
                f"shape {tuple(input_shape)}."
            )
        width = self.gate_count * self.units
        self.kernel = self.add_weight(
            shape=(input_dim, width),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, width),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=self.bias_shape(),
                name="bias",
                initializer=self.make_bias_initializer(),
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None
        self._build_extra(input_dim)
        if self.learn_initial_state:
            # after every other weight: the Keras-layout weights keep their positions
            self.initial_state_weights = [
                self.add_weight(
                    shape=(size,),
                    name=f"initial_{name}",
                    initializer=self.initial_state_initializer,
                )
                for name, size in zip(self.state_names, _as_list(self.state_size))
            ]
        self.built = True

    def bias_shape(self):
        return (self.gate_count * self.units,)

    def make_bias_initializer(self):
        return self.bias_initializer

    def _build_extra(self, input_dim):
        pass

    def call(self, inputs, states, training=False):
        states = self.check_states(states)
        if training and self.dropout > 0:
            inputs = inputs * self.get_dropout_mask(inputs)
        return self.call_projected(self.input_projection(inputs), states, training)

    def call_projected(self, projected, states, training=False):
        """One step from x_t already projected by `input_projection` (dropout included).

        `kerasrnn.RNN` projects the whole sequence in one matmul before the time loop and
        then calls this at every step; `call` does both for one step.
        """
        h_tm1 = states[0]
        if training and self.recurrent_dropout > 0:
            h_tm1 = h_tm1 * self.get_recurrent_dropout_mask(h_tm1)
        return self.recurrent_step(projected, h_tm1, states)

    def input_projection(self, inputs):
        """The part of the pre-activations that depends on x_t only: W x_t (+ b).

        Works on one step [batch, features] or a whole sequence [batch, time, features].
        """
        z = ops.matmul(inputs, self.kernel)
        if self.use_bias:
            z = z + self.bias
        return z

    def recurrent_step(self, projected, h_tm1, states):
        """The rest of a step: `projected` = input_projection(x_t), `h_tm1` the (dropped)
        h_{t-1}, `states` the undropped previous states. Returns (output, new states)."""
        raise NotImplementedError

    def check_states(self, states):
        states = _as_list(states)
        sizes = _as_list(self.state_size)
        if len(states) != len(sizes):
            raise ValueError(
                f"{type(self).__name__} expects {len(sizes)} state tensor(s) of widths "
                f"{sizes}; got {len(states)}."
            )
        for index, (state, size) in enumerate(zip(states, sizes)):
            if len(state.shape) != 2 or state.shape[-1] not in (None, size):
                raise ValueError(
                    f"{type(self).__name__}: initial/recurrent state {index} must have "
                    f"shape (batch, {size}); got {tuple(state.shape)}."
                )
        return states

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "recurrent_activation": keras.activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": keras.initializers.serialize(self.recurrent_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "recurrent_regularizer": keras.regularizers.serialize(self.recurrent_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "recurrent_constraint": keras.constraints.serialize(self.recurrent_constraint),
                "bias_constraint": keras.constraints.serialize(self.bias_constraint),
                "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed,
                "learn_initial_state": self.learn_initial_state,
                "initial_state_initializer": keras.initializers.serialize(
                    self.initial_state_initializer
                ),
            }
        )
        return config


def check_gate_bias_options(cell, forget_bias, chrono_init, gate, has_gate=True):
    """Validates `forget_bias` / `chrono_init` of a gated cell (`gate` names the gate
    they initialise); returns them as (float or None, float or None)."""
    name = type(cell).__name__
    for option, value in (("forget_bias", forget_bias), ("chrono_init", chrono_init)):
        if value is None:
            continue
        if not is_number(value):
            raise ValueError(f"`{option}` must be a number or None, got {option}={value!r}.")
        if not has_gate:
            raise ValueError(
                f"`{option}` initialises the {gate} gate's bias, but this {name} has no "
                f"{gate} gate; got {option}={value!r}."
            )
        if not cell.use_bias:
            raise ValueError(
                f"`{option}` initialises a bias, but use_bias=False; got {option}={value!r}."
            )
    if forget_bias is not None and chrono_init is not None:
        raise ValueError(
            "`forget_bias` and `chrono_init` both set the gate bias: give one; got "
            f"forget_bias={forget_bias!r}, chrono_init={chrono_init!r}."
        )
    if chrono_init is not None and chrono_init < 2:
        raise ValueError(
            "`chrono_init` is T_max, the longest dependency expected, and must be >= 2; "
            f"got chrono_init={chrono_init!r}."
        )
    return (
        None if forget_bias is None else float(forget_bias),
        None if chrono_init is None else float(chrono_init),
    )


def chrono_bias(units, t_max, seed=None, dtype=None):
    """Tallec & Ollivier's (2018) chrono gate bias: log(u), u ~ U[1, T_max - 1]."""
    draw = keras.initializers.RandomUniform(1.0, t_max - 1.0, seed=seed)
    return ops.log(draw((units,), dtype=dtype))


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def layer_norm(x, gamma, beta, epsilon):
    """LN(x) = gamma * (x - mean(x)) / sqrt(var(x) + epsilon) + beta over the last axis."""
    # Statistics in at least float32 under mixed precision: float16 variances lose too much.
    dtype = x.dtype
    if keras.backend.standardize_dtype(dtype) in ("float16", "bfloat16"):
        x = ops.cast(x, "float32")
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
    normed = (x - mean) * ops.rsqrt(variance + epsilon)
    return ops.cast(normed, dtype) * gamma + beta
