"""What the benchmarks of a trained translator share: the run directory and data
arguments, the Multi30k test set (test_2016_flickr, 1,000 sentences) and the model."""
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"


def add_arguments(parser):
    parser.add_argument("run_dir", help="a trained translator run (bench/translator.py)")
    parser.add_argument("--data", default=str(DATA))


def test_sources(data):
    """The German side of test_2016_flickr, a list of str."""
    from kerasrnn.data import load_parallel_text

    data = pathlib.Path(data)
    sources, _ = load_parallel_text(data / "test_2016_flickr.de.gz",
                                    data / "test_2016_flickr.en.gz")
    return sources


def load(run_dir):
    """The run's `recipes.translator.Translator`."""
    from recipes import common, translator

    return translator.Translator.from_run(common.saved_config(translator.DEFAULTS, run_dir))
