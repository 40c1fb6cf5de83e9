"""`keras.layers.RNN` with a fast path: standard LSTM/GRU cells on Keras' fused kernels."""

import contextlib
from typing import NamedTuple

import keras
from keras import ops

from kerasrnn._private import (
    backend_gru,
    backend_lstm,
    backend_rnn,
    tensorflow_graph_in_xla_context,
    tensorflow_records_gradient,
)
from kerasrnn.cells.base import RecurrentCell
from kerasrnn.cells.lstm_sequence import lstm_sequence
from kerasrnn.cells.min_rnn import InputGatedCell
from kerasrnn.cells.recurrence import fused_cell, recurrence_spec
from kerasrnn.ops import right_padding


def fused_kind(layer):
    """ "lstm" or "gru" when `kerasrnn.RNN` `layer` runs its loop on Keras' fused LSTM /
    GRU kernels (way 1 of `RNN`; the LSTM's written-out pass, way 2, too), else None.

    That is a layer `recurrence_spec` describes, whose cell is kerasrnn's (Keras' own
    cells are `keras.layers.LSTM` / `GRU`'s job), without peepholes (the kernels have
    none) and without recurrent dropout (it acts inside the loop; input dropout is
    applied to the whole sequence first, as `keras.layers.LSTM` does)."""
    spec = recurrence_spec(layer)
    if spec is None or spec.keras_cell or spec.peephole or spec.recurrent_dropout:
        return None
    return spec.kind


def compiled_with_xla():
    """Whether the code being traced now compiles with XLA: always on JAX; on TensorFlow
    inside `tf.function(jit_compile=True)` (a model compiled with `jit_compile=True`);
    never on torch. TensorFlow tells this only through an internal module
    (`kerasrnn._private`); Keras has no public equivalent."""
    backend = keras.backend.backend()
    if backend == "jax":
        return True
    if backend != "tensorflow":
        return False
    import tensorflow as tf

    return tensorflow_graph_in_xla_context(tf.compat.v1.get_default_graph())


def written_out_lstm(sequences, kernel, recurrent_kernel, bias, h0, c0, mask, options):
    """The LSTM layer's pass through `lstm_sequence`: batch-major `sequences` (and `mask`
    `(batch, time)` or None) -> `(last_output, outputs, h_T, c_T)` as
    `keras.layers.RNN.inner_loop` returns them; `options` is `(go_backwards,
    return_sequences, input_gradient, zero_output_for_mask)`."""
    go_backwards, return_sequences, input_gradient, zero_output_for_mask = options
    sequences = ops.transpose(sequences, (1, 0, 2))
    if go_backwards:
        sequences = ops.flip(sequences, axis=0)
        mask = None if mask is None else ops.flip(mask, axis=1)
    if mask is not None:
        # keras.layers.RNN's outputs at a masked step: zeros with zero_output_for_mask,
        # else the last real step's output (zeros before the first one: n_t = 0)
        shown = mask if zero_output_for_mask else right_padding(mask).steps > 0
        shown, mask = ops.transpose(shown), ops.transpose(mask)
    outputs, h, c = lstm_sequence(
        sequences,
        kernel,
        recurrent_kernel,
        bias,
        h0,
        c0,
        input_gradient=input_gradient,
        mask=mask,
    )
    if mask is not None:
        outputs = outputs * ops.cast(shown, outputs.dtype)[..., None]
    last_output = outputs[-1]
    outputs = ops.transpose(outputs, (1, 0, 2)) if return_sequences else last_output[:, None]
    return last_output, outputs, h, c


_XLA_WRITTEN_OUT_LSTM: dict = {}  # one tf.function per options, made on first use


def xla_written_out_lstm(sequences, kernel, recurrent_kernel, bias, h0, c0, mask, options):
    """`written_out_lstm` in its own XLA cluster: a `tf.function(jit_compile=True)` that a
    graph TensorFlow runs without XLA (a model compiled with Keras' default settings on a
    CPU) calls as one compiled op; TensorFlow compiles its gradient function with XLA
    too (both carry `_XlaMustCompile`)."""
    import tensorflow as tf

    if options not in _XLA_WRITTEN_OUT_LSTM:
        _XLA_WRITTEN_OUT_LSTM[options] = tf.function(
            lambda *args: written_out_lstm(*args, options), jit_compile=True
        )
    # tensors, not Keras variables, cross into the compiled function (the gradient reaches
    # the variables through the reads)
    weights = [
        None if w is None else tf.convert_to_tensor(w) for w in (kernel, recurrent_kernel, bias)
    ]
    return _XLA_WRITTEN_OUT_LSTM[options](sequences, *weights, h0, c0, mask)


