"""Inference on a JAX GPU: kerasrnn.RNN(LSTMCell)'s `predict_on_batch` through the
written-out loop (the fast path on JAX) against the same layer held to Keras' fused
kernel (cuDNN), with `torch.nn.LSTM`'s forward under `no_grad` as the reference, in one
process, interleaved (7 rounds x 5 calls after 3 warm-up; median ms, ratio median and
min-max). Prints the largest difference between the two Keras paths' outputs first.

    PYTHONPATH=<keras wheels>:. python3 bench/gpu_lstm_predict.py   # bench/README.md
"""

import os
import statistics
import sys
import time

os.environ["KERAS_BACKEND"] = "jax"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from gpu import fused_lstm  # noqa: E402  (bench/)

import kerasrnn  # noqa: E402

SIZES = [(64, 100, 256), (256, 200, 1024)]  # batch, time, units (inputs = units / 2)


def build(batch, steps, units, fused):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((steps, units // 2), batch_size=batch)
    if fused:
        layer = fused_lstm(units, return_sequences=True)
    else:
        layer = kerasrnn.RNN(kerasrnn.LSTMCell(units), return_sequences=True)
    return keras.Model(inputs, keras.layers.Dense(10)(layer(inputs)))


def main():
    for batch, steps, units in SIZES:
        x = np.random.default_rng(0).normal(size=(batch, steps, units // 2)).astype("float32")
        written_out, fused = build(batch, steps, units, False), build(batch, steps, units, True)
        fused.set_weights(written_out.get_weights())
        gap = np.abs(written_out.predict_on_batch(x) - fused.predict_on_batch(x)).max()
        print(f"max |written_out - fused| {float(gap):.2g}", flush=True)
        lstm = torch.nn.LSTM(units // 2, units, batch_first=True).cuda()
        head = torch.nn.Linear(units, 10).cuda()
        tx = torch.from_numpy(x).cuda()

        def torch_forward():
            with torch.no_grad():
                out, _ = lstm(tx)
                head(out).cpu()

        contenders = {
            "written_out": lambda: written_out.predict_on_batch(x),
            "fused": lambda: fused.predict_on_batch(x),
            "torch": torch_forward,
        }
        for run in contenders.values():
            for _ in range(3):
                run()
        names = list(contenders)
        rounds = {name: [] for name in names}
        for r in range(7):
            for name in names[r % 3 :] + names[: r % 3]:
                times = []
                for _ in range(5):
                    start = time.perf_counter()
                    contenders[name]()
                    times.append(time.perf_counter() - start)
                rounds[name].append(statistics.median(times) * 1000)
        for name in names:
            ratios = [a / b for a, b in zip(rounds[name], rounds["torch"])]
            ms, ratio = statistics.median(rounds[name]), statistics.median(ratios)
            print(
                f"{batch}x{steps}x{units} predict {name:12s} {ms:8.2f} ms  vs torch {ratio:.2f}"
                f" ({min(ratios):.2f}-{max(ratios):.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
