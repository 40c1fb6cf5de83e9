"""A probe for `--pretrained-lm`: how much a language model's states say about sentence
polarity (MR) before any fine-tuning, and whether they are saturated.

The classifier recipe's encoder with the LM's weights copied in (`recipes.transfer`:
the LM's vocabulary, embedding and forward recurrent layers, concat pooling: last, max
and mean of the last layer's states) reads each MR sentence from a zero state; a
logistic regression (scikit-learn, standardised features) is trained on the pooled
states of fold 1's training sentences and scored on its test sentences (the folds of
bench/ulmfit.py). Beside it, the same for the encoder at its initialisation (the
recipe's: Keras' initializers) and for the mean of the word embeddings, the LM's and
the initial ones. Also printed: the mean |h| of the pooled states (1 is a saturated
LSTM output) and the largest singular value of each gate's block of every recurrent
kernel (at initialisation at most 1 for the orthogonal recurrent kernel).

    PYTHONPATH=. python bench/lm_features.py --lm runs/ulmfit/lm

A well-trained LM's states should beat the initial encoder's here; ones that do not,
or that sit near |h| = 1, give a classifier little to start from (what
docs/recipes/classifier.md found for a 6-minute LM).
"""

import argparse
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from ulmfit import CLASSIFIER, DATA, mr_folds  # noqa: E402

GATES = "ifco"  # Keras' gate order: input, forget, cell candidate, output


def encoders(lm_dir, vocab_size):
    """The recipe's classifier on the LM's shapes, at its initialisation and with the
    LM's weights copied in."""
    from recipes import classifier, common, transfer

    config = common.load_config(
        classifier.DEFAULTS, overrides={**CLASSIFIER, "pretrained_lm": lm_dir}
    )
    config = transfer.adopt_lm(config)
    initial = classifier.build_model(config, vocab_size, 2)
    copied = classifier.build_model(config, vocab_size, 2)
    transfer.copy_lm_weights(copied, lm_dir)
    return {"LM's weights": copied, "initialisation": initial}


def pooled(model, ids):
    """Concat-pooled states (the input of the classifier's head) and mean embeddings."""
    import keras
    import numpy as np

    features = keras.Model(model.input, model.get_layer("concat_pooling").output)
    table = np.asarray(model.get_layer("embedding").embeddings)
    states, embedded = [], []
    for start in range(0, len(ids), 512):
        rows = ids[start : start + 512]
        batch = keras.utils.pad_sequences(rows, padding="post", dtype="int32")
        states.append(np.asarray(features(batch, training=False)))
        embedded += [table[row].mean(0) for row in rows]
    return np.concatenate(states), np.stack(embedded)


def probe(features, labels, train, test):
    """Test accuracy of a logistic regression on standardised `features`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scale = StandardScaler().fit(features[train])
    fitted = LogisticRegression(max_iter=5000).fit(scale.transform(features[train]), labels[train])
    return fitted.score(scale.transform(features[test]), labels[test])


def gate_norms(model):
    """The largest singular value of each gate's block of each recurrent layer's
    kernel and recurrent kernel."""
    import numpy as np

    from recipes.transfer import encoder_of

    rows = []
    for layer in encoder_of(model).get_layer("rnn").rnn_layers:
        kernel, recurrent = (np.asarray(w) for w in layer.get_weights()[:2])
        width = recurrent.shape[0]
        rows.append(
            {
                name: [
                    round(float(np.linalg.norm(w[:, g * width : (g + 1) * width], 2)), 2)
                    for g in range(len(GATES))
                ]
                for name, w in (("W", kernel), ("U", recurrent))
            }
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", required=True, help="a word-level `language_model train` run")
    parser.add_argument("--data", default=str(DATA), help="the shared corpora folder")
    args = parser.parse_args()
    import numpy as np

    from kerasrnn.data import Vocabulary
    from kerasrnn.data.tokenizers import tokenize
    from kerasrnn.data.vocabulary import UNK_ID

    texts, labels, folds = mr_folds(args.data)
    train, test = folds[0]
    vocabulary = Vocabulary.load(os.path.join(args.lm, "vocabulary.txt"))
    ids = [vocabulary.encode(tokens) or [UNK_ID] for tokens in tokenize(texts, True)]
    unknown = np.mean([i == UNK_ID for row in ids for i in row])
    y = np.array([label == "pos" for label in labels], "int32")
    with open(os.path.join(args.lm, "results.json")) as f:
        lm = json.load(f)
    print(f"LM {args.lm}: valid perplexity {lm['valid']['perplexity']:.1f}")
    print(f"MR words outside the LM's vocabulary: {100 * unknown:.1f}%")
    print()
    print("| weights | mean abs pooled state | probe: pooled states | probe: mean embedding |")
    print("|---|---|---|---|")
    norms = {}
    for name, model in encoders(args.lm, len(vocabulary)).items():
        states, embedded = pooled(model, ids)
        print(
            f"| {name} | {np.abs(states).mean():.3f} | "
            f"{100 * probe(states, y, train, test):.2f} | "
            f"{100 * probe(embedded, y, train, test):.2f} |"
        )
        norms[name] = gate_norms(model)
    print()
    for name, layers in norms.items():
        for i, layer in enumerate(layers):
            print(
                f"{name}, layer {i}: largest singular value per gate ({GATES}) "
                f"of W {layer['W']}, of U {layer['U']}"
            )
    print("command: PYTHONPATH=. python bench/lm_features.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
