"""The keras.ops core decodes on JAX without TensorFlow installed: a fresh process in
which importing TensorFlow fails runs greedy search, sampling (keras-hub's samplers,
which do without TensorFlow) and beam search through `Seq2Seq.generate`."""

import json
import os
import subprocess
import sys

import keras
import pytest

SCRIPT = r"""
import importlib.abc, json, sys

class NoTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("tensorflow", "tensorflow_text"):
            raise ImportError(f"{name} is blocked in this test")

sys.meta_path.insert(0, NoTensorFlow())
import keras, numpy as np
import kerasrnn
from kerasrnn import decoding
from kerasrnn.seq2seq import Seq2Seq, Seq2SeqBackbone

keras.utils.set_random_seed(0)
model = Seq2Seq(Seq2SeqBackbone(20, 12, embedding_dim=8, units=8), max_target_length=5)
source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
shapes = {}
for name, strategy in [("greedy", decoding.GreedySearch()),
                       ("sample", decoding.RandomSampling(top_k=5, seed=1)),
                       ("beam", decoding.BeamSearch(beam_size=3))]:
    shapes[name] = list(model.generate(source, strategy).tokens.shape)
print(json.dumps({"backend": keras.backend.backend(), "shapes": shapes,
                  "tensorflow": "tensorflow" in sys.modules}))
"""


@pytest.mark.large
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="starts its own JAX process: once, in the TensorFlow run, is enough",
)
def test_jax_decodes_without_importing_tensorflow():
    pytest.importorskip("jax")
    env = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "backend": "jax",
        "shapes": {"greedy": [2, 1, 5], "sample": [2, 1, 5], "beam": [2, 3, 5]},
        "tensorflow": False,
    }
