"""TensorFlow Addons reference outputs for kerasrnn's attention: writes
tests/fixtures/tfa/attention_*.npz.

Runs only in the reference environment (tensorflow-cpu 2.15.1, tensorflow-addons 0.23.0,
numpy<2); the test suite reads the fixtures (tests/attention/test_tfa_parity.py) and never
needs TensorFlow Addons. Self-contained (shares nothing with the other fixture scripts):

    python -m venv /tmp/venv-tfa
    /tmp/venv-tfa/bin/pip install tensorflow-cpu==2.15.1 tensorflow-addons==0.23.0 "numpy<2"
    /tmp/venv-tfa/bin/python tools/tfa_fixtures/attention.py

Each fixture holds the inputs (`memory`, `mask`, `queries` or `inputs`), every weight
under a role name (`mech0/query_kernel`, `cell/kernel`, `layer0/kernel`, ...), the
options that built the TFA objects (`opt/...`), and TFA's outputs. Weights are drawn
from fixed seeds, so a rerun writes the same numbers.
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_addons as tfa  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tfa"
B, TK, DM, DQ, UNITS, STEPS, DIN = 3, 7, 6, 5, 5, 4, 4
LENGTHS = np.array([TK, TK - 2, TK - 3], "int32")  # padded memories: 2 of 3 rows


def _memory(seed):
    rng = np.random.default_rng(seed)
    memory = rng.normal(size=(B, TK, DM)).astype("float32")
    mask = np.arange(TK)[None, :] < LENGTHS[:, None]
    return rng, memory, mask


def _seed_mechanism(mechanism, rng, prefix):
    """Draws every weight of a built mechanism; returns {prefix/role: value}.

    The score bias of the monotonic mechanisms stays at `score_bias_init`.
    """
    variables = {
        "memory_kernel": getattr(mechanism.memory_layer, "kernel", None),
        "query_kernel": getattr(mechanism.query_layer, "kernel", None),
    }
    # LuongAttention's scale is `scale_weight`, LuongMonotonicAttention's `attention_g`
    roles = ("attention_v", "attention_g", "attention_b", "scale_weight", "attention_score_bias")
    for role in roles:
        variables[role] = getattr(mechanism, role, None)
    weights = {}
    for role, variable in variables.items():
        if variable is None:
            continue
        if role != "attention_score_bias":
            variable.assign(rng.normal(0.0, 0.7, variable.shape).astype("float32"))
        weights[f"{prefix}/{role}"] = variable.numpy()
    return weights


def _seed_layer(layer, rng, prefix):
    weights = {}
    for variable in layer.weights:
        name = variable.name.split(":")[0].split("/")[-1]
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
        weights[f"{prefix}/{name}"] = variable.numpy()
    return weights


def _save(name, **arrays):
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"attention_{name}.npz"
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    print(f"wrote {path.relative_to(FIXTURES.parents[2])}")


# ---- mechanisms alone: alignments of STEPS queries, state carried ---------------------
MECHANISMS = {
    "bahdanau": lambda o: tfa.seq2seq.BahdanauAttention(UNITS, normalize=False),
    "bahdanau_normalized": lambda o: tfa.seq2seq.BahdanauAttention(UNITS, normalize=True),
    "bahdanau_hardmax": lambda o: tfa.seq2seq.BahdanauAttention(UNITS, probability_fn="hardmax"),
    "luong": lambda o: tfa.seq2seq.LuongAttention(DQ, scale=False),
    "luong_scaled": lambda o: tfa.seq2seq.LuongAttention(DQ, scale=True),
}
# score bias: -0.5 / 0.5 in the soft modes; 0 in "hard", where these seeds then make
# the alignments move along the memory (and one Luong row stop nowhere: all zeros)
for mode in ("parallel", "recursive", "hard"):
    MECHANISMS[f"bahdanau_monotonic_{mode}"] = lambda o, mode=mode: (
        tfa.seq2seq.BahdanauMonotonicAttention(
            UNITS,
            normalize=True,
            sigmoid_noise=0.0,
            mode=mode,
            score_bias_init=0.0 if mode == "hard" else -0.5,
        )
    )
    MECHANISMS[f"luong_monotonic_{mode}"] = lambda o, mode=mode: (
        tfa.seq2seq.LuongMonotonicAttention(
            DQ,
            scale=True,
            sigmoid_noise=0.0,
            mode=mode,
            score_bias_init=0.0 if mode == "hard" else 0.5,
        )
    )


def mechanism_fixture(name, seed):
    rng, memory, mask = _memory(seed)
    queries = rng.normal(size=(STEPS, B, DQ)).astype("float32")
    mechanism = MECHANISMS[name](None)
    mechanism.setup_memory(memory, memory_sequence_length=LENGTHS)
    state = mechanism.initial_state(B, tf.float32)
    mechanism([queries[0], state])  # builds the query side
    weights = _seed_mechanism(mechanism, rng, "mech0")
    mechanism.setup_memory(memory, memory_sequence_length=LENGTHS)  # keys with new weights
    alignments, contexts = [], []
    for query in queries:
        alignment, state = mechanism([query, state])
        alignments.append(alignment.numpy())
        contexts.append(np.einsum("bk,bkd->bd", alignment.numpy(), memory))
    _save(
        name,
        memory=memory,
        mask=mask,
        queries=queries,
        initial_state=mechanism.initial_state(B, tf.float32).numpy(),
        alignments=np.stack(alignments),
        contexts=np.stack(contexts),
        **weights,
    )


# ---- AttentionWrapper driven by an LSTM / GRU cell over STEPS steps ---------------------
def _bahdanau(memory):
    return tfa.seq2seq.BahdanauAttention(UNITS, memory, memory_sequence_length=LENGTHS)


def _luong(memory, scale=False):
    return tfa.seq2seq.LuongAttention(UNITS, memory, memory_sequence_length=LENGTHS, scale=scale)


def _monotonic(memory):
    return tfa.seq2seq.BahdanauMonotonicAttention(
        UNITS,
        memory,
        memory_sequence_length=LENGTHS,
        score_bias_init=-0.5,
        mode="parallel",
    )


WRAPPERS = {
    # name: (cell, mechanisms(memories), wrapper options)
    "wrapper_lstm_layer_size": (
        "lstm",
        lambda m: _bahdanau(m[0]),
        dict(attention_layer_size=6, alignment_history=True),
    ),
    "wrapper_gru_raw_context": ("gru", lambda m: _luong(m[0]), dict(attention_layer_size=None)),
    "wrapper_lstm_cell_output": (
        "lstm",
        lambda m: _luong(m[0], scale=True),
        dict(attention_layer_size=UNITS, output_attention=False),
    ),
    "wrapper_gru_attention_layer": (
        "gru",
        lambda m: _bahdanau(m[0]),
        dict(attention_layer="dense_tanh"),
    ),
    "wrapper_lstm_multi": (
        "lstm",
        lambda m: [_bahdanau(m[0]), _luong(m[1])],
        dict(attention_layer_size=[4, 3], alignment_history=True),
    ),
    "wrapper_gru_monotonic": (
        "gru",
        lambda m: _monotonic(m[0]),
        dict(attention_layer_size=UNITS, alignment_history=True),
    ),
}


def wrapper_fixture(name, seed):
    kind, make_mechanisms, options = WRAPPERS[name]
    rng, memory, mask = _memory(seed)
    memories = [memory, rng.normal(size=(B, TK - 1, DM + 2)).astype("float32")]
    inputs = rng.normal(size=(B, STEPS, DIN)).astype("float32")
    mechanisms = make_mechanisms(memories)
    multi = isinstance(mechanisms, list)
    options = dict(options)
    if options.get("attention_layer") == "dense_tanh":
        options["attention_layer"] = tf.keras.layers.Dense(5, activation="tanh")
    cell = (tf.keras.layers.LSTMCell if kind == "lstm" else tf.keras.layers.GRUCell)(UNITS)
    wrapper = tfa.seq2seq.AttentionWrapper(cell, mechanisms, **options)
    state = wrapper.get_initial_state(batch_size=B, dtype=tf.float32)
    wrapper(inputs[:, 0], state)  # builds everything
    mechanisms = mechanisms if multi else [mechanisms]
    weights = _seed_layer(cell, rng, "cell")
    for index, mechanism in enumerate(mechanisms):
        weights.update(_seed_mechanism(mechanism, rng, f"mech{index}"))
        mechanism.setup_memory(memories[index], memory_sequence_length=LENGTHS)
    for index, layer in enumerate(wrapper._attention_layers or []):
        weights.update(_seed_layer(layer, rng, f"layer{index}"))
    state = wrapper.get_initial_state(batch_size=B, dtype=tf.float32)
    outputs = []
    for t in range(STEPS):
        output, state = wrapper(inputs[:, t], state)
        outputs.append(output.numpy())
    extra = {}
    if options.get("alignment_history"):
        histories = state.alignment_history if multi else [state.alignment_history]
        for index, history in enumerate(histories):
            extra[f"alignment_history{index}"] = history.stack().numpy()  # [T, B, Tk]
    mask2 = np.arange(TK - 1)[None, :] < LENGTHS[:, None]
    _save(
        name,
        inputs=inputs,
        memory0=memories[0],
        memory1=memories[1],
        mask0=mask,
        mask1=mask2,
        outputs=np.stack(outputs, axis=1),  # [B, T, width]
        final_cell_state=np.concatenate(
            [s.numpy() for s in tf.nest.flatten(state.cell_state)], axis=-1
        ),
        final_attention=state.attention.numpy(),
        **weights,
        **extra,
    )


def main():
    tf.random.set_seed(0)
    # the builds' unused alignment-history TensorArrays only make TF log noise
    tf.get_logger().setLevel("CRITICAL")
    for seed, name in enumerate(MECHANISMS):
        mechanism_fixture(name, seed)
    for seed, name in enumerate(WRAPPERS, start=100):
        wrapper_fixture(name, seed)


if __name__ == "__main__":
    main()
