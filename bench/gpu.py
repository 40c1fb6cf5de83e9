"""GPU benchmark of the core on Keras' JAX and torch backends, against PyTorch's cuDNN RNNs.

Run through `bench/gpu.sh` (it installs the carried Keras wheels and runs this once per
backend, then merges). For one backend (`KERAS_BACKEND`) this times, at each size
(batch x time x units, inputs = units / 2) and precision (float32, mixed_bfloat16):

* training steps (`train_on_batch`, Adam, a dense head on the last output) of
  kerasrnn.RNN over LSTMCell / GRUCell (the fast path: Keras' fused kernels, cuDNN on a
  GPU, except the LSTM on JAX, which takes the written-out XLA loop; on JAX a row holds
  the LSTM to Keras' fused kernel for comparison), the peephole LSTM and the
  layer-normalised LSTM (the generic loop, and the peephole cell with the hoisted input
  projection), and an attentive decoder (Bahdanau
  attention around an LSTM cell, teacher forcing over a memory as long as the input);
* beam search (beam 5, 20 tokens) over that decoder's `step` (decoding, not training);
* torch.nn.LSTM / torch.nn.GRU training steps (cuDNN on a GPU) with the same head,
  optimiser and inputs, in the same process: every training row's ratio is to
  torch.nn.LSTM's step at the same size and precision in the same round.

Rounds are interleaved (`bench/timing.py`: every contender in turn, the order rotating);
the table gives the median ms over rounds and the ratio's median and min-max. `finite`
says whether every loss (or beam score) was finite (the bf16 NaN check). A contender
that raises (out of memory, a kernel that declines a dtype) keeps its row, marked
FAILED with the exception, and the others are still measured.

    KERAS_BACKEND=jax python -m bench gpu --json out/jax.json
    python -m bench gpu --merge out/jax.json out/torch.json --json out/gpu.json
    python -m bench gpu --cpu                # tiny sizes, one round: a smoke run
"""

import json
import math
import os
import platform
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench import suite, timing  # noqa: E402

CLASSES, VOCAB, BEAM, DECODE_LENGTH = 10, 64, 5, 20
SIZES = "64x100x256,256x200x1024"
CPU_SIZES = "4x6x8"
PRECISIONS = ("float32", "mixed_bfloat16")


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        try:
            batch, steps, units = (int(v) for v in item.lower().split("x"))
        except ValueError:
            raise SystemExit(f"--sizes: expected BATCHxTIMExUNITS items, got {item!r}") from None
        sizes.append((batch, steps, units))
    return sizes


