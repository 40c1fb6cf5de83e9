"""Each recipe's default model: one training step against an equivalent PyTorch model,
interleaved in one process (issue 19 item 2).

* LM "small" (Zaremba et al.): 2 x 200 LSTM, 20 steps, batch 20, vocabulary 10,000,
  SGD lr 1, global clipnorm 5, the recipe's summed-over-time loss; the model and its
  compile are `recipes.language_model`'s own (`build_model`, `compile_model`).
* tagger: `recipes.tagger.build_model` with its defaults (word embedding 100, character
  BiLSTM 32 + 32 over 32-d character embeddings, sentence BiLSTM 128 + 128, dropouts,
  softmax over the tags), Adam with clipnorm 5 (the recipes' `common.optimizer`), batch
  32 of 25 words of up to 12 characters, 20,000 words, 100 characters, 17 tags.
* translator teacher forcing: the reduced Multi30k shape (`recipes.translator.build_model`
  with 128-d embeddings, a bidirectional GRU of 128 + 128, a GRU decoder of 256 with
  Bahdanau attention of 128; vocabularies 8,050 / 6,197), Adam with clipnorm 5, batch
  64 of 16 source and 16 target tokens (a quarter of the rows padded).

Each Keras model is timed with Keras' default compile settings (`jit_compile="auto"`,
which is off on a TensorFlow CPU) and with `jit_compile=True`; the PyTorch models have
the same sizes, optimiser, clipping and batch (PyTorch's own LSTM/GRU kernels for the
encoders, a Python loop of `GRUCell` steps for the attentive decoder, as PyTorch
tutorials write it). Method as in `bench/cells.py`: everything built and warmed up,
then `--rounds` interleaved rounds (order rotating) of `--steps` timed steps; a row's
ratio in a round is its median step over PyTorch's in that round.

    python -m bench recipes_torch                 # all three recipes
    python -m bench recipes_torch --only lm
"""

import os
import platform
import statistics
import sys

from bench import suite, timing

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
OMP_POLICY = suite.apply_omp_policy()  # before torch loads

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from recipes import common  # noqa: E402

RNG = np.random.default_rng(0)


def vocabulary(size, prefix="w"):
    """A `kerasrnn.data.Vocabulary` of `size` ids (the special tokens, then made-up
    ones): what a recipe's `build_model` reads of its preprocessor is the size."""
    from kerasrnn.data import Vocabulary
    from kerasrnn.special_tokens import SPECIAL_TOKENS

    return Vocabulary([f"{prefix}{i}" for i in range(size - len(SPECIAL_TOKENS))])


# ------------------------------------------------------------------------ LM small
LM_VOCAB, LM_BATCH, LM_STEPS = 10000, 20, 20


def lm_data():
    x = RNG.integers(1, LM_VOCAB, (LM_BATCH, LM_STEPS)).astype("int32")
    return x, np.roll(x, -1, axis=1)


def lm_keras(jit_compile):
    from kerasrnn.models import LanguageModelPreprocessor
    from recipes import language_model

    config = common.load_config(language_model.DEFAULTS)
    config["jit_compile"] = jit_compile
    preprocessor = LanguageModelPreprocessor(vocabulary(LM_VOCAB))
    model = language_model.build_model(config, preprocessor)
    language_model.compile_model(model, config)
    x, y = lm_data()
    return lambda: model.train_on_batch(x, y)


def lm_torch():
    units = 200

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(LM_VOCAB, units)
            self.rnn = torch.nn.LSTM(units, units, num_layers=2, batch_first=True)
            self.out = torch.nn.Linear(units, LM_VOCAB)
            for p in self.parameters():
                torch.nn.init.uniform_(p, -0.1, 0.1)

        def forward(self, x):
            return self.out(self.rnn(self.embedding(x))[0])

    net = LM()
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    x, y = (torch.from_numpy(a).long() for a in lm_data())

    def step():
        optimizer.zero_grad()
        logits = net(x)
        # summed over time, averaged over the batch (the recipe's loss)
        loss = (
            torch.nn.functional.cross_entropy(logits.reshape(-1, LM_VOCAB), y.reshape(-1))
            * LM_STEPS
        )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        optimizer.step()
        return float(loss.detach())

    return step


