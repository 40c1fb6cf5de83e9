"""Where the LSTM's training step spends its time on a TensorFlow CPU, and two ways tried
to spend less.

The workload is `bench/cells.py`'s: batch 64, 100 steps, 128 inputs, 256 units, Adam, a
dense head on the last state, one `train_on_batch` step of `kerasrnn.RNN(LSTMCell)`.

    python bench/lstm_profile.py                   # both parts
    python bench/lstm_profile.py --part profile    # TensorFlow profiler: time per op type
    python bench/lstm_profile.py --part alternatives

`profile` traces `--traced` steps with `tf.profiler` and sums the ops' self time by op
type, over both of TensorFlow's compute threads (so the total is about twice the wall
time; "IDLE" is a thread waiting). `alternatives` times, interleaved in this process
(`timing.interleaved_rounds`), `keras.layers.LSTM` against two LSTMs written here on the
same weights:

* `tf.raw_ops.BlockLSTMV2`: TensorFlow's fused CPU kernel for the whole sequence (the
  gate order i, f, c, o is Keras'); gradients through its registered gradient.
* a hand-written backward pass (`tf.custom_gradient`): the forward loop keeps the gates,
  a backward loop computes each step's gate gradients, and the weight gradients are then
  one [time * batch]-row matmul each, as PyTorch's CPU kernel does, instead of one small
  matmul and one AddN per time step.

Both check their outputs and gradients against `keras.layers.LSTM` first and print the
largest difference. Neither is in the package: see bench/README.md for what they measured.
"""

import argparse
import collections
import glob
import json
import os
import statistics
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import kerasrnn  # noqa: E402
from bench import timing  # noqa: E402
from bench.cells import BATCH, INPUTS, STEPS, UNITS  # noqa: E402


def train_step(layer):
    inputs = keras.Input((STEPS, INPUTS))
    model = keras.Model(inputs, keras.layers.Dense(1)(layer(inputs)))
    model.compile("adam", "mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, STEPS, INPUTS)).astype("float32")
    y = np.zeros((BATCH, 1), "float32")
    for _ in range(3):
        model.train_on_batch(x, y)
    return lambda: model.train_on_batch(x, y)


def profile(traced):
    # The profiler's own converter (the one TensorBoard's profile plugin calls).
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

    step = train_step(kerasrnn.RNN(kerasrnn.LSTMCell(UNITS)))
    logdir = tempfile.mkdtemp(prefix="lstm_profile_")
    tf.profiler.experimental.start(logdir)
    for _ in range(traced):
        step()
    tf.profiler.experimental.stop()
    path = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0]
    data, _ = _pywrap_profiler_plugin.xspace_to_tools_data([path], "framework_op_stats", {})
    table = json.loads(data)[0]
    columns = [c["id"] for c in table["cols"]]
    by_type = collections.defaultdict(lambda: [0.0, 0])
    for row in table["rows"]:
        cells = dict(zip(columns, [c["v"] if c else None for c in row["c"]]))
        by_type[cells["type"]][0] += cells["total_self_time"] or 0.0
        by_type[cells["type"]][1] += cells["occurrences"] or 0
    total = sum(t for t, _ in by_type.values())
    print(
        f"kerasrnn.RNN(LSTMCell({UNITS})) training step, {traced} steps traced; self time "
        f"summed over both compute threads: {total / traced / 1000:.1f} ms per step"
    )
    print(f"{'op type':24s} {'ms/step':>8s} {'share':>6s} {'events/step':>11s} {'us/event':>8s}")
    for kind, (time_us, calls) in sorted(by_type.items(), key=lambda kv: -kv[1][0])[:12]:
        per_call = f"{time_us / calls:8.1f}" if calls else f"{'':8s}"
        print(
            f"{kind:24s} {time_us / traced / 1000:8.2f} {100 * time_us / total:5.1f}% "
            f"{calls / traced:11.0f} {per_call}"
        )


class SequenceLSTM(keras.layers.Layer):
    """An LSTM over a whole sequence in one TensorFlow function; returns the last h."""

    def __init__(self, units, implementation):
        super().__init__()
        self.units, self.implementation = units, implementation

    def build(self, shape):
        self.kernel = self.add_weight(
            shape=(shape[-1], 4 * self.units), initializer="glorot_uniform"
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, 4 * self.units), initializer="orthogonal"
        )
        self.bias = self.add_weight(shape=(4 * self.units,), initializer="zeros")

    def call(self, x):
        x = tf.transpose(x, (1, 0, 2))
        zeros = tf.zeros((tf.shape(x)[1], self.units), x.dtype)
        weights = [tf.identity(w) for w in (self.kernel, self.recurrent_kernel, self.bias)]
        return self.implementation(x, *weights, zeros, zeros)[-1]


def block_lstm(x, kernel, recurrent_kernel, bias, h0, c0):
    no_peephole = tf.zeros((h0.shape[-1],), x.dtype)
    outputs = tf.raw_ops.BlockLSTMV2(
        seq_len_max=tf.cast(tf.shape(x)[0], tf.int64),
        x=x,
        cs_prev=c0,
        h_prev=h0,
        w=tf.concat([kernel, recurrent_kernel], 0),
        wci=no_peephole,
        wcf=no_peephole,
        wco=no_peephole,
        b=bias,
        cell_clip=0.0,
        use_peephole=False,
    )
    return outputs[-1]


