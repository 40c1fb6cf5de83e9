#!/usr/bin/env bash
# One command for a GPU machine with CUDA and JAX and/or PyTorch but no TensorFlow and no
# internet: installs the Keras wheels carried in .whl/ into a temporary folder, runs
# bench/gpu.py once per backend found (jax, torch), then prints one table and writes it
# the results file bench/results/gpu.json (RESULTS_DIR=DIR: DIR/gpu.json; OUT=FILE: the
# merged rows as bench/gpu.py --json writes them, too).
#
#   bash bench/gpu.sh                  # full sizes (B64 T100 H256, B256 T200 H1024)
#   bash bench/gpu.sh --cpu            # tiny sizes, one round: a CPU smoke run
#   OUT=/tmp/gpu.json bash bench/gpu.sh --only "LSTMCell, fast"
#
# Extra arguments go to bench/gpu.py. PYTHON picks the interpreter (default python3).
# The wheels are build artefacts and stay out of git (.whl/ is in .gitignore); fetch them
# on a machine with internet with the command this script prints when they are missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WHEELS="${WHEELS:-$ROOT/.whl}"
RESULTS_DIR="${RESULTS_DIR:-$ROOT/bench/results}"
PYVER="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"

download_hint() {
    echo "On a machine with internet, from the repository root:" >&2
    echo "  pip download --dest .whl --only-binary=:all: --python-version $PYVER \\" >&2
    echo "      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \\" >&2
    echo "      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \\" >&2
    echo "      keras==3.15.1 absl-py rich namex h5py optree ml-dtypes packaging" >&2
    echo "then copy .whl/ here. (pip download also fetches numpy and the other" >&2
    echo "dependencies; this script installs only those the machine lacks. A CUDA" >&2
    echo "image with JAX and PyTorch usually lacks only keras, namex and optree:" >&2
    echo "add --no-deps and name those three.)" >&2
}

TARGET="$(mktemp -d)"
PARTS="$(mktemp -d)"
trap 'rm -rf "$TARGET" "$PARTS"' EXIT

if compgen -G "$WHEELS/*.whl" > /dev/null; then
    # Install a carried wheel only where the machine has no such distribution (never
    # shadow the machine's numpy or ml_dtypes, which its jax / torch were built with);
    # keras itself always comes from the wheels.
    missing=()
    for wheel in "$WHEELS"/*.whl; do
        name="$(basename "$wheel" | cut -d- -f1)"
        if [ "$name" = keras ] || ! "$PYTHON" -c \
            "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$name" 2> /dev/null; then
            missing+=("$wheel")
        fi
    done
    echo "# installing ${#missing[@]} carried wheel(s) into $TARGET" >&2
    "$PYTHON" -m pip install --quiet --no-index --no-deps --target "$TARGET" "${missing[@]}"
elif ! "$PYTHON" -c "import keras" 2> /dev/null; then
    echo "bench/gpu.sh: no Keras here and no wheels in $WHEELS." >&2
    download_hint
    exit 2
fi
export PYTHONPATH="$TARGET:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX and torch share the GPU in one process
export TF_CPP_MIN_LOG_LEVEL=2

parts=()
for backend in jax torch; do
    if ! "$PYTHON" -c "import $backend" 2> /dev/null; then
        echo "# $backend is not installed: skipped" >&2
        continue
    fi
    echo "# measuring on Keras' $backend backend" >&2
    KERAS_BACKEND="$backend" "$PYTHON" -m bench gpu --json "$PARTS/$backend.json" \
        --no-results "$@" > /dev/null
    parts+=("$PARTS/$backend.json")
done
if [ "${#parts[@]}" -eq 0 ]; then
    echo "bench/gpu.sh: neither jax nor torch is installed; nothing to measure." >&2
    exit 2
fi
cd "$ROOT"
"$PYTHON" -m bench gpu --merge "${parts[@]}" --json "${OUT:-$PARTS/merged.json}" \
    --results-dir "$RESULTS_DIR"