# ------------------------------------------------------------------------ tagger
WORDS, CHARS, TAGS, T_BATCH, T_LEN, T_CHARS = 20000, 100, 17, 32, 25, 12


def tagger_data():
    words = RNG.integers(4, WORDS, (T_BATCH, T_LEN)).astype("int32")
    words[T_BATCH // 2 :, T_LEN * 3 // 4 :] = 0  # half the sentences shorter
    lengths = RNG.integers(1, T_CHARS + 1, (T_BATCH, T_LEN))
    chars = RNG.integers(4, CHARS, (T_BATCH, T_LEN, T_CHARS)).astype("int32")
    chars[np.arange(T_CHARS)[None, None, :] >= lengths[..., None]] = 0
    chars[words == 0] = 0
    tags = RNG.integers(0, TAGS, (T_BATCH, T_LEN)).astype("int32")
    return words, chars, tags


def tagger_keras(jit_compile):
    from kerasrnn.models import SequenceTaggerPreprocessor
    from recipes import tagger

    config = common.load_config(tagger.DEFAULTS)
    preprocessor = SequenceTaggerPreprocessor(vocabulary(WORDS), vocabulary(CHARS, "c"))
    model = tagger.build_model(config, preprocessor, [f"T{i}" for i in range(TAGS)])
    model.compile(
        common.optimizer(config),
        "sparse_categorical_crossentropy",
        metrics=None,  # as before: the loss alone, not the task's default token accuracy
        jit_compile=jit_compile,
    )
    words, chars, tags = tagger_data()
    inputs = {"word_ids": words, "char_ids": chars}
    return lambda: model.train_on_batch(inputs, tags)


def tagger_torch():
    nn = torch.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(WORDS, 100, padding_idx=0)
            self.chars = nn.Embedding(CHARS, 32, padding_idx=0)
            self.char_rnn = nn.LSTM(32, 32, batch_first=True, bidirectional=True)
            self.rnn = nn.LSTM(164, 128, batch_first=True, bidirectional=True)
            self.out = nn.Linear(256, TAGS)
            self.drop_embedding, self.drop = nn.Dropout(0.25), nn.Dropout(0.33)

        def forward(self, words, chars, char_lengths, lengths):
            b, t, c = chars.shape
            packed = nn.utils.rnn.pack_padded_sequence(
                self.chars(chars.reshape(b * t, c)),
                char_lengths.reshape(-1).clamp(min=1),
                batch_first=True,
                enforce_sorted=False,
            )
            _, (h, _) = self.char_rnn(packed)
            char_features = torch.cat([h[0], h[1]], -1).reshape(b, t, 64)
            x = self.drop_embedding(torch.cat([self.words(words), char_features], -1))
            packed = nn.utils.rnn.pack_padded_sequence(
                x, lengths, batch_first=True, enforce_sorted=False
            )
            out, _ = self.rnn(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=t)
            return self.out(self.drop(out))

    net = Tagger()
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    words, chars, tags = (torch.from_numpy(a).long() for a in tagger_data())
    char_lengths, lengths = (chars != 0).sum(-1), (words != 0).sum(-1)

    def step():
        optimizer.zero_grad()
        logits = net(words, chars, char_lengths, lengths)
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, TAGS), tags.reshape(-1), reduction="none"
        )
        loss = (loss * (words.reshape(-1) != 0)).sum() / (words != 0).sum()
        loss.backward()
        # Keras' clipnorm clips each gradient's norm
        for p in net.parameters():
            torch.nn.utils.clip_grad_norm_([p], 5.0)
        optimizer.step()
        return float(loss.detach())

    return step


