"""A/B: GRUCell.recurrent_step with ops.split (now) vs per-gate slices (4a679ed), interleaved,
against keras.layers.GRU; `PYTHONPATH=. python bench/gru_split_ab.py`."""

import statistics
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import cells
import keras
from keras import ops

import kerasrnn
import timing


class SlicedGRU(kerasrnn.GRUCell):  # the recurrent_step of 4a679ed
    def recurrent_step(self, projected, h_tm1, states):
        u = self.units
        x_z, x_r, x_h = (projected[..., k * u : (k + 1) * u] for k in range(3))
        rec = ops.matmul(h_tm1, self.recurrent_kernel) + self.bias[1]
        z = self.recurrent_activation(x_z + rec[:, :u])
        r = self.recurrent_activation(x_r + rec[:, u : 2 * u])
        cand = self.activation(x_h + r * rec[:, 2 * u :])
        h = z * states[0] + (1.0 - z) * cand
        return h, [h]


steps = {
    "split (new)": cells.keras_step(lambda: keras.layers.RNN(kerasrnn.GRUCell(256))),
    "slices (old)": cells.keras_step(lambda: keras.layers.RNN(SlicedGRU(256))),
    "keras.layers.GRU": cells.keras_step(lambda: keras.layers.GRU(256)),
}
for s in steps.values():
    timing.warm_up(s, 3)
t = timing.interleaved_rounds(list(steps.items()), rounds=6, steps=2)
for k in t:
    ratios = timing.ratios(t[k], t["keras.layers.GRU"])
    print(
        f"{k:<18} {1000 * statistics.median(t[k]):7.1f} ms  vs keras.layers.GRU "
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
    )
