"""Attention benchmarks: training speed against a Keras-only decoder, and a learning task.

    python -m bench attention speed      # AttentionCell vs Keras-only, one run
    python -m bench attention learning   # reverse digit strings, with/without

speed: one training step of a Bahdanau decoder (GRU + additive attention inside the
recurrence, built from `kerasrnn.AttentionCell`) against the fastest equivalent a user can
assemble from Keras alone (`keras.layers.GRU` over the targets, then
`keras.layers.AdditiveAttention` over its outputs: Luong-style, attention outside the
recurrence). Encoder outputs are given (128 steps), decoder 30 steps, 256 units, batch 64,
both with a 1000-way softmax readout. Prints the median step times and their ratio.

learning: encoder-decoder reversing digit strings of length 5-15 (Bahdanau decoder, 64
units, 4000 strings, 6 epochs); exact match on 1000 held-out strings with and without
attention (the tests run a smaller version: 3-8 digits, 32 units, 2000 strings, 8 epochs).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kerasrnn  # noqa: E402
from bench import suite, timing  # noqa: E402

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
):
    rng = np.random.default_rng(0)
    inputs = [
        rng.normal(size=(batch, source_length, units)).astype("float32"),
        rng.normal(size=(batch, target_length, units)).astype("float32"),
        rng.normal(size=(batch, units)).astype("float32"),
    ]
    labels = rng.integers(0, vocab, (batch, target_length))
    times = {}
    for name, model in _speed_models(units, source_length, target_length, vocab).items():
        model.compile(
            "adam",
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit_compile,
        )
        step = lambda model=model: model.train_on_batch(inputs, labels)  # noqa: E731
        timing.warm_up(step, 3)  # compile and warm up
        times[name] = timing.interleaved_rounds([(name, step)], 1, steps)[name][0]
        print(f"{name}: {1000 * times[name]:.1f} ms / training step", flush=True)
    ours, theirs = times.values()
    print(
        f"backend {keras.backend.backend()}, jit_compile={jit_compile}: ratio "
        f"AttentionCell / Keras-only = {ours / theirs:.2f} (target <= 1.2)"
    )
    return ours / theirs


def main(argv=None):
    parser = suite.parser("attention", __doc__)
    parser.add_argument("what", choices=["speed", "learning", "all"], nargs="?", default="all")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--jit", choices=["auto", "true", "false"], default="auto")
    args = parser.parse_args(argv)
    figures = {}
    if args.what in ("speed", "all"):
        jit = {"auto": "auto", "true": True, "false": False}[args.jit]
        ratio = speed(steps=args.steps, jit_compile=jit)
        figures["speed"] = suite.figure(
            ratio, "AttentionCell decoder's training step / the Keras-only decoder's", unit="x"
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
