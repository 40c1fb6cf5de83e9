"""Small decoders with NumPy twins, and brute-force search, shared by the decoding tests.

`RecurrentDecoder` is an attentive recurrent decoder written twice: as a keras.ops step
function for the library and as a NumPy loop that scores a given token sequence.
"""

import itertools

import numpy as np
from keras import ops


def np_(x):
    return np.asarray(ops.convert_to_numpy(x))


def log_softmax(z):
    z = np.asarray(z, "float64")
    return z - z.max() - np.log(np.exp(z - z.max()).sum())


class RecurrentDecoder:
    """h_t = tanh(h_{t-1} W + E[y_{t-1}]); a_t = softmax(M h_t);
    logits_t = (h_t + a_t M) O. States (h, memory); alignments a_t."""

    def __init__(self, vocab=4, units=5, source=3, seed=0, attentive=True):
        rng = np.random.default_rng(seed)
        self.vocab, self.units, self.source, self.attentive = vocab, units, source, attentive
        self.emb = rng.normal(size=(vocab, units)).astype("float32")
        self.w = rng.normal(size=(units, units)).astype("float32")
        self.out = (2 * rng.normal(size=(units, vocab))).astype("float32")

    def initial_states(self, batch, seed=1):
        rng = np.random.default_rng(seed)
        h = rng.normal(size=(batch, self.units)).astype("float32")
        memory = rng.normal(size=(batch, self.source, self.units)).astype("float32")
        return h, memory

    def __call__(self, tokens, states):
        h, memory = states
        memory = ops.convert_to_tensor(memory)  # NumPy * torch tensor is no torch op
        h = ops.tanh(ops.matmul(h, self.w) + ops.take(self.emb, tokens, axis=0))
        a = ops.softmax(ops.sum(memory * h[:, None, :], axis=-1), axis=-1)
        logits = ops.matmul(h + ops.sum(a[:, :, None] * memory, axis=1), self.out)
        if self.attentive:
            return logits, (h, memory), a
        return logits, (h, memory)

    def steps(self, prefix, h, memory, start=0):
        """Per position of `prefix`: (log p(. | tokens before), alignments), NumPy."""
        out, previous = [], start
        for token in list(prefix) + [None]:
            h = np.tanh(h @ self.w + self.emb[previous])
            scores = memory @ h
            a = np.exp(scores - scores.max())
            a /= a.sum()
            out.append((log_softmax((h + a @ memory) @ self.out), a))
            if token is None:
                break
            previous = token
        return out

    def next_log_probs(self, prefix, h, memory, start=0):
        return self.steps(prefix, h, memory, start)[-1][0]

    def score(self, seq, h, memory, start=0):
        """(log p(seq), coverage sum_t a_t) of a complete sequence."""
        steps = self.steps(seq, h, memory, start)[: len(seq)]
        return sum(s[0][y] for s, y in zip(steps, seq)), sum(s[1] for s in steps)


def complete_sequences(vocab, end, max_length, min_length=0, no_repeat=None):
    """Every sequence a search may complete: ends with `end`, or reaches max_length;
    the end token not before `min_length` tokens; no repeated n-gram (n = no_repeat)."""
    for length in range(1, max_length + 1):
        for seq in itertools.product(range(vocab), repeat=length):
            if end in seq[:-1] or (length < max_length and seq[-1] != end):
                continue
            if seq[-1] == end and length - 1 < min_length:
                continue
            if end in seq[:min_length]:
                continue
            if no_repeat and has_repeated_ngram(seq, no_repeat):
                continue
            yield seq


def has_repeated_ngram(seq, n):
    grams = [tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)]
    return len(grams) != len(set(grams))
