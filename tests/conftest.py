"""Shared test fixtures: quiet logs, seeded RNGs and access to the offline corpora
(KERASRNN_DATA, by default ../shared/data) and the tiny recipe runs the tests share."""

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
# The other shared runs' tiny sizes (every recipe trains one epoch).
TINY = dict(embedding_dim=8, units=8, batch_size=16, epochs=1, verbose=0)


def _trained(module, folder, overrides, splits):
    """`module.train` (a recipe) of its defaults with `overrides` into `folder`; the
    run folder."""
    from recipes import common

    config = common.load_config(module.DEFAULTS, overrides=dict(overrides, output_dir=str(folder)))
    module.train(config, splits)
    return folder


def _shared(tmp_path_factory, name, train):
    """`train(folder)`'s run folder, trained once per test session: with pytest-xdist,
    once for all workers (the first trains it under a file lock, the others wait and
    read it), so that a session fixture does not train once per worker."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder, done = root / f"shared_{name}" / "run", root / f"shared_{name}.done"
    with FileLock(str(root / f"shared_{name}.lock")):
        if not done.exists():
            train(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def tiny_translator(tmp_path_factory):
    """A tiny translator run (words -> characters, beam size 2, n-best 3) trained one epoch
    on 160 generated dates, once per session: the serving and runtime-export tests read it
    (they export from it and translate with it, and never train it further)."""
    from kerasrnn.tasks import date_translation_task
    from recipes import translator

    overrides = dict(
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
    )
    splits = {"train": date_translation_task(160, seed=0), "valid": None}
    return _shared(
        tmp_path_factory, "tiny_translator", lambda f: _trained(translator, f, overrides, splits)
    )


# Tiny tagged sentences (CoNLL-2003-like BIO tags), the tagger run's training data.
NER_SENTENCES = [
    (
        ["Peter", "Blackburn", "flew", "to", "Brussels", "."],
        ["B-PER", "I-PER", "O", "O", "B-LOC", "O"],
    ),
    (["EU", "rejects", "German", "call", "."], ["B-ORG", "O", "B-MISC", "O", "O"]),
    (["The", "cat", "sat", "on", "the", "mat", "."], ["O"] * 7),
] * 8


@pytest.fixture(scope="session")
def tiny_tagger(tmp_path_factory):
    """A tiny NER tagger run (character features, a CRF constrained to BIOES, trained in
    BIOES on BIO data: predictions written back in BIO), one epoch, once per session."""
    from recipes import tagger

    sentences, tags = (list(x) for x in zip(*NER_SENTENCES))
    overrides = dict(
        TINY, char_dim=4, char_units=4, crf=True, tag_scheme="bioes", bucket_boundaries=[]
    )
    splits = {"train": (sentences, tags), "valid": (sentences[:3], tags[:3]), "test": None}
    return _shared(
        tmp_path_factory, "tiny_tagger", lambda f: _trained(tagger, f, overrides, splits)
    )


CLASSIFIER_TEXTS = ["a gripping good film", "dull and bad", "good acting", "a bad plot"] * 10
CLASSIFIER_LABELS = ["pos", "neg", "pos", "neg"] * 10


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory):
    """A tiny sentence classifier run (lower-cased, a BiLSTM), one epoch, once per session."""
    from recipes import classifier

    splits = {"train": (CLASSIFIER_TEXTS, CLASSIFIER_LABELS), "valid": None, "test": None}
    overrides = dict(TINY, lowercase=True, bucket_boundaries=[])
    return _shared(
        tmp_path_factory, "tiny_classifier", lambda f: _trained(classifier, f, overrides, splits)
    )


PAIRS = [
    ("A man is playing a guitar", "A person plays an instrument", 4.5, "ENTAILMENT"),
    ("A dog runs", "A cat sleeps", 1.5, "CONTRADICTION"),
    ("A woman cooks", "Someone is in a kitchen", 3.0, "NEUTRAL"),
] * 8


@pytest.fixture(scope="session")
def tiny_pair_classifier(tmp_path_factory):
    """A tiny entailment pair classifier run, one epoch, once per session."""
    from recipes import pair_classifier

    split = tuple(list(column) for column in zip(*PAIRS))
    splits = {"train": split, "valid": None, "test": None}
    overrides = dict(TINY, hidden_units=8)
    return _shared(
        tmp_path_factory, "tiny_pair", lambda f: _trained(pair_classifier, f, overrides, splits)
    )


LM_SENTENCES = [s.split() for s in ("the cat sat on the mat", "the dog ran home", "a cat ran")] * 30


@pytest.fixture(scope="session")
def tiny_language_model(tmp_path_factory):
    """A tiny word language model run on a stream (stateful windows), one epoch, once
    per session."""
    from recipes import language_model

    splits = {"train": LM_SENTENCES, "valid": LM_SENTENCES[:9], "test": LM_SENTENCES[:9]}
    overrides = dict(units=8, num_layers=1, steps=5, batch_size=4, epochs=1, verbose=0)
    return _shared(
        tmp_path_factory, "tiny_lm", lambda f: _trained(language_model, f, overrides, splits)
    )
