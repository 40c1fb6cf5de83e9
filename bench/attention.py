"""Attention benchmarks: training speed against a Keras-only decoder, a learning task, and
the attentive decoder's training memory.

    python -m bench attention speed      # AttentionCell vs Keras-only, interleaved
    python -m bench attention learning   # reverse digit strings, with/without
    python -m bench attention memory --sizes 32x50x128,64x100x256

speed: one training step of a Bahdanau decoder (GRU + additive attention inside the
recurrence, built from `kerasrnn.AttentionCell`) against the fastest equivalent a user can
assemble from Keras alone (`keras.layers.GRU` over the targets, then
`keras.layers.AdditiveAttention` over its outputs: Luong-style, attention outside the
recurrence). Encoder outputs are given (128 steps), decoder 30 steps, 256 units, batch 64,
both with a 1000-way softmax readout, timed in the same interleaved rounds. Prints the
median step times and their ratio with its min-max over rounds.

memory: an attentive decoder (Bahdanau attention around an LSTM cell, teacher forcing over
a memory as long as the targets; BATCHxSTEPSxUNITS) trained with the additive score's
backward pass recomputing tanh(W_a q + U_a k_j) (the default) against the same score
storing it, as automatic differentiation does. Per size and variant, in a fresh process:
the peak memory a training step adds (TensorFlow: the CPU allocator's peak over the step,
`TF_CPU_ALLOCATOR_USE_BFC`; JAX: XLA's planned temporaries of the compiled step, and on a
GPU the device's peak bytes); then both variants' training steps timed interleaved in one
process, with the ratio's spread.

learning: encoder-decoder reversing digit strings of length 5-15 (Bahdanau decoder, 64
units, 4000 strings, 6 epochs); exact match on 1000 held-out strings with and without
attention (the tests run a smaller version: 3-8 digits, 32 units, 2000 strings, 8 epochs).
"""

import json
import os
import statistics
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

import kerasrnn  # noqa: E402
from bench import suite, timing  # noqa: E402
from kerasrnn.attention import scores  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PAD, START = 0, 1  # digits are the ids 2 ... 11
VOCAB = 12


# ---- the reversal task (shared with tests/cells/test_attentive.py) ----------------------
def reversal_data(count, rng, min_length=5, max_length=15):
    """(source, decoder input, target, lengths): target = reversed source, padded with 0."""
    lengths = rng.integers(min_length, max_length + 1, count)
    source = np.zeros((count, max_length), "int32")
    decoder_input = np.zeros_like(source)
    target = np.zeros_like(source)
    for row, length in enumerate(lengths):
        digits = rng.integers(2, VOCAB, length)
        source[row, :length] = digits
        target[row, :length] = digits[::-1]
        decoder_input[row, 0] = START
        decoder_input[row, 1:length] = digits[::-1][:-1]
    return source, decoder_input, target, lengths


