"""Fixtures of tfa.rnn's cells run over several time steps by tf.keras.layers.RNN.

For each case: the cell's weights (seeded, in TFA's weight order, with TFA's names), the
inputs, a mask (right padding and a hole), initial states, and TFA's outputs at every step
and final states, once with the mask and once without. Run from the repository root in
the reference environment (README.md):

    python tools/tfa_fixtures/cells.py
"""

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa
from common import BATCH, UNITS, rng, save, seeded_weights, sequence_inputs, versions

CASES = {
    # name: (seed, cell factory)
    "layer_norm_lstm": (1, lambda: tfa.rnn.LayerNormLSTMCell(UNITS)),
    "layer_norm_simple_rnn": (2, lambda: tfa.rnn.LayerNormSimpleRNNCell(UNITS)),
    "peephole_lstm": (3, lambda: tfa.rnn.PeepholeLSTMCell(UNITS)),
    "nas": (4, lambda: tfa.rnn.NASCell(UNITS)),
    "nas_projection_bias": (5, lambda: tfa.rnn.NASCell(UNITS, projection=3, use_bias=True)),
    "esn": (6, lambda: tfa.rnn.ESNCell(UNITS, leaky=0.7, connectivity=0.5)),
}


def run_case(name, seed, factory):
    generator = rng(seed)
    cell = factory()
    layer = tf.keras.layers.RNN(cell, return_sequences=True, return_state=True)
    x, mask = sequence_inputs(generator)
    sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]
    states = [generator.normal(0.0, 0.5, (BATCH, int(s))).astype("float32") for s in sizes]
    initial = [tf.constant(s) for s in states]
    layer(x, initial_state=initial)  # builds the weights
    weights = seeded_weights(layer, generator)
    outputs, *final = layer(x, initial_state=initial)
    masked_outputs, *masked_final = layer(x, initial_state=initial, mask=tf.constant(mask))
    arrays = {
        "weight_names": np.array(list(weights)),
        "x": x,
        "mask": mask,
        "outputs": outputs.numpy(),
        "masked_outputs": masked_outputs.numpy(),
        "config": np.array(repr(cell.get_config())),
        "versions": versions(),
    }
    arrays.update({f"weight_{i}": w for i, w in enumerate(weights.values())})
    arrays.update({f"state_{i}": s for i, s in enumerate(states)})
    arrays.update({f"final_{i}": s.numpy() for i, s in enumerate(final)})
    arrays.update({f"masked_final_{i}": s.numpy() for i, s in enumerate(masked_final)})
    save(name, **arrays)


def esn_scaling():
    """TFA's reservoir initialisation: a (seeded) matrix W0, and W0 masked and scaled.

    The connectivity mask TFA draws is unseeded, so the fixture keeps W0 and the result;
    the test reads the mask off the result's zeros and checks the scaling.
    """
    arrays = {"versions": versions()}
    for use_norm2 in (False, True):
        base = rng(7 + use_norm2).normal(0.0, 1.0, (6, 6)).astype("float32")
        cell = tfa.rnn.ESNCell(
            6,
            connectivity=0.6,
            spectral_radius=0.8,
            use_norm2=use_norm2,
            recurrent_initializer=tf.keras.initializers.Constant(base),
        )
        cell.build((None, 2))
        key = "norm2" if use_norm2 else "eig"
        arrays[f"{key}_base"] = base
        arrays[f"{key}_scaled"] = cell.recurrent_kernel.numpy()
    save("esn_scaling", **arrays)


if __name__ == "__main__":
    for name, (seed, factory) in CASES.items():
        run_case(name, seed, factory)
    esn_scaling()