# ---- Keras contenders -------------------------------------------------------------------
def keras_contenders():
    import keras

    import kerasrnn

    def recurrent(make_layer):
        def build(batch, steps, units):
            inputs = keras.Input((steps, units // 2), batch_size=batch)
            outputs = keras.layers.Dense(CLASSES)(make_layer(units)(inputs))
            return keras.Model(inputs, outputs)

        return build

    jax = keras.backend.backend() == "jax"

    def attentive(batch, steps, units):
        targets = keras.Input((steps, units // 2), batch_size=batch)
        memory = keras.Input((steps, units), batch_size=batch)
        cell = kerasrnn.AttentionCell(kerasrnn.LSTMCell(units), kerasrnn.BahdanauAttention(units))
        decoded = kerasrnn.AttentiveRNN(cell, return_sequences=False)(targets, memory)
        return keras.Model([targets, memory], keras.layers.Dense(CLASSES)(decoded))

    return [
        ("kerasrnn LSTMCell, fast path", recurrent(lambda u: kerasrnn.RNN(kerasrnn.LSTMCell(u)))),
        ("kerasrnn GRUCell, fast path", recurrent(lambda u: kerasrnn.RNN(kerasrnn.GRUCell(u)))),
        (
            "kerasrnn LSTMCell peephole, generic loop",
            recurrent(lambda u: kerasrnn.RNN(kerasrnn.LSTMCell(u, peephole=True))),
        ),
        (
            "kerasrnn LSTMCell peephole, hoisted projection",
            recurrent(
                lambda u: kerasrnn.RNN(kerasrnn.LSTMCell(u, peephole=True), hoist_projection=True)
            ),
        ),
        (
            "kerasrnn LayerNormLSTMCell, generic loop",
            recurrent(lambda u: kerasrnn.RNN(kerasrnn.LayerNormLSTMCell(u))),
        ),
        ("kerasrnn AttentiveRNN (Bahdanau, LSTM)", attentive),
    ] + ([("kerasrnn LSTMCell, Keras' fused kernel", recurrent(fused_lstm))] if jax else [])


def fused_lstm(units, **options):
    """kerasrnn.RNN(LSTMCell, **options) held to Keras' fused kernel (cuDNN on a GPU),
    which its fast path skips on JAX for the written-out loop: the row that shows why."""
    import kerasrnn

    layer = kerasrnn.RNN(kerasrnn.LSTMCell(units), **options)
    conditions = layer.path_conditions
    # bench only: the path it skips
    layer.path_conditions = lambda *args: conditions(*args)._replace(written_out_first=False)
    return layer


def keras_train_step(build, batch, steps, units, rng):
    import keras

    model = build(batch, steps, units)
    model.compile(
        keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x = [rng.normal(size=tuple(i.shape)).astype("float32") for i in model.inputs]
    y = rng.integers(0, CLASSES, batch).astype("int32")

    def step():
        return float(model.train_on_batch(x if len(x) > 1 else x[0], y))

    return step


def beam_step(batch, steps, units, rng):
    """Beam search over an attentive decoder's step, compiled as the backend compiles."""
    import keras
    from keras import ops

    import kerasrnn
    from kerasrnn.decoding import beam_search

    cell = kerasrnn.AttentionCell(kerasrnn.LSTMCell(units), kerasrnn.BahdanauAttention(units))
    decoder = kerasrnn.AttentiveRNN(cell)
    embedding = keras.layers.Embedding(VOCAB, units // 2)
    readout = keras.layers.Dense(VOCAB)
    memory = ops.convert_to_tensor(rng.normal(size=(batch, steps, units)).astype("float32"))
    decoder(ops.zeros((batch, 1, units // 2)), memory)  # builds the weights
    embedding.build((None,))
    readout.build((None, cell.output_size))

    def decode():
        prepared = decoder.prepare_memory(ops.repeat(memory, BEAM, axis=0))

        def step_fn(tokens, states):
            output, states, _ = decoder.step(embedding(tokens), states, prepared)
            return readout(output), states

        return beam_search(
            step_fn,
            ops.ones((batch,), "int32"),
            decoder.initial_state_from(batch_size=batch),
            max_length=DECODE_LENGTH,
            end_token=2,
            beam_size=BEAM,
        ).scores

    if keras.backend.backend() == "jax":
        import jax

        decode = jax.jit(decode)  # traced and compiled once; the weights are constants

    def step():
        return float(ops.convert_to_numpy(ops.sum(decode())))

    return step


# ---- PyTorch reference ------------------------------------------------------------------
def torch_train_step(kind, batch, steps, units, precision, rng):
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
            self.rnn = rnn(units // 2, units, batch_first=True)
            self.head = torch.nn.Linear(units, CLASSES)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    net = Net().to(device)
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.from_numpy(rng.normal(size=(batch, steps, units // 2)).astype("float32"))
    y = torch.from_numpy(rng.integers(0, CLASSES, batch)).long()
    x, y = x.to(device), y.to(device)
    bf16 = precision == "mixed_bfloat16"

    def step():
        optimizer.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(net(x), y)
        loss.backward()
        optimizer.step()
        return float(loss.detach())  # waits for the device

    return step


# ---- measuring --------------------------------------------------------------------------
def failure(error):
    """One line naming a contender's exception, for its row in the table."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def measure(backend, sizes, rounds, steps, warmup, only=None, precisions=PRECISIONS, on_block=None):
    """Rows of the table; `on_block(rows)` after each size and precision (partial results).

    A contender that raises (building, compiling or stepping) keeps its row, with `ms`
    None and the exception in `error`, and leaves the others to be measured: one backend
    failing one precision must not cost the rest of a GPU run.
    """
    import keras
    import numpy as np

    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    rows = []
    for batch, length, units in sizes:
        for precision in precisions:
            keras.mixed_precision.set_global_policy(precision)
            rng = np.random.default_rng(0)
            contenders = [
                (label, "train", lambda b=build: keras_train_step(b, batch, length, units, rng))
                for label, build in keras_contenders()
            ]
            contenders.append(
                (
                    f"kerasrnn beam search (beam {BEAM}, {DECODE_LENGTH} tokens)",
                    "decode",
                    lambda: beam_step(batch, length, units, rng),
                )
            )
            if have_torch:
                contenders += [
                    (
                        f"torch.nn.{kind.upper()}",
                        "train",
                        lambda k=kind: torch_train_step(k, batch, length, units, precision, rng),
                    )
                    for kind in ("gru", "lstm")
                ]
            if only:
                contenders = [
                    c for c in contenders if any(w in c[0] for w in only) or c[0] == "torch.nn.LSTM"
                ]
            errors, made = {}, []
            for label, workload, make in contenders:
                try:
                    made.append((label, workload, make()))
                except Exception as error:  # noqa: BLE001 - recorded in the row
                    errors[label] = timing.detached(error)
            finite = {label: True for label, _, _ in made}

            def check(label, loss):
                finite[label] &= math.isfinite(loss)

            for label, _, step in made:
                try:
                    for loss in timing.warm_up(step, warmup)[1]:
                        check(label, loss)
                except Exception as error:  # noqa: BLE001 - recorded in the row
                    errors[label] = timing.detached(error)
            seconds = timing.interleaved_rounds(
                [(label, step) for label, _, step in made if label not in errors],
                rounds,
                steps,
                after_call=check,
                errors=errors,
            )
            times = {label: [1000 * s for s in v] for label, v in seconds.items()}
            reference = None if "torch.nn.LSTM" in errors else times.get("torch.nn.LSTM")
            for label, workload, _ in contenders:
                row = {
                    "backend": backend,
                    "batch": batch,
                    "time": length,
                    "units": units,
                    "precision": precision,
                    "contender": label,
                    "workload": workload,
                }
                if label in errors:
                    rows.append(
                        {
                            **row,
                            "ms": None,
                            "ratio": None,
                            "ratio_min": None,
                            "ratio_max": None,
                            "finite": None,
                            "round_ms": [],
                            "error": failure(errors[label]),
                        }
                    )
                    continue
                ms = times[label]
                ratios = timing.ratios(ms, reference) if reference and workload == "train" else None
                rows.append(
                    {
                        **row,
                        "ms": round(statistics.median(ms), 3),
                        "ratio": round(statistics.median(ratios), 3) if ratios else None,
                        "ratio_min": round(min(ratios), 3) if ratios else None,
                        "ratio_max": round(max(ratios), 3) if ratios else None,
                        "finite": bool(finite[label]),
                        "round_ms": [round(v, 3) for v in ms],
                    }
                )
            keras.mixed_precision.set_global_policy("float32")
            if on_block is not None:
                on_block(rows)
    return rows


def device_name(backend):
    try:
        if backend == "torch":
            import torch

            if torch.cuda.is_available():
                return torch.cuda.get_device_name(0)
        if backend == "jax":
            import jax

            device = jax.devices()[0]
            if device.platform != "cpu":
                return device.device_kind
    except Exception:  # a device query failing must not lose the measurements
        pass
    return f"CPU ({platform.machine()}, {os.cpu_count()} cores)"


COLUMNS = ("backend", "size", "precision", "contender", "ms", "ratio", "min-max", "finite")


def format_table(rows):
    lines = [
        f"{'backend':<7} {'B x T x H':<13} {'precision':<14} {'contender':<50} "
        f"{'ms':>9} {'ratio':>6} {'min-max':>12} finite"
    ]
    for row in rows:
        size = f"{row['batch']}x{row['time']}x{row['units']}"
        if row.get("error"):
            lines.append(
                f"{row['backend']:<7} {size:<13} {row['precision']:<14} "
                f"{row['contender']:<50} FAILED {row['error'][:120]}"
            )
            continue
        ratio = f"{row['ratio']:6.2f}" if row["ratio"] is not None else f"{'-':>6}"
        spread = (
            f"{row['ratio_min']:.2f}-{row['ratio_max']:.2f}" if row["ratio"] is not None else "-"
        )
        lines.append(
            f"{row['backend']:<7} {size:<13} {row['precision']:<14} "
            f"{row['contender']:<50} {row['ms']:9.2f} {ratio} {spread:>12} "
            f"{'yes' if row['finite'] else 'NO'}"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = suite.parser("gpu", __doc__)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help=f"smoke run: sizes {CPU_SIZES}, 1 round of 1 step, 1 warm-up",
    )
    parser.add_argument("--sizes", help=f"BATCHxTIMExUNITS,... (default {SIZES})")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5)")
    parser.add_argument("--steps", type=int, help="timed steps per round (default 3)")
    parser.add_argument("--warmup", type=int, help="untimed steps first (default 3)")
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=PRECISIONS,
        default=PRECISIONS,
        help="dtype policies to measure (default both)",
    )
    parser.add_argument("--only", nargs="*", help="contenders whose label contains a word")
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="print and write one table from earlier --json files",
    )
    parser.add_argument("--json", help="write the rows and conditions to this file")
    args = parser.parse_args(argv)
    if args.merge:
        runs = []
        for path in args.merge:
            with open(path) as f:
                runs.append(json.load(f))
        result = {
            "runs": [r for run in runs for r in run["runs"]],
            "rows": [row for run in runs for row in run["rows"]],
        }
    else:
        import keras

        backend = keras.backend.backend()
        default = (CPU_SIZES, 1, 1, 1) if args.cpu else (SIZES, 5, 3, 3)
        sizes = parse_sizes(args.sizes or default[0])
        rounds, steps, warmup = (
            v if v is not None else d
            for v, d in zip((args.rounds, args.steps, args.warmup), default[1:])
        )
        print(
            f"# {backend} on {device_name(backend)}, keras {keras.__version__}; "
            f"{rounds} rounds x {steps} steps after {warmup} warm-up",
            file=sys.stderr,
        )
        run = {
            "backend": backend,
            "device": device_name(backend),
            "keras": keras.__version__,
            "rounds": rounds,
            "steps": steps,
            "warmup": warmup,
        }

        def write(rows):  # after every block too, so a run cut short keeps its rows
            print(f"# {backend}: {len(rows)} rows measured", file=sys.stderr)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"runs": [run], "rows": rows}, f, indent=1)

        rows = measure(
            backend, sizes, rounds, steps, warmup, args.only, tuple(args.precisions), on_block=write
        )
        result = {"runs": [run], "rows": rows}
    for run in result["runs"]:
        print(
            f"# {run['backend']} on {run['device']}, keras {run['keras']}; "
            f"{run['rounds']} rounds x {run['steps']} steps after {run['warmup']} warm-up"
        )
    print(format_table(result["rows"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    figures = headline(result["rows"])
    if figures:
        device = ", ".join(dict.fromkeys(run["device"] for run in result["runs"]))
        suite.write_result(
            args,
            "gpu",
            "LSTM training step on a GPU against PyTorch's cuDNN nn.LSTM",
            figures,
            machine=suite.machine(device),
            details=result,
        )
    return result


def headline(rows):
    """The results file's figures: the LSTM fast path's ratio to `torch.nn.LSTM` per
    backend, size and precision."""
    figures = {}
    for row in rows:
        if row["contender"] == "kerasrnn LSTMCell, fast path" and row.get("ratio"):
            size = f"{row['batch']}x{row['time']}x{row['units']}"
            key = f"{row['backend']}_lstm_{size}_{row['precision']}"
            figures[key] = suite.figure(
                row["ratio"],
                f"LSTM fast path / torch.nn.LSTM, Keras' {row['backend']} backend, "
                f"{size}, {row['precision']}",
                unit="x",
                spread={"kind": "min-max", "low": row["ratio_min"], "high": row["ratio_max"]},
            )
    return figures


if __name__ == "__main__":
    main()