def build_reverser(attention, units=32, embedding=16, learning_rate=0.01):
    """Bidirectional GRU encoder; GRU decoder with attention or without any.

    `attention`: "additive" (a Bahdanau decoder), another score name (a Luong decoder
    with that score), or None.
    """
    source = keras.Input((None,), dtype="int32")
    decoder_input = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, embedding, mask_zero=True)(source)
    memory, *states = keras.layers.Bidirectional(
        keras.layers.RNN(kerasrnn.GRUCell(units // 2), return_sequences=True, return_state=True)
    )(x)
    state = kerasrnn.merge_bidirectional_states(states)
    y = keras.layers.Embedding(VOCAB, embedding, mask_zero=True)(decoder_input)
    if attention:
        additive = attention == "additive"
        order = kerasrnn.AttendThenRun() if additive else kerasrnn.RunThenAttend()
        options = {"units": units} if additive else {}
        layer = kerasrnn.Attention(attention, **options)
        cell = kerasrnn.AttentionCell(kerasrnn.GRUCell(units), layer, order)
        outputs = kerasrnn.AttentiveRNN(cell)(y, memory, initial_state=state)
    else:
        outputs = keras.layers.RNN(kerasrnn.GRUCell(units), return_sequences=True)(
            y, initial_state=state
        )
    model = keras.Model([source, decoder_input], keras.layers.Dense(VOCAB)(outputs))
    model.compile(
        keras.optimizers.Adam(learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def exact_match(model, data):
    """Share of held-out strings reversed without a single wrong digit.

    Scored on the teacher-forced pass: when every next-digit argmax is right given the
    right prefix, greedy decoding follows that same prefix, so the two exact-match rates
    are the same (the output length is the input length).
    """
    source, decoder_input, target, lengths = data
    predicted = model.predict([source, decoder_input], verbose=0).argmax(-1)
    return float(
        np.mean([np.array_equal(predicted[i, :n], target[i, :n]) for i, n in enumerate(lengths)])
    )


def learning(
    score="additive",
    train=4000,
    epochs=6,
    units=64,
    min_length=5,
    max_length=15,
    batch_size=64,
    seed=0,
):
    rng = np.random.default_rng(seed)
    train_data = reversal_data(train, rng, min_length, max_length)
    test_data = reversal_data(1000, rng, min_length, max_length)
    results = {}
    for attention in (score, None):
        keras.utils.set_random_seed(seed)
        model = build_reverser(attention, units=units)
        _, seconds = timing.timed(
            lambda model=model: model.fit(
                [train_data[0], train_data[1]],
                train_data[2],
                batch_size=batch_size,
                epochs=epochs,
                verbose=0,
            )
        )
        results[attention] = exact_match(model, test_data)
        print(
            f"reverse digits {min_length}-{max_length}: exact match "
            f"{'with ' + attention if attention else 'without'} attention "
            f"{results[attention]:.3f} ({seconds:.0f} s)",
            flush=True,
        )
    return results


# ---- speed --------------------------------------------------------------------------
def _speed_models(units, source_length, target_length, vocab):
    memory = keras.Input((source_length, units), name="memory")
    targets = keras.Input((target_length, units), name="targets")
    state = keras.Input((units,), name="state")

    cell = kerasrnn.AttentionCell(
        kerasrnn.GRUCell(units), kerasrnn.BahdanauAttention(units), kerasrnn.AttendThenRun()
    )
    outputs = kerasrnn.AttentiveRNN(cell)(targets, memory, initial_state=[state])
    ours = keras.Model([memory, targets, state], keras.layers.Dense(vocab)(outputs))

    decoded = keras.layers.GRU(units, return_sequences=True)(targets, initial_state=state)
    query = keras.layers.Dense(units, use_bias=False)(decoded)
    keys = keras.layers.Dense(units, use_bias=False)(memory)
    context = keras.layers.AdditiveAttention()([query, memory, keys])
    joined = keras.layers.Concatenate()([decoded, context])
    keras_only = keras.Model([memory, targets, state], keras.layers.Dense(vocab)(joined))
    return {"kerasrnn AttentionCell (Bahdanau)": ours, "Keras GRU + AdditiveAttention": keras_only}


def speed(
    units=256,
    source_length=128,
    target_length=30,
    batch=64,
    vocab=1000,
    steps=20,
    jit_compile="auto",
    rounds=5,
):
    """The `AttentionCell` decoder's training step over the Keras-only decoder's: both
    timed in the same `rounds` interleaved rounds of `steps` steps; returns the per-round
    ratios' `timing.summary`."""
    rng = np.random.default_rng(0)
    inputs = [
        rng.normal(size=(batch, source_length, units)).astype("float32"),
        rng.normal(size=(batch, target_length, units)).astype("float32"),
        rng.normal(size=(batch, units)).astype("float32"),
    ]
    labels = rng.integers(0, vocab, (batch, target_length))
    contenders = []
    for name, model in _speed_models(units, source_length, target_length, vocab).items():
        model.compile(
            "adam",
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit_compile,
        )
        step = lambda model=model: model.train_on_batch(inputs, labels)  # noqa: E731
        timing.warm_up(step, 3)  # compile and warm up
        contenders.append((name, step))
    times = timing.interleaved_rounds(contenders, rounds, steps)
    for name, per_round in times.items():
        print(f"{name}: {1000 * statistics.median(per_round):.1f} ms / training step", flush=True)
    ours, theirs = times.values()
    ratio = timing.summary(timing.ratios(ours, theirs))
    print(
        f"backend {keras.backend.backend()}, jit_compile={jit_compile}: ratio "
        f"AttentionCell / Keras-only = {ratio['median']:.2f} "
        f"(min-max {ratio['min']:.2f}-{ratio['max']:.2f} over {rounds} rounds)"
    )
    return ratio


# ---- memory -------------------------------------------------------------------------
class StoringAdditiveScore(scores.AdditiveScore):
    """The additive score differentiated automatically (its tanh block kept for the
    backward pass at every step): the reference the recomputing score is measured against."""

    def call(self, query, prepared, coverage=None, training=None):
        hidden = ops.matmul(query, self.query_kernel)[:, :, None, :] + prepared[:, None, :, :]
        return ops.squeeze(ops.matmul(ops.tanh(hidden), self.attention_v), -1)


def _decoder(batch, steps, units, variant):
    """Targets `[batch, steps, units / 2]` and memory `[batch, steps, units]` -> 10 classes."""
    targets = keras.Input((steps, units // 2), batch_size=batch)
    memory = keras.Input((steps, units), batch_size=batch)
    attention = kerasrnn.BahdanauAttention(units)
    if variant == "storing":
        attention.score = StoringAdditiveScore(units)
    cell = kerasrnn.AttentionCell(kerasrnn.LSTMCell(units), attention)
    decoded = kerasrnn.AttentiveRNN(cell, return_sequences=False)(targets, memory)
    model = keras.Model([targets, memory], keras.layers.Dense(10)(decoded))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    inputs = [
        rng.normal(size=(batch, steps, units // 2)).astype("float32"),
        rng.normal(size=(batch, steps, units)).astype("float32"),
    ]
    return model, inputs, rng.integers(0, 10, batch)


def _jax_step_memory(model, inputs, labels):
    """(XLA's temporaries of the compiled loss-and-gradient, device peak bytes or None)."""
    import jax

    def loss(trainable, non_trainable, x, y):
        logits, _ = model.stateless_call(trainable, non_trainable, x, training=True)
        return ops.mean(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))

    step = jax.jit(jax.value_and_grad(loss))
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    compiled = step.lower(trainable, non_trainable, inputs, labels).compile()
    planned = compiled.memory_analysis().temp_size_in_bytes
    device = jax.devices()[0]
    if device.platform == "cpu":
        return planned, None
    before = device.memory_stats()["bytes_in_use"]
    jax.block_until_ready(compiled(trainable, non_trainable, inputs, labels))
    return planned, device.memory_stats()["peak_bytes_in_use"] - before


def memory_probe(size, variant):
    """One size and variant in this (fresh) process: prints `{"added_bytes": ...}` as JSON."""
    batch, steps, units = size
    model, inputs, labels = _decoder(batch, steps, units, variant)
    backend = keras.backend.backend()
    result = {"backend": backend}
    if backend == "jax":
        result["added_bytes"], result["device_peak_bytes"] = _jax_step_memory(model, inputs, labels)
    elif backend == "tensorflow":
        import tensorflow as tf

        model.train_on_batch(inputs, labels)  # trace and compile first
        tf.config.experimental.reset_memory_stats("CPU:0")
        before = tf.config.experimental.get_memory_info("CPU:0")["current"]
        model.train_on_batch(inputs, labels)
        result["added_bytes"] = tf.config.experimental.get_memory_info("CPU:0")["peak"] - before
    else:
        import torch

        model.train_on_batch(inputs, labels)
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        model.train_on_batch(inputs, labels)
        result["added_bytes"] = torch.cuda.max_memory_allocated() - before
    print(json.dumps(result))


def memory(sizes, rounds=5, steps=3):
    """The memory and step time of both variants at each size: prints a table, returns rows."""
    rows = []
    for size in sizes:
        label = "x".join(map(str, size))
        row = {"size": label}
        for variant in ("storing", "recomputing"):
            env = dict(os.environ, TF_CPU_ALLOCATOR_USE_BFC="true")
            out = subprocess.run(
                [sys.executable, "-m", "bench", "attention", "memory-probe", "--sizes", label]
                + ["--variant", variant, "--no-results"],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode:
                row[variant] = {"error": out.stderr.strip().splitlines()[-1:]}
            else:
                row[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        contenders = []
        for variant in ("storing", "recomputing"):
            model, inputs, labels = _decoder(*size, variant)
            call = lambda m=model, x=inputs, y=labels: m.train_on_batch(x, y)  # noqa: E731
            timing.warm_up(call, 2)
            contenders.append((variant, call))
        times = timing.interleaved_rounds(contenders, rounds, steps)
        row["ms"] = {k: 1000 * statistics.median(v) for k, v in times.items()}
        row["ratio"] = timing.summary(timing.ratios(times["recomputing"], times["storing"]))
        rows.append(row)
        mb = {
            v: row[v].get("added_bytes", float("nan")) / 2**20 for v in ("storing", "recomputing")
        }
        print(
            f"{label}: added peak {mb['storing']:.0f} MiB storing, {mb['recomputing']:.0f} MiB "
            f"recomputing ({mb['recomputing'] / mb['storing']:.2f}x); step "
            f"{row['ms']['storing']:.1f} / {row['ms']['recomputing']:.1f} ms, ratio "
            f"{row['ratio']['median']:.2f} ({row['ratio']['min']:.2f}-{row['ratio']['max']:.2f})",
            flush=True,
        )
    return rows


def write_memory(args, rows):
    """bench/results/attention_memory_{cpu,gpu}.json: each size's added peak memory of
    both variants, their ratio and the step-time ratio with its min-max."""
    figures = {}
    for row in rows:
        key = row["size"]
        store, recompute = (row[v].get("added_bytes") for v in ("storing", "recomputing"))
        if store is None or recompute is None:
            continue
        figures[f"memory_{key}"] = suite.figure(
            recompute / store,
            f"{key}: added peak training memory, recomputing / storing "
            f"({recompute / 2**20:.0f} / {store / 2**20:.0f} MiB)",
            unit="x",
        )
        figures[f"step_{key}"] = suite.figure(
            row["ratio"]["median"],
            f"{key}: training step, recomputing / storing",
            unit="x",
            spread={"kind": "min-max", "low": row["ratio"]["min"], "high": row["ratio"]["max"]},
        )
    device = "GPU" if any(r["recomputing"].get("device_peak_bytes") for r in rows) else "CPU"
    name = f"attention_memory_{keras.backend.backend()}_{device.lower()}"
    task = f"Attentive decoder training memory ({keras.backend.backend()}, {device})"
    # the largest size leads; the GPU file is the README's row, the CPU file stays on
    # docs/results.md
    headline = list(figures)[-2] if len(figures) > 1 else None
    suite.write_result(
        args, name, task, figures, headline=headline, details=rows, readme=device == "GPU"
    )


def main(argv=None):
    parser = suite.parser("attention", __doc__)
    parser.add_argument(
        "what",
        choices=["speed", "learning", "memory", "memory-probe", "all"],
        nargs="?",
        default="all",
    )
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--jit", choices=["auto", "true", "false"], default="auto")
    group = parser.add_argument_group("memory")
    group.add_argument("--sizes", default="32x50x128,64x100x256", help="BxTxH,... (memory)")
    group.add_argument("--variant", choices=["storing", "recomputing"], default="recomputing")
    args = parser.parse_args(argv)
    if args.what == "memory-probe":
        return memory_probe(suite.size(args.sizes), args.variant)
    if args.what == "memory":
        return write_memory(
            args, memory([suite.size(s) for s in args.sizes.split(",")], args.rounds)
        )
    figures = {}
    if args.what in ("speed", "all"):
        jit = {"auto": "auto", "true": True, "false": False}[args.jit]
        ratio = speed(steps=args.steps, jit_compile=jit, rounds=args.rounds)
        figures["speed"] = suite.figure(
            ratio["median"],
            "AttentionCell decoder's training step / the Keras-only decoder's, median "
            f"over rounds ({keras.backend.backend()})",
            unit="x",
            spread={"kind": "min-max", "low": ratio["min"], "high": ratio["max"]},
        )
    if args.what in ("learning", "all"):
        exact = learning()
        figures["with_attention"] = suite.figure(
            100 * exact["additive"], "reverse 5-15 digits, exact match with attention", 1, "%"
        )
        figures["without_attention"] = suite.figure(
            100 * exact[None], "the same without attention", 1, "%"
        )
    suite.write_result(args, "attention", "Attention: speed and a learning task", figures)


if __name__ == "__main__":
    main()