@tf.custom_gradient
def hand_written_backward(x, kernel, recurrent_kernel, bias, h0, c0):
    steps, units = tf.shape(x)[0], h0.shape[-1]

    def forward(t, h, c, gates, cells, hiddens):
        z = tf.matmul(x[t], kernel) + bias + tf.matmul(h, recurrent_kernel)
        zi, zf, zc, zo = tf.split(z, 4, axis=-1)
        i, f, g, o = tf.sigmoid(zi), tf.sigmoid(zf), tf.tanh(zc), tf.sigmoid(zo)
        c = f * c + i * g
        h = o * tf.tanh(c)
        return (
            t + 1,
            h,
            c,
            gates.write(t, tf.concat([i, f, g, o], -1)),
            cells.write(t, c),
            hiddens.write(t, h),
        )

    arrays = [tf.TensorArray(x.dtype, size=steps) for _ in range(3)]
    _, _, _, gates, cells, hiddens = tf.while_loop(
        lambda t, *_: t < steps, forward, (0, h0, c0, *arrays)
    )
    gates, cells, hiddens = gates.stack(), cells.stack(), hiddens.stack()

    def backward(d_hiddens):
        previous_c = tf.concat([c0[None], cells[:-1]], 0)
        previous_h = tf.concat([h0[None], hiddens[:-1]], 0)

        def step(t, dh_next, dc_next, dz_array):
            i, f, g, o = tf.split(gates[t], 4, axis=-1)
            tanh_c = tf.tanh(cells[t])
            dh = d_hiddens[t] + dh_next
            dc = dc_next + dh * o * (1 - tanh_c * tanh_c)
            dz = tf.concat(
                [
                    dc * g * i * (1 - i),
                    dc * previous_c[t] * f * (1 - f),
                    dc * i * (1 - g * g),
                    dh * tanh_c * o * (1 - o),
                ],
                -1,
            )
            return (
                t - 1,
                tf.matmul(dz, recurrent_kernel, transpose_b=True),
                dc * f,
                dz_array.write(t, dz),
            )

        _, dh0, dc0, dz = tf.while_loop(
            lambda t, *_: t >= 0,
            step,
            (steps - 1, tf.zeros_like(h0), tf.zeros_like(c0), tf.TensorArray(x.dtype, size=steps)),
        )
        dz = tf.reshape(dz.stack(), (-1, 4 * units))
        d_kernel = tf.matmul(tf.reshape(x, (-1, x.shape[-1])), dz, transpose_a=True)
        d_recurrent = tf.matmul(tf.reshape(previous_h, (-1, units)), dz, transpose_a=True)
        dx = tf.reshape(tf.matmul(dz, kernel, transpose_b=True), tf.shape(x))
        return dx, d_kernel, d_recurrent, tf.reduce_sum(dz, 0), dh0, dc0

    return hiddens, backward


def check_against_keras(layer):
    """Largest |difference| of output and gradients from keras.layers.LSTM, same weights."""
    reference = keras.layers.LSTM(UNITS)
    x = tf.constant(np.random.default_rng(1).normal(size=(4, STEPS, INPUTS)), "float32")
    reference(x), layer(x)
    layer.bias.assign(np.random.default_rng(2).normal(size=4 * UNITS).astype("float32"))
    ours = [layer.kernel, layer.recurrent_kernel, layer.bias]
    theirs = [reference.cell.kernel, reference.cell.recurrent_kernel, reference.cell.bias]
    for mine, other in zip(ours, theirs):
        other.assign(mine)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        outputs = [reference(x), layer(x)]
        losses = [tf.reduce_sum(tf.sin(o)) for o in outputs]
    gradients = [tape.gradient(losses[0], [x] + theirs), tape.gradient(losses[1], [x] + ours)]
    return (
        float(np.abs(outputs[0] - outputs[1]).max()),
        max(float(np.abs(a - b).max()) for a, b in zip(*gradients)),
    )


def alternatives(rounds, steps):
    contenders = {
        "keras.layers.LSTM": lambda: keras.layers.LSTM(UNITS),
        "tf.raw_ops.BlockLSTMV2": lambda: SequenceLSTM(UNITS, block_lstm),
        "hand-written backward": lambda: SequenceLSTM(UNITS, hand_written_backward),
    }
    for label in list(contenders)[1:]:
        output_diff, gradient_diff = check_against_keras(contenders[label]())
        print(
            f"# {label}: max |output - keras| {output_diff:.1e}, "
            f"max |gradient - keras| {gradient_diff:.1e}"
        )
    built = [(label, train_step(make())) for label, make in contenders.items()]
    times = {
        label: [1000 * s for s in seconds]
        for label, seconds in timing.interleaved_rounds(built, rounds, steps).items()
    }
    reference = times["keras.layers.LSTM"]
    print(f"{'contender':24s} {'ms/step':>8s} {'vs keras.layers.LSTM':>21s} {'min-max':>10s}")
    for label, ms in times.items():
        ratios = timing.ratios(ms, reference)
        print(
            f"{label:24s} {statistics.median(ms):8.1f} {statistics.median(ratios):21.2f} "
            f"{min(ratios):4.2f}-{max(ratios):4.2f}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("profile", "alternatives", "both"), default="both")
    parser.add_argument("--traced", type=int, default=3, help="steps traced by the profiler")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"# load average {os.getloadavg()[0]:.1f}; TensorFlow {tf.__version__}, "
        f"{os.cpu_count()} cores"
    )
    if args.part in ("profile", "both"):
        profile(args.traced)
    if args.part in ("alternatives", "both"):
        alternatives(args.rounds, args.steps)


if __name__ == "__main__":
    main()
