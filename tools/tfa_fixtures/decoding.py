"""TensorFlow Addons' BeamSearchDecoder on a fixed step function -> tests/fixtures/tfa/beam_*.npz.

Run in the reference environment (tensorflow-cpu 2.15.1, tensorflow-addons 0.23.0,
numpy<2; see tools/tfa_fixtures/README.md):

    /path/to/tfa-venv/bin/python tools/tfa_fixtures/decoding.py

The decoder is a table, so kerasrnn can replay it exactly without TFA: the logits of
step t after token y are `logits[t, y]`, and the attention weights the step reports are
`alignments[t, y]` (what TFA reads from an `AttentionWrapperState` for its coverage
penalty). Each fixture holds the tables, the start tokens, the search settings and
TFA's predicted ids, final scores, log-probabilities and lengths (beams best first).
The test suite (tests/decoding/test_tfa_beam.py) reads the files and never needs TFA.

Self-contained on purpose (no import of tools/tfa_fixtures/common.py): the decoding
fixtures are written by this file alone.
"""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tfa"

VOCAB, SOURCE, MAX_LENGTH, END = 6, 4, 7, 2
START = np.array([0, 1, 3], "int32")


def tables(seed):
    """Random logits (the end token more likely as t grows, so beams finish at
    different steps) and softmax alignments, one per (step, previous token)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 1.5, (MAX_LENGTH, VOCAB, VOCAB))
    logits[:, :, END] += np.linspace(-1.5, 1.5, MAX_LENGTH)[:, None]
    scores = rng.normal(0.0, 1.5, (MAX_LENGTH, VOCAB, SOURCE))
    alignments = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    return logits.astype("float32"), alignments.astype("float32")


def run_tfa(logits, alignments, beam_width, length_penalty_weight, coverage_penalty_weight):
    import tensorflow as tf
    import tensorflow_addons as tfa

    logits_table = tf.constant(logits)
    alignment_table = tf.constant(alignments)
    State = tfa.seq2seq.AttentionWrapperState

    class TableCell(tf.keras.layers.Layer):
        """inputs: one-hot previous token; state: an AttentionWrapperState whose
        cell_state is the step counter and whose alignments are the table's."""

        @property
        def state_size(self):
            return State(
                cell_state=1,
                attention=1,
                alignments=SOURCE,
                alignment_history=(),
                attention_state=SOURCE,
            )

        @property
        def output_size(self):
            return VOCAB

        def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
            return State(
                cell_state=tf.zeros((batch_size, 1)),
                attention=tf.zeros((batch_size, 1)),
                alignments=tf.zeros((batch_size, SOURCE)),
                alignment_history=(),
                attention_state=tf.zeros((batch_size, SOURCE)),
            )

        def call(self, inputs, state):
            step = tf.cast(state.cell_state[:, 0], tf.int32)
            previous = tf.argmax(inputs, axis=-1, output_type=tf.int32)
            index = tf.stack([step, previous], axis=1)
            align = tf.gather_nd(alignment_table, index)
            new_state = State(
                cell_state=state.cell_state + 1.0,
                attention=state.attention,
                alignments=align,
                alignment_history=(),
                attention_state=align,
            )
            return tf.gather_nd(logits_table, index), new_state

    cell = TableCell()
    # Zero initial alignments, as AttentionWrapper's: TFA adds them to the coverage.
    initial = cell.get_initial_state(batch_size=len(START) * beam_width)
    decoder = tfa.seq2seq.BeamSearchDecoder(
        cell,
        beam_width=beam_width,
        embedding_fn=lambda ids: tf.one_hot(ids, VOCAB),
        length_penalty_weight=length_penalty_weight,
        coverage_penalty_weight=coverage_penalty_weight,
        maximum_iterations=MAX_LENGTH,
    )
    outputs, state, _ = decoder(None, start_tokens=START, end_token=END, initial_state=initial)
    ids = outputs.predicted_ids.numpy().transpose(0, 2, 1)  # (batch, beam, steps)
    scores = outputs.beam_search_decoder_output.scores.numpy()[:, -1]  # last step
    return {
        "ids": ids.astype("int32"),
        "scores": scores,
        "log_probs": state.log_probs.numpy(),
        "lengths": state.lengths.numpy().astype("int32"),
    }


CASES = {
    # name: (seed, beam_width, length_penalty_weight, coverage_penalty_weight)
    "beam_no_penalty": (11, 3, 0.0, 0.0),
    "beam_length_penalty": (12, 3, 0.8, 0.0),
    "beam_coverage_penalty": (13, 3, 0.6, 0.5),
    "beam_wide": (14, 5, 1.0, 0.3),
}


def main():
    import tensorflow as tf
    import tensorflow_addons as tfa

    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, (seed, beam_width, alpha, beta) in CASES.items():
        logits, alignments = tables(seed)
        out = run_tfa(logits, alignments, beam_width, alpha, beta)
        np.savez_compressed(
            FIXTURES / f"{name}.npz",
            logits=logits,
            alignments=alignments,
            start_tokens=START,
            end_token=np.int32(END),
            beam_width=np.int32(beam_width),
            length_penalty_weight=np.float32(alpha),
            coverage_penalty_weight=np.float32(beta),
            max_length=np.int32(MAX_LENGTH),
            tensorflow_version=np.array(tf.__version__),
            tfa_version=np.array(tfa.__version__),
            **out,
        )
        print(f"{name}: ids {out['ids'].shape}, lengths {out['lengths'].tolist()}")


if __name__ == "__main__":
    main()