# ------------------------------------------------------------------------ translator
SOURCE_VOCAB, TARGET_VOCAB, TR_BATCH, SRC_LEN, TGT_LEN = 8050, 6197, 64, 16, 16
REDUCED = dict(
    embedding_dim=128,
    encoder_units=128,
    decoder_units=256,
    attention_units=128,
    cell="gru",
    attention="bahdanau",
)


def translator_data():
    source = RNG.integers(4, SOURCE_VOCAB, (TR_BATCH, SRC_LEN)).astype("int32")
    target = RNG.integers(4, TARGET_VOCAB, (TR_BATCH, TGT_LEN + 1)).astype("int32")
    source[: TR_BATCH // 4, SRC_LEN // 2 :] = 0
    target[: TR_BATCH // 4, TGT_LEN // 2 :] = 0
    return source, target[:, :-1], target[:, 1:]


def translator_keras(jit_compile):
    from kerasrnn.data.text import TextSide
    from kerasrnn.losses import SequenceCrossEntropy
    from kerasrnn.seq2seq import Seq2SeqPreprocessor
    from recipes import translator

    config = common.load_config(translator.DEFAULTS, overrides=REDUCED)
    preprocessor = Seq2SeqPreprocessor(
        TextSide(vocabulary(SOURCE_VOCAB, "s")), TextSide(vocabulary(TARGET_VOCAB, "t"))
    )
    model = translator.build_model(config, preprocessor)
    model.compile(
        optimizer=common.optimizer(config),
        loss=SequenceCrossEntropy(),
        metrics=[],
        jit_compile=jit_compile,
    )
    source, target_in, target_out = translator_data()
    inputs = {"source": source, "target_in": target_in}
    return lambda: model.train_on_batch(inputs, target_out)


def translator_torch():
    nn = torch.nn

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.source = nn.Embedding(SOURCE_VOCAB, 128, padding_idx=0)
            self.target = nn.Embedding(TARGET_VOCAB, 128, padding_idx=0)
            self.encoder = nn.GRU(128, 128, batch_first=True, bidirectional=True)
            self.bridge = nn.Linear(256, 256)
            self.query = nn.Linear(256, 128, bias=False)
            self.key = nn.Linear(256, 128, bias=False)
            self.v = nn.Linear(128, 1, bias=False)
            self.cell = nn.GRUCell(128 + 256, 256)
            self.readout = nn.Linear(512, TARGET_VOCAB)
            self.drop = nn.Dropout(0.2)

        def forward(self, source, target_in):
            mask = source != 0
            packed = nn.utils.rnn.pack_padded_sequence(
                self.drop(self.source(source)), mask.sum(-1), batch_first=True, enforce_sorted=False
            )
            memory, h = self.encoder(packed)
            memory, _ = nn.utils.rnn.pad_packed_sequence(
                memory, batch_first=True, total_length=source.shape[1]
            )
            s = torch.tanh(self.bridge(torch.cat([h[0], h[1]], -1)))
            keys = self.key(memory)
            y = self.drop(self.target(target_in))
            outputs = []
            for t in range(target_in.shape[1]):  # Bahdanau: attend with s_{t-1}
                energies = self.v(torch.tanh(keys + self.query(s)[:, None])).squeeze(-1)
                alpha = torch.softmax(energies.masked_fill(~mask, -1e9), -1)
                context = torch.bmm(alpha[:, None], memory).squeeze(1)
                s = self.cell(torch.cat([y[:, t], context], -1), s)
                outputs.append(torch.cat([s, context], -1))
            return self.readout(self.drop(torch.stack(outputs, 1)))

    net = Seq2Seq()
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    source, target_in, target_out = (torch.from_numpy(a).long() for a in translator_data())

    def step():
        optimizer.zero_grad()
        logits = net(source, target_in)
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, TARGET_VOCAB), target_out.reshape(-1), ignore_index=0
        )
        loss.backward()
        for p in net.parameters():
            torch.nn.utils.clip_grad_norm_([p], 5.0)
        optimizer.step()
        return float(loss.detach())

    return step