# The ways `kerasrnn.RNN` can run its time loop, in the order it tries them.
PATHS = ("fused", "written_out", "xla_cluster", "parallel", "hoisted", "keras_loop")


class PathConditions(NamedTuple):
    """What decides a `kerasrnn.RNN` call's path (`loop_paths`)."""

    fused: bool  # fast_path and the cell computes what keras.layers.LSTM / GRU do
    lstm: bool  # ... and it is the LSTM, not unrolled (the written-out pass exists)
    written_out_first: bool  # JAX, no mask: the written-out loop before the fused kernel
    under_xla: bool  # the code traced now compiles with XLA (JAX; TF with jit_compile)
    own_cluster: bool  # on TF without XLA, the layer compiles its loop itself
    masked: bool
    hoist: bool  # hoist_projection and a kerasrnn cell
    parallel: bool = False  # fast_path and the cell has a parallel form over time


def loop_paths(c):
    """The paths a call may take, in order: the first that runs is the call's path.
    Only "fused" can decline at run time (the backend has no fused kernel for this
    device, dtype or mask); "keras_loop" always runs.

    >>> loop_paths(PathConditions(True, True, False, False, True, False, False))
    ['fused', 'xla_cluster', 'keras_loop']
    """
    table = {
        "fused": c.fused and not c.written_out_first,
        "written_out": c.lstm and c.under_xla and not c.masked,
        "xla_cluster": c.lstm and not c.under_xla and c.own_cluster,
        "parallel": c.parallel,
        "hoisted": c.hoist,
        "keras_loop": True,
    }
    return [path for path in PATHS if table[path]]


def check_sequence_rank(layer, shape):
    """kerasrnn.RNN reads (batch, time, features); a rank-2 input is the common slip."""
    shape = tuple(shape)
    if len(shape) == 2:
        raise ValueError(
            f"{layer.name} (kerasrnn.RNN) expects sequences of shape (batch, time, "
            f"features); got shape {shape}. For one feature per step pass x[..., None]; "
            f"for token ids put a keras.layers.Embedding first."
        )
    if len(shape) != 3:
        raise ValueError(
            f"{layer.name} (kerasrnn.RNN) expects sequences of shape (batch, time, "
            f"features); got shape {shape}."
        )


