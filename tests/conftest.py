"""Shared test fixtures: quiet logs, seeded RNGs and access to the offline corpora
(KERASRNN_DATA, by default ../shared/data)."""

import gc
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
# The offline copy of the corpora: KERASRNN_DATA (the variable the package reads), by
# default ../shared/data beside the checkout.
DATA_DIR = pathlib.Path(os.environ.get("KERASRNN_DATA") or REPO.parent / "shared" / "data")

# The frameworks' import leaves ~400,000 objects that live as long as the process: moved
# out of the garbage collector's reach, a full gc.collect() takes ~0.1 s instead of ~2 s
# (TensorFlow, a loaded 2-core machine). The tests' teardown no longer runs one at all
# (clear_session(free_memory=False), `_seeded` below): Python's own collector frees the
# tests' garbage as it goes.
gc.freeze()


def pytest_collection_finish(session):
    """The test modules' own long-lived objects (imports, module-level models) too."""
    gc.collect()
    gc.freeze()


# `corpus:NAME/FILE` data specs (kerasrnn.datasets) read the shared copy: tests never download.
os.environ["KERASRNN_DATA"] = str(DATA_DIR)


def require_data(*parts):
    """Path to a file or folder of the offline corpora (`DATA_DIR`).

    Skips the test when it is missing, unless KERASRNN_REQUIRE_DATA=1 (as CI sets),
    in which case the test fails: a CI run must never silently lose data tests.
    """
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        message = f"shared corpus not found: {path}"
        if os.environ.get("KERASRNN_REQUIRE_DATA") == "1":
            pytest.fail(message + " (KERASRNN_REQUIRE_DATA=1)")
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data():
    """The `require_data` function, as a fixture."""
    return require_data


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state and a clean Keras session."""
    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
    yield
    # without the full gc.collect() of free_memory=True: it grows with the backend's
    # caches (JIT-compiled functions) and took a quarter of the JAX run's time (0.36 s
    # per test), a sixth of TensorFlow's (0.25 s)
    keras.backend.clear_session(free_memory=False)


@pytest.fixture
def float64():
    """float64 layers (and JAX's x64 mode, off by default) for finite differences."""
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    jax = None
    if keras.backend.backend() == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
    yield
    keras.config.set_floatx("float32")
    keras.config.set_dtype_policy("float32")
    if jax is not None:
        jax.config.update("jax_enable_x64", False)


def main_json(module, *args):
    """`module.main(args)` (a recipe's command line), which must exit 0, and the JSON it
    printed on stdout."""
    import contextlib
    import io
    import json

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert module.main(list(args)) == 0
    return json.loads(stdout.getvalue())


# The tiny translator run's n-best width and source length (what the tests that use it check).
TINY_TRANSLATOR_N_BEST = 3
TINY_TRANSLATOR_MAX_SOURCE = 6


@pytest.fixture(scope="session")
def tiny_translator(tmp_path_factory):
    """A tiny translator run (words -> characters, beam size 2, n-best 3) trained one epoch
    on 160 generated dates, once per session: the serving and runtime-export tests read it
    (they export from it and translate with it, and never train it further)."""
    from kerasrnn.tasks import date_translation_task
    from recipes import common, translator

    out = tmp_path_factory.mktemp("tiny_translator") / "run"
    config = common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            output_dir=str(out),
            target_tokenizer="char",
            lowercase=True,
            embedding_dim=8,
            encoder_units=8,
            decoder_units=16,
            attention_units=8,
            dropout=0.0,
            batch_size=32,
            epochs=1,
            bucket_boundaries=[],
            beam_size=2,
            n_best=TINY_TRANSLATOR_N_BEST,
            max_source_length=TINY_TRANSLATOR_MAX_SOURCE,
            max_target_length=12,
            max_decode_length=8,
            heatmaps=0,
            verbose=0,
        ),
    )
    translator.train(config, {"train": date_translation_task(160, seed=0), "valid": None})
    return out