RECIPES = {
    "lm": ("LM small (2x200 LSTM, SGD, global clipnorm)", lm_keras, lm_torch),
    "tagger": ("tagger default (char + word BiLSTM)", tagger_keras, tagger_torch),
    "translator": (
        "translator teacher forcing (reduced Multi30k)",
        translator_keras,
        translator_torch,
    ),
}


# the compile each recipe trains with by default: XLA for the LM, none for the others
RECIPE_DEFAULT = {"lm": "Keras, jit_compile=True"}


def measure(name, rounds, steps, warmup):
    """Interleaved rounds of the recipe's Keras model (both compiles) and PyTorch's;
    returns one row per contender."""
    title, make_keras, make_torch = RECIPES[name]
    built = []
    for label, make in [
        ("Keras, default compile", lambda: make_keras("auto")),
        ("Keras, jit_compile=True", lambda: make_keras(True)),
        ("PyTorch", make_torch),
    ]:
        step = make()
        seconds, _ = timing.warm_up(step, warmup)
        print(f"# {name}: built {label} ({seconds:.1f} s warm-up)", file=sys.stderr, flush=True)
        built.append((label, step))
    per_round = {
        label: [1000 * s for s in seconds]
        for label, seconds in timing.interleaved_rounds(built, rounds, steps).items()
    }
    rows = []
    for label, _ in built:
        ratio = timing.summary(timing.ratios(per_round[label], per_round["PyTorch"]))
        rows.append(
            {
                "recipe": name,
                "title": title,
                "contender": label,
                "ms_per_step": round(statistics.median(per_round[label]), 2),
                **{
                    f"ratio_{k}" if k != "median" else "ratio": round(v, 3)
                    for k, v in ratio.items()
                },
                "round_ms": [round(v, 2) for v in per_round[label]],
            }
        )
    return rows


COLUMNS = [
    ("contender", "contender", "s"),
    ("ms/step", "ms_per_step", ".1f"),
    ("vs PyTorch", "ratio", ".2f"),
    ("IQR", None, lambda r: f"{r['ratio_q1']:.2f}-{r['ratio_q3']:.2f}"),
    ("min-max", None, lambda r: f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f}"),
]


def main(argv=None):
    parser = suite.parser("recipes_torch", __doc__, rounds=5, steps=3, warmup=3)
    parser.add_argument("--only", nargs="*", choices=sorted(RECIPES), default=list(RECIPES))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, keras {keras.__version__} "
        f"({keras.backend.backend()}), torch {torch.__version__}; {args.threads} threads "
        f"each; load {os.getloadavg()[0]:.1f}; {args.rounds} interleaved rounds x "
        f"{args.steps} steps after {args.warmup} warm-up; ratio = step time / PyTorch's "
        f"in the same round; OMP_WAIT_POLICY={OMP_POLICY}",
        flush=True,
    )
    rows, figures = [], {}
    for name in args.only:
        measured = measure(name, args.rounds, args.steps, args.warmup)
        print(f"\n{RECIPES[name][0]}\n{suite.format_table(measured, COLUMNS)}", flush=True)
        rows += measured
        default = RECIPE_DEFAULT.get(name, "Keras, default compile")
        row = next(r for r in measured if r["contender"] == default)
        figures[name] = suite.figure(
            row["ratio"],
            f"{RECIPES[name][0]}: training step / PyTorch's ({default})",
            unit="x",
            spread={"kind": "IQR", "low": row["ratio_q1"], "high": row["ratio_q3"]},
        )
    suite.write_result(
        args,
        "recipes_torch",
        "Each recipe's training step against PyTorch (CPU)",
        figures,
        baseline=suite.figure(1.0, "the PyTorch model, the reference in the same rounds", unit="x"),
        details={"rows": rows, "omp_wait_policy": OMP_POLICY},
    )
    return rows


if __name__ == "__main__":
    main()