@keras.saving.register_keras_serializable(package="kerasrnn")
class RNN(keras.layers.RNN):
    """Drop-in `keras.layers.RNN` that runs standard LSTM/GRU cells on fused kernels.

    The time loop runs the first of these that applies:

    1. **Fused** (`fast_path=True`, the cell is a kerasrnn `LSTMCell` / `GRUCell` in the
       configuration `keras.layers.LSTM` / `GRU` compute: tanh and sigmoid, a forget gate,
       no peepholes or coupling, no recurrent dropout; `kerasrnn.cells.rnn.fused_kind`
       over `kerasrnn.cells.recurrence_spec`): the cell's own weights go to
       Keras' fused LSTM/GRU implementation, the one `keras.layers.LSTM` / `GRU` use:
       cuDNN on a GPU with TensorFlow (right-padding masks too) or PyTorch (no mask);
       on PyTorch's CPU a loop with the input projection hoisted; `lax.scan` for the
       GRU on JAX. Where that implementation declines (a CPU with TensorFlow; masks
       the backend's kernel cannot take), the next way runs. On JAX the LSTM skips
       this way for the next, which trained faster there (`bench/gpu.py`): no call
       reaches cuDNN on JAX.
       A cell in `kerasrnn.layers.WeightDrop` counts as the cell it wraps, with the
       recurrent kernel it drops for the call (ways 1 and 2).
    2. **Written-out backward pass** (the same LSTM cells, no mask, not unrolled):
       `kerasrnn.cells.lstm_sequence`, whose backward loop keeps only the gate
       gradients and takes each weight gradient in one matmul over all steps, as
       PyTorch's CPU LSTM does; compiled with XLA. On JAX, and on TensorFlow inside a
       model compiled with `jit_compile=True`, it runs inline. On TensorFlow without
       XLA (Keras' default `jit_compile="auto"` on a CPU) the layer compiles it in its
       own XLA cluster, a `tf.function(jit_compile=True)` whose gradient XLA compiles
       too: with `jit_compile="auto"` in training at a length known when traced
       (inference, the graphs `kerasrnn.export` writes and a step traced for any
       length keep the loop), with `jit_compile=True` always. XLA compiles
       the cluster once per input shape.
    3. **Parallel over time** (`fast_path=True`, a cell whose gates read x_t alone:
       `MinGRUCell`, `MinLSTMCell`): h_t = a_t h_{t-1} + b_t for every t by a parallel
       scan in log2 T rounds (`kerasrnn.cells.min_rnn.linear_recurrence`), not a loop
       of T steps; masked steps keep the state, as in the loop.
    4. **Hoisted projection** (`hoist_projection=True`, any kerasrnn cell): W x_t + b for
       all t in one [time * batch, features] x [features, gates * units] matmul before
       the loop, so the loop keeps only U h_{t-1} and the gate arithmetic. Off by
       default: on TensorFlow's and JAX's CPU it measured slower than projecting step by
       step (the projected sequence is gates times wider than the input and leaves the
       cache; `bench/README.md`).
    5. `keras.layers.RNN`'s own loop over the cell's `call`.

    After a call, `layer.loop_path` names the way it took: "fused" (1), "written_out" (2,
    inline under XLA), "xla_cluster" (2, in its own cluster), "parallel" (3), "hoisted"
    (4) or "keras_loop" (5); `kerasrnn.cells.rnn.loop_paths` is the table of conditions
    that orders them.

    The results are those of `keras.layers.RNN(cell)` to float tolerance (same equations,
    dropout masks fixed across time); the weights stay in the cell, so saved models
    load either way. `bench/cells.py` measures the ways against each other and PyTorch.

    Args:
        cell: the recurrent cell.
        fast_path: use the fused kernels, or the parallel scan, when the cell allows
            (False: always a loop).
        hoist_projection: for kerasrnn cells the fused kernels do not take, project the
            whole input sequence before the loop (way 4 above).
        jit_compile: on TensorFlow, whether the LSTM's loop (way 2) runs in its own XLA
            cluster when the model around it is not compiled with XLA: "auto" (the
            default) in training where the length is known when traced (XLA compiles
            once per shape), True always, False never (the differentiated loop of
            way 5, as before). Measured faster for the LSTM on a
            CPU (`bench/cells.py`); the GRU has no written-out pass and keeps its loop.
            No effect on JAX (always XLA) or torch.
        **kwargs: `keras.layers.RNN`'s arguments (`return_sequences`, `return_state`,
            `go_backwards`, `stateful`, `unroll`, `zero_output_for_mask`...).
            `keras.layers.Bidirectional` accepts the layer.

    Example:

    >>> import numpy as np, kerasrnn
    >>> layer = kerasrnn.RNN(kerasrnn.LSTMCell(8), return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 3), "float32")).shape)
    (2, 5, 8)
    >>> layer.loop_path  # TensorFlow on a CPU, eagerly: no fused kernel, no XLA
    'keras_loop'
    """

    def __init__(self, cell, fast_path=True, hoist_projection=False, jit_compile="auto", **kwargs):
        if jit_compile not in ("auto", True, False):
            raise ValueError(
                f"kerasrnn.RNN: jit_compile must be 'auto', True or False; got {jit_compile!r}."
            )
        super().__init__(cell, **kwargs)
        self.fast_path = bool(fast_path)
        self.hoist_projection = bool(hoist_projection)
        self.jit_compile = jit_compile
        self._loop_path = None

    @property
    def loop_path(self):
        """The way the last call ran its time loop (None before the first call): one of
        `kerasrnn.cells.rnn.PATHS`, "fused", "written_out" (under XLA), "xla_cluster"
        (its own XLA cluster), "parallel", "hoisted" or "keras_loop". Set when the call
        runs or is traced, so after a `tf.function` / `jax.jit` trace it names the traced
        path."""
        return self._loop_path

    def build(self, sequences_shape, initial_state_shape=None):
        check_sequence_rank(self, sequences_shape)
        super().build(sequences_shape, initial_state_shape)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        check_sequence_rank(self, sequences.shape)
        return super().call(sequences, initial_state=initial_state, mask=mask, training=training)

    def path_conditions(self, sequences, mask, training):
        """The `PathConditions` of a call with these inputs."""
        kind = fused_kind(self) if self.fast_path else None
        lstm = kind == "lstm" and not self.unroll
        # On JAX an unmasked LSTM takes the written-out loop before Keras' fused kernel:
        # on a GPU its training step measured faster at batch 64 x 100 x 256 and level at
        # 256 x 200 x 1024 (bench/results/gpu.json).
        return PathConditions(
            fused=kind is not None,
            lstm=lstm,
            written_out_first=lstm and mask is None and keras.backend.backend() == "jax",
            under_xla=lstm and compiled_with_xla(),
            own_cluster=lstm and self._compiles_own_loop(training, sequences),
            masked=mask is not None,
            hoist=self.hoist_projection and isinstance(self.cell, RecurrentCell),
            parallel=self.fast_path and isinstance(self.cell, InputGatedCell),
        )

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        runs = {
            "fused": lambda: self._fused_loop(sequences, initial_state, mask, training),
            "written_out": lambda: self._written_out_loop(sequences, initial_state, training),
            "xla_cluster": lambda: self._written_out_loop(
                sequences, initial_state, training, mask, compiled=True
            ),
            "parallel": lambda: self._parallel_loop(sequences, initial_state, mask, training),
            "hoisted": lambda: self._hoisted_loop(sequences, initial_state, mask, training),
            "keras_loop": lambda: super(RNN, self).inner_loop(
                sequences, initial_state, mask, training=training
            ),
        }
        for path in loop_paths(self.path_conditions(sequences, mask, training)):
            if path in ("fused", "written_out", "xla_cluster"):
                result = self._with_substituted_weights(runs[path], training)
            else:
                result = runs[path]()
            if result is not None:
                self._loop_path = path
                return result
        raise AssertionError("unreachable: the Keras loop always runs")

    def _with_substituted_weights(self, run, training):
        """`run()` with the weights of this call: a weight-only wrapper
        (kerasrnn.layers.WeightDrop) lends the cell the weights the fused ways take."""
        substituted = getattr(self.cell, "substituted_weights", None)
        with substituted(training) if substituted else contextlib.nullcontext():
            return run()

    @property
    def _fused_cell(self):
        """The cell whose configuration and weights the fused kernels take
        (`kerasrnn.cells.recurrence.fused_cell`)."""
        return fused_cell(self)

    def _dropped(self, sequences, training):
        cell = self._fused_cell
        if training and cell.dropout > 0:
            # the mask is the same at every step, so it applies to the whole sequence
            return sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0]), 1)
        return sequences

    def _fused_loop(self, sequences, initial_state, mask, training):
        """Keras' fused LSTM/GRU on the cell's weights; None where the backend declines."""
        cell = self._fused_cell
        kind = fused_kind(self)
        states = cell.check_states(initial_state)
        arguments = dict(
            kernel=cell.kernel,
            recurrent_kernel=cell.recurrent_kernel,
            bias=cell.bias,
            activation=cell.activation,
            recurrent_activation=cell.recurrent_activation,
            return_sequences=self.return_sequences,
            go_backwards=self.go_backwards,
            unroll=self.unroll,
        )
        if keras.backend.backend() == "jax" and (
            keras.backend.standardize_dtype(sequences.dtype) != "float32"
        ):
            # JAX's cuDNN RNN lowers float32 only: under mixed_bfloat16 it fails at compile
            # time ("Unknown output type bfloat16", H100, bench/gpu.py), past the
            # NotImplementedError fallback below.
            return None
        try:
            if kind == "lstm":
                result = backend_lstm(
                    self._dropped(sequences, training),
                    states[0],
                    states[1],
                    mask,
                    **arguments,
                )
            else:
                result = backend_gru(
                    self._dropped(sequences, training),
                    states[0],
                    mask,
                    reset_after=cell.reset_after,
                    **arguments,
                )
        except NotImplementedError:
            return None
        if keras.backend.backend() == "tensorflow":
            self.supports_jit = False  # cuDNN ops do not compile with XLA (as in Keras)
        last_output, outputs, new_states = result
        if not isinstance(new_states, (list, tuple)):
            new_states = [new_states]
        return last_output, outputs, list(new_states)

    def _compiles_own_loop(self, training, sequences):
        """Whether the LSTM's loop runs in its own XLA cluster (`jit_compile`), the model
        around it not being compiled with XLA: on TensorFlow only (JAX always compiles;
        torch has no XLA here). With "auto" only in training, so that inference and the
        graphs `kerasrnn.export` writes keep the plain loop, and only where the length
        is known when traced: a step traced for any length (a pipeline of varying
        lengths, once Keras relaxes its trace) would make XLA compile once per length
        it meets, which cost a recipe's short training more than the cluster saved."""
        if self.jit_compile is False or keras.backend.backend() != "tensorflow":
            return False
        if self.jit_compile is True:
            return True
        return bool(training) and sequences.shape[1] is not None

    def _written_out_loop(self, sequences, initial_state, training, mask=None, compiled=False):
        """The LSTM through `lstm_sequence` (its backward pass written out), inline or
        (`compiled`) in its own XLA cluster."""
        cell = self._fused_cell
        h0, c0 = cell.check_states(initial_state)
        sequences = self._dropped(sequences, training)
        if compiled:
            # A compiled function computes every gradient it defines; the model's input
            # needs none (XLA prunes that matmul only when it compiles the whole step).
            run, input_gradient = xla_written_out_lstm, tensorflow_records_gradient(sequences)
        else:
            run, input_gradient = written_out_lstm, True
        last_output, outputs, h, c = run(
            sequences,
            cell.kernel,
            cell.recurrent_kernel,
            cell.bias,
            h0,
            c0,
            mask,
            (self.go_backwards, self.return_sequences, input_gradient, self.zero_output_for_mask),
        )
        return last_output, outputs, [h, c]

    def _parallel_loop(self, sequences, initial_state, mask, training):
        """Every state of an `InputGatedCell` in one scan (way 3), with
        `keras.layers.RNN`'s outputs: in the order the steps ran (`go_backwards`
        reverses them), and at a masked step zeros with `zero_output_for_mask`, else
        the state carried there, which is the last real step's output (before the
        first real step Keras gives zeros on TensorFlow and torch, and the initial
        state on JAX)."""
        cell = self.cell
        (h0,) = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        if training and cell.dropout > 0:  # one mask for every step, as in the loop
            sequences = sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0]), 1)
        if self.go_backwards:
            sequences = ops.flip(sequences, axis=1)
            mask = None if mask is None else ops.flip(mask, axis=1)
        states = cell.parallel_states(sequences, h0, mask)
        outputs = states
        if mask is not None and (self.zero_output_for_mask or keras.backend.backend() != "jax"):
            shown = mask if self.zero_output_for_mask else right_padding(mask).steps > 0
            outputs = outputs * ops.cast(shown, outputs.dtype)[..., None]
        last_output = outputs[:, -1]
        outputs = outputs if self.return_sequences else last_output[:, None]
        return last_output, outputs, [states[:, -1]]

    def _hoisted_loop(self, sequences, initial_state, mask, training):
        cell = self.cell
        states = cell.check_states(initial_state)
        # Time-major before projecting: transposing the narrow inputs costs less than
        # transposing the gates * units wide projection the loop would otherwise need.
        sequences = ops.transpose(self._dropped(sequences, training), (1, 0, 2))
        projected = cell.input_projection(sequences)
        if mask is not None:
            mask = ops.transpose(mask)

        def step(projected_t, states):
            return cell.call_projected(projected_t, list(states), training=training)

        last_output, outputs, new_states = backend_rnn(
            step,
            projected,
            states,
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[0],
            time_major=True,
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )
        return last_output, ops.transpose(outputs, (1, 0, 2)), new_states

    def get_config(self):
        config = super().get_config()
        config["fast_path"] = self.fast_path
        config["hoist_projection"] = self.hoist_projection
        config["jit_compile"] = self.jit_compile
        return config
