"""Beam-search throughput and BLEU of a trained translator with its readout matmul in
float32 (exact) and in bfloat16 (`Seq2Seq.generate(readout_dtype=...)`).

Both contenders are the translator's own `translate` (batches of similar lengths) on
test_2016_flickr, interleaved round by round in one process. The script prints
sentences/s and how many translations are identical per round, the speed-up's median
and range, and each one's BLEU. bfloat16 is fast only where the hardware multiplies it
natively (`grep -o 'avx512_bf16\\|amx_bf16' /proc/cpuinfo` on a CPU).

    PYTHONPATH=. python bench/translator_readout_dtype.py runs/bench-translator-small-cased
"""

import argparse

import trained_translator  # bench/: the run, its test set and model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    trained_translator.add_comparison_arguments(parser)
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    args = parser.parse_args()
    trained_translator.compare_options(
        args.run_dir,
        args.data,
        {"float32": {"readout_dtype": "float32"}, args.dtype: {"readout_dtype": args.dtype}},
        args.beam_size,
        args.rounds,
        args.batch_size,
    )


if __name__ == "__main__":
    main()
