"""Where the translator's beam search spends its time on a TensorFlow CPU.

`tf.profiler` over one `Translator.translate` of the first `--sentences` test sentences
(Multi30k test_2016_flickr, batches of 64, traced beforehand), the ops' self time summed
by op type and by op, over TensorFlow's compute threads (so "IDLE" is a thread waiting,
and a matmul split over two threads counts twice). Then it times the one-token write
into a `(batch, 10, 60)` buffer, `ops.slice_update` against `write_step`'s select, in a
`tf.function` of unknown batch size called with 20 different batch sizes: the former
runs as XlaDynamicUpdateSlice, which TensorFlow compiles for every new shape.

    PYTHONPATH=. python bench/decoding_profile.py runs/bench-translator-small-cased
"""

import argparse
import collections
import glob
import json
import os
import tempfile

import trained_translator  # bench/: the run, its test set and model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    trained_translator.add_arguments(parser)
    parser.add_argument("--sentences", type=int, default=320)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()

    import tensorflow as tf

    # The profiler's own converter (the one TensorBoard's profile plugin calls).
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

    sources = trained_translator.test_sources(args.data)
    sources = sources[: args.sentences]
    model = trained_translator.load(args.run_dir)
    model.translate(sources, args.beam_size)  # every batch size traced and run once
    logdir = tempfile.mkdtemp(prefix="decoding_profile_")
    tf.profiler.experimental.start(logdir)
    model.translate(sources, args.beam_size)
    tf.profiler.experimental.stop()
    path = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0]
    data, _ = _pywrap_profiler_plugin.xspace_to_tools_data([path], "framework_op_stats", {})
    table = json.loads(data)[0]
    columns = [c["id"] for c in table["cols"]]
    by_type = collections.defaultdict(float)
    by_op = collections.defaultdict(float)
    for row in table["rows"]:
        cells = dict(zip(columns, [c["v"] if c else None for c in row["c"]]))
        by_type[cells["type"]] += cells["total_self_time"] or 0.0
        by_op[cells["type"], cells["operation"]] += cells["total_self_time"] or 0.0
    total = sum(by_type.values())
    print(
        f"{args.sentences} sentences, beam {args.beam_size}: self time summed over the "
        f"compute threads {total / 1e6:.2f} s; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'op type':24s} {'share':>6s}")
    for kind, time_us in sorted(by_type.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{kind:24s} {100 * time_us / total:5.1f}%")
    print(f"{'share':>6s}  op (the loop of phase n is while_n)")
    for (kind, name), time_us in sorted(by_op.items(), key=lambda kv: -kv[1])[: args.top]:
        name = name.replace("StatefulPartitionedCall/", "")
        print(f"{100 * time_us / total:5.1f}%  {kind}: {name[-70:]}")
    step_write_cost(tf)


def step_write_cost(tf):
    from keras import ops

    import timing  # bench/
    from kerasrnn.decoding.common import write_step

    spec = [tf.TensorSpec([None, 10, 60], tf.int32), tf.TensorSpec([], tf.int32)]
    contenders = {
        "ops.slice_update": lambda x, t: ops.slice_update(x, [0, 0, t], x[:, :, :1] + 1),
        "write_step (select)": lambda x, t: write_step(x, t, x[:, :, 0] + 1, axis=2),
    }
    for name, write in contenders.items():
        function = tf.function(write, input_signature=spec)
        _, seconds = timing.timed(
            lambda: [
                function(tf.zeros((batch, 10, 60), tf.int32), tf.constant(5))
                for batch in range(20, 40)
            ]
        )
        print(f"{name:20s} {seconds / 20 * 1e3:6.1f} ms per call, a new batch size each call")


if __name__ == "__main__":
    main()
