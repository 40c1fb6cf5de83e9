"""The LSTM's written-out pass compiled with XLA (forward and backward) against PyTorch's
`nn.LSTM`, and where the pass spends its time, on a TensorFlow CPU.

The pass is `kerasrnn.cells.lstm_sequence` as `kerasrnn.RNN` runs it on Keras' default
settings: one `tf.function(jit_compile=True)` taken through a `tf.GradientTape`, the
input's gradient skipped. The workload is `bench/cells.py`'s LSTM (batch 64, 100 steps,
128 inputs, 256 units) with no head and no optimiser: the loss is the sum of sin(h_t)
over all steps, the gradients those of the three weights. PyTorch's `nn.LSTM` computes
the same loss and gradients; the two are timed in interleaved rounds in this process
(`bench/timing.py`), with the same thread count (all cores).

    python bench/lstm_pass.py                  # ratio to nn.LSTM's pass, per round
    python bench/lstm_pass.py --profile        # time per XLA kernel of the compiled pass

`--profile` traces `--traced` passes with the TensorFlow profiler (XLA's CPU kernels
report themselves with `--xla_cpu_enable_xprof_traceme`, which the script adds to
`XLA_FLAGS`) and sums each kernel's time, grouped as the matmuls of every step, the other
kernels of every step (elementwise, stacked writes, copies), the kernels run once, and
what is left of the pass' time: mostly the weight gradients' matmuls over all steps,
whose work runs on a thread pool the trace does not break down. To time an older `lstm_sequence`,
check it out (`git checkout REV -- kerasrnn/cells/lstm_sequence.py`) and run the script
again: the ratio to `nn.LSTM` in each run is what compares.
"""

import argparse
import collections
import glob
import os
import statistics
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import omp_policy  # noqa: E402  (bench/: before torch loads)
import timing  # noqa: E402

OMP_POLICY = omp_policy.apply()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kerasrnn.cells.lstm_sequence import lstm_sequence  # noqa: E402

BATCH, STEPS, INPUTS, UNITS = 64, 100, 128, 256
SHAPE = (STEPS, BATCH, INPUTS, UNITS)


def weights(shape=SHAPE, seed=0):
    steps, batch, inputs, units = shape
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(steps, batch, inputs)).astype("float32")
    kernel = (0.05 * rng.normal(size=(inputs, 4 * units))).astype("float32")
    recurrent_kernel = (0.05 * rng.normal(size=(units, 4 * units))).astype("float32")
    bias = (0.1 * rng.normal(size=(4 * units,))).astype("float32")
    return x, kernel, recurrent_kernel, bias


def keras_pass(shape=SHAPE):
    """The compiled pass; returns a call giving `[loss, d_kernel, d_recurrent, d_bias]`."""
    x, *values = weights(shape)
    variables = [tf.Variable(v) for v in values]
    zeros = tf.zeros(shape[1::2])
    compiled = tf.function(
        lambda x, *w: lstm_sequence(x, *w, zeros, zeros, input_gradient=False)[0],
        jit_compile=True,
    )

    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            outputs = compiled(x, *[tf.convert_to_tensor(v) for v in variables])
            loss = tf.reduce_sum(tf.sin(outputs))
        return [loss, *tape.gradient(loss, variables)]

    x = tf.constant(x)
    return lambda: [t.numpy() for t in run(x)]


def torch_pass(shape=SHAPE):
    """`nn.LSTM` on `weights(shape)`: the same loss and gradients, from PyTorch."""
    import torch

    torch.set_num_threads(os.cpu_count())
    x, kernel, recurrent_kernel, bias = weights(shape)
    lstm = torch.nn.LSTM(shape[2], shape[3])
    # Keras' gate order i, f, c, o is PyTorch's i, f, g, o; its one bias goes in bias_ih
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(kernel.T))
        lstm.weight_hh_l0.copy_(torch.from_numpy(recurrent_kernel.T))
        lstm.bias_ih_l0.copy_(torch.from_numpy(bias))
        lstm.bias_hh_l0.zero_()
    x = torch.from_numpy(x)

    def run():
        lstm.zero_grad()
        loss = torch.sin(lstm(x)[0]).sum()
        loss.backward()
        return [
            float(loss.detach()),
            lstm.weight_ih_l0.grad.numpy().T,
            lstm.weight_hh_l0.grad.numpy().T,
            lstm.bias_ih_l0.grad.numpy(),
        ]

    return run


