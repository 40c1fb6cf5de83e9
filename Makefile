# The two README commands: `make demo` (the main job) and `make test` (which also
# builds the documentation site, strict).
# Each creates .venv on first use and installs the package with what it needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test test-tf test-jax test-torch test-large docs lint figures install bench-gpu

# The package with the test and documentation tools (make test, lint, docs, figures);
# it holds the base package too.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,docs]'
	touch $(VENV)/.base-installed $@

# The base package alone, all the demo needs (no PyTorch, JAX or MkDocs).
$(VENV)/.base-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

install: $(VENV)/.installed

# TF_CPP_MIN_LOG_LEVEL unset (or 1-3): the recipes silence TensorFlow's start-up lines
# themselves (0 asks for TensorFlow's own logging).
demo: $(VENV)/.base-installed
	$(VENV)/bin/kerasrnn translator demo

# The whole suite on TensorFlow, then the keras.ops-only core (cells, attention,
# decoding, seq2seq, losses, layers incl. the CRF and the regularisers, the callbacks incl.
# weight averaging and ULMFiT's optimizers, the TFA parity tests) again on PyTorch (CPU)
# and most of it on JAX. Two pytest workers keep both cores busy.
CORE_TESTS := tests/cells tests/attention tests/decoding tests/seq2seq tests/losses \
              tests/layers tests/callbacks tests/compat

# On JAX, where every test's shapes are compiled by XLA (most of its time), the core less
# the decoding strategies', the seq2seq pieces' and the TFA/PyTorch converters' own tests
# (keras.ops code, checked on TensorFlow and torch): JAX runs the decoding loop compiled,
# the strategies' shared tests and the Seq2Seq model's.
JAX_TESTS := tests/cells tests/attention tests/losses tests/layers tests/callbacks \
             tests/decoding/test_decoding.py \
             tests/decoding/test_generate_compiled.py tests/seq2seq/test_model.py

# Each run leaves out the tests marked `large` (as keras-hub's `--run_large` does): those
# that train a recipe's run end to end, export it to every format, kill and resume it,
# start worker processes, or take five seconds or more each. `make test-large` runs them.
test: test-tf test-jax test-torch docs

# XLA's lowest CPU code-generation level here too (TensorFlow compiles the decoders and
# the written-out LSTM with XLA): a beam-search decoder compiled in 16-18 s instead of
# 22.5 s, and ran no slower. The 15 slowest tests are listed at the end (of the JAX run
# too): the whole `.ci/run` should stay within 25 minutes on 2 cores.
test-tf: $(VENV)/.installed
	XLA_FLAGS=--xla_backend_optimization_level=0 KERAS_BACKEND=tensorflow $(PY) -m pytest -q -n 2 --durations 15 -m "not large" tests

# The tests marked `large`, on TensorFlow, then those of the JAX run's folders on JAX:
# about 18 minutes on 2 CPU cores. Run it before a change to recipes/, kerasrnn/export/
# or a training loop lands.
test-large: $(VENV)/.installed
	XLA_FLAGS=--xla_backend_optimization_level=0 KERAS_BACKEND=tensorflow $(PY) -m pytest -q -n 2 --durations 15 -m large tests
	XLA_FLAGS=--xla_backend_optimization_level=0 KERAS_BACKEND=jax $(PY) -m pytest -q -n 2 --durations 15 -m "large and not learns" $(JAX_TESTS)

# XLA's lowest CPU code-generation level: the tests' small shapes spend more time compiling
# than running (the JAX run took 591 s instead of 706 s on three of its folders). Less the
# tests marked `learns` (training to a threshold: the same keras.ops code learns on
# TensorFlow; each is minutes of CI on JAX for no new equation checked).
test-jax: $(VENV)/.installed
	XLA_FLAGS=--xla_backend_optimization_level=0 KERAS_BACKEND=jax $(PY) -m pytest -q -n 2 --durations 15 -m "not learns and not large" $(JAX_TESTS)

# Keras' torch backend runs the same core on PyTorch's CPU kernels (and its fused
# LSTM/GRU, which kerasrnn.RNN's fast path reaches), less the tests marked `learns`:
# training to a threshold, the same keras.ops code that learns on TensorFlow and JAX,
# took a third of this run's time (torch's eager loops are the slowest).
# One thread per worker: two workers of torch's default one thread per core stall each
# other (docs/index.md, "Backends and CPU threads").
test-torch: $(VENV)/.installed
	KERAS_BACKEND=torch OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 -m "not learns and not large" $(CORE_TESTS)

# The documentation site (mkdocs.yml) into site/, in strict mode: a broken link or anchor,
# an unknown `::: name` or a docstring argument missing from its signature fails it.
# The API pages are read from the source (griffe), so nothing imports TensorFlow.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# ruff (pyproject.toml's [tool.ruff]: pycodestyle, pyflakes, import order, bugbear; the
# formatter) and mypy over kerasrnn/ (pyproject.toml's [tool.mypy]).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The figures of docs/ (docs/figures/*.py), each script printing the numbers it plots.
# About 20 minutes on 2 CPU cores; the speed chart times PyTorch too (the bench extra).
FIGURES := vanishing_gradients long_term_dependency inert_distractors gradient_clipping attention_heatmap cell_speed

figures: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[bench]'
	for figure in $(FIGURES); do PYTHONPATH=. $(PY) docs/figures/$$figure.py || exit 1; done

# The GPU benchmark (bench/gpu.sh): on a CUDA machine with JAX and/or PyTorch but no
# TensorFlow, with Keras' wheels carried in .whl/ (the script says how to fetch them).
bench-gpu:
	bash bench/gpu.sh