def compare(rounds, steps):
    contenders = [("kerasrnn lstm_sequence, XLA", keras_pass()), ("torch.nn.LSTM", torch_pass())]
    results = [timing.warm_up(call, 2)[1][-1] for _, call in contenders]
    # the same loss and gradients, to float32 summation order
    scale = [max(1.0, float(np.max(np.abs(t)))) for t in results[1]]
    worst = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / s for a, b, s in zip(*results, scale)
    )
    print(
        f"# largest difference in loss and gradients, relative to each one's largest: {worst:.1e}"
    )
    seconds = timing.interleaved_rounds(contenders, rounds, steps)
    mine, reference = (seconds[label] for label, _ in contenders)
    ratios = timing.ratios(mine, reference)
    spread = timing.summary(ratios)
    print(
        f"pass ms: {1000 * statistics.median(mine):.1f} against nn.LSTM's "
        f"{1000 * statistics.median(reference):.1f}; ratio {spread['median']:.3f} "
        f"(IQR {spread['q1']:.3f}-{spread['q3']:.3f}, min-max {spread['min']:.3f}-"
        f"{spread['max']:.3f}) over {rounds} rounds of {steps}"
    )


def profile(traced):
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    run = keras_pass()
    timing.warm_up(run, 3)
    logdir = tempfile.mkdtemp(prefix="lstm_pass_")
    tf.profiler.experimental.start(logdir)
    seconds = [timing.timed(run)[1] for _ in range(traced)]
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    kernels = collections.Counter()
    calls = collections.Counter()
    for plane in space.planes:
        for line in plane.lines:
            if "Eigen" not in line.name:  # XLA's kernels run on the intra-op threads
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if name.startswith(("ThunkExecutor", "SlinkyThreadPool", "end: ")):
                    continue  # containers and waits, not kernels
                kernels[name] += event.duration_ps / 1e9 / traced
                calls[name] += 1
    wall = 1000 * statistics.median(seconds)
    groups = collections.Counter()
    for name, ms in kernels.items():
        if calls[name] / traced < STEPS / 2:  # (a traced loop may miss an event)
            groups["kernels run once a pass"] += ms
        elif name.startswith("MatMul"):
            groups["matmuls of every step"] += ms
        else:
            groups["elementwise kernels, stacked writes, copies of every step"] += ms
    groups["unnamed: the weight gradients' matmuls, the ops outside XLA"] = wall - sum(
        groups.values()
    )
    print(f"# compiled pass, {traced} traced: {wall:.1f} ms each (median)")
    for group, ms in groups.most_common():
        print(f"{group:62s} {ms:7.1f} ms")
    print(f"\n{'kernel':40s} {'ms/pass':>8s} {'calls/pass':>10s}")
    for name, ms in kernels.most_common(20):
        print(f"{name[:40]:40s} {ms:8.2f} {calls[name] / traced:10.0f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="per-kernel time instead")
    parser.add_argument("--traced", type=int, default=5, help="passes the profiler traces")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=1, help="timed passes per round")
    args = parser.parse_args(argv)
    if args.profile:  # before XLA compiles anything and reads its flags
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_xprof_traceme=true"
        ).strip()
    print(
        f"# {os.cpu_count()} cores, TensorFlow {tf.__version__}, load average "
        f"{os.getloadavg()[0]:.1f}; batch {BATCH}, {STEPS} steps, {INPUTS} inputs, "
        f"{UNITS} units; OMP_WAIT_POLICY={OMP_POLICY}"
    )
    if args.profile:
        profile(args.traced)
    else:
        compare(args.rounds, args.steps)


if __name__ == "__main__":
    main()
