"""The reference client of a recipe exported to ONNX or LiteRT: numpy and the runtime
(onnxruntime or ai-edge-litert, imported when the folder's format needs it) only, no
TensorFlow, no Keras, nothing of kerasrnn.

`export_bundle` copies this file into the exported folder, beside ``deploy.json`` and
the model file(s): run it there (``python client.py FOLDER "a sentence" ...`` prints
JSON) or load it by file path. Importing it as ``kerasrnn.export.client`` works too,
but runs ``kerasrnn/__init__`` (which imports Keras) first.

It does what the recipe's SavedModel does around the model, in numpy: the recipe's
tokenisation (whitespace split, lower-cased where the recipe's config says), the
vocabulary lookup (unknown words -> ``[UNK]``, id 1; padding id 0), the model calls
and the mapping of the outputs back to labels, tags or tokens. ``batch_size`` (default
1) sets how many inputs share a call: the inputs are sorted by length, each batch is
padded with 0 to its longest input (or to the file's fixed length where it has one),
and the results come back in the order of the inputs. A file whose batch is fixed at 1
(every LiteRT file) runs one input a call whatever `batch_size` says. Lower-casing is
Python's `str.lower`, which equals TensorFlow's Unicode lower-casing on all but a few
characters.

Example (a classifier exported with ``--format onnx``)::

    client = load("runs/c/onnx")
    client.predict(["a gripping film"])
    # [{"label": "pos", "probability": 0.93, "probabilities": {"neg": 0.07, "pos": 0.93}}]
    client.predict(texts, batch_size=32)  # the same results, 32 texts a call

From a shell, one input a line of a file (a tagger's words space-separated, a pair
classifier's two sentences tab-separated)::

    python client.py runs/c/onnx --batch-size 32 --input texts.txt
"""

import argparse
import json
import math
import os
import re
import sys
import unicodedata

import numpy as np

PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
_SPACE = re.compile(r"[ \t\n\r\f\v]+")


def split_words(text, lowercase=False):
    """Whitespace tokenisation, as the recipes' `split_words`."""
    if lowercase:
        text = text.lower()
    return [token for token in _SPACE.split(text) if token]


# The translator's tokenisers (kerasrnn.data.text's "word" and "char"), in Python: the
# space as a character token, RE2's \s, and the word detokeniser's rules.
SPACE = "\u2581"
_RE2_SPACE = re.compile(r"[\t\n\f\r ]+")
_JOINER, _ALNUM, _MARK = "[-'\u2019]", r"[^\W_]", "\ue000"
_DETOKENIZE = (
    (re.compile(f" ({_JOINER}) ({_ALNUM})"), f" \\1{_MARK}\\2"),
    (re.compile(f"({_ALNUM}) ({_JOINER}){_MARK}"), r"\1\2"),
    (re.compile(_MARK), " "),
    (re.compile(r" ([.,!?;:%)\]}])"), r"\1"),
    (re.compile(r"([(\[{]) "), r"\1"),
    (re.compile(r'" ([^"]*) "'), r'"\1"'),
)


# The subword kinds whose pieces a SentencePiece model spells (kerasrnn.data.text's).
SENTENCEPIECE_KINDS = ("sentencepiece", "bpe")


def tokenize(text, kind, lowercase=False, subwords=None):
    """A translator side's tokens: ``word`` (punctuation split off words, then
    whitespace), ``char`` (characters, each run of spaces one `SPACE`), or the pieces
    of ``sentencepiece`` / ``bpe``, spelled by the side's model (`subwords`, a
    `sentencepiece.SentencePieceProcessor`: the library the SavedModel's kernel runs)."""
    if lowercase:
        text = text.lower()
    if kind in SENTENCEPIECE_KINDS:
        return subwords.encode(text, out_type=str)
    if kind == "word":
        spaced = "".join(f" {c} " if unicodedata.category(c)[0] == "P" else c for c in text)
        return split_words(spaced)
    return list(_RE2_SPACE.sub(SPACE, text.strip(" \t\n\r\f\v")))


def detokenize(tokens, kind):
    """Tokens -> text, as kerasrnn.data.text's `detokenize_graph`."""
    if kind in SENTENCEPIECE_KINDS:
        return "".join(tokens).replace(SPACE, " ").strip(" \t\n\r\f\v")
    if kind == "char":
        return "".join(tokens).replace(SPACE, " ")
    text = " ".join(tokens)
    for pattern, replacement in _DETOKENIZE:
        text = pattern.sub(replacement, text)
    return text


class Runtime:
    """One model file of the folder, run by onnxruntime (``.onnx``) or the LiteRT
    interpreter without the Flex delegate (``.tflite``): ``run(*arrays)`` (in the order
    of deploy.json's ``inputs``) -> the outputs, in the order of the Keras model's
    outputs."""

    def __init__(self, folder, entry):
        self.shapes = entry["shapes"]
        self.names = entry["inputs"]
        self.count = entry["outputs"]
        path = os.path.join(folder, entry["file"])
        if path.endswith(".onnx"):
            import onnxruntime

            self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            self.runner = None
        else:
            from ai_edge_litert.interpreter import Interpreter

            self.session = None
            self.runner = Interpreter(model_path=path).get_signature_runner()

    def run(self, *arrays):
        if self.session is not None:
            return self.session.run(None, dict(zip(self.names, arrays)))
        outputs = self.runner(**dict(zip(self.names, arrays)))
        return [outputs[f"output_{i}"] for i in range(self.count)]


# deploy.json: the keys each task's client reads (beside "task", "models" and
# "vocabularies", which every folder has) and the vocabularies it looks words up in
_TASK_KEYS = {
    "classifier": (("lowercase", "labels"), ("words",)),
    "pair_classifier": (("lowercase", "labels", "max_length"), ("words",)),
    "tagger": (("lowercase", "crf", "tags"), ("words",)),
    "translator": (
        (
            "default",
            "source_tokenizer",
            "target_tokenizer",
            "lowercase",
            "max_source_length",
            "max_decode_length",
        ),
        ("source", "target"),
    ),
    "language_model": (("level", "first_token", "gen_length", "states"), ("words",)),
}
_ENTRY_KEYS = {"file": str, "shapes": list, "inputs": list, "outputs": int}


def _sentencepiece(path):
    """The `sentencepiece` processor of a subword model file of the folder."""
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(
            "this translator's tokenizer is a SentencePiece model: pip install sentencepiece"
        ) from None
    return sentencepiece.SentencePieceProcessor(model_file=path)


class DeployFileError(ValueError):
    """A damaged ``deploy.json``: the message names the file and what is wrong."""


def read_deploy(path):
    """An exported folder's ``deploy.json``, checked: valid JSON, a mapping with a
    known ``task``, its ``models`` entries (file, shapes, inputs, outputs), the
    vocabularies (lists of strings) and the keys the task's client reads.

    Raises:
        DeployFileError: one line naming `path` and what is wrong (export again).
    """

    def damaged(what):
        return DeployFileError(f"{path} is damaged: {what}; export the run again.")

    try:
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
    except FileNotFoundError:
        raise DeployFileError(f"{path} not found: not an exported folder.") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise damaged(f"not valid JSON ({error})") from None
    if not isinstance(config, dict):
        raise damaged(f"a JSON {type(config).__name__} instead of an object")
    task = config.get("task")
    if task not in _TASK_KEYS:
        raise damaged(f"'task' must be one of {sorted(_TASK_KEYS)}, got {task!r}")
    models = config.get("models")
    if not isinstance(models, dict) or not models:
        raise damaged("'models' must be an object of model files")
    for name, entry in models.items():
        if not isinstance(entry, dict):
            raise damaged(f"models[{name!r}] must be an object")
        for key, kind in _ENTRY_KEYS.items():
            if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
                raise damaged(f"models[{name!r}][{key!r}] must be a {kind.__name__}")
    keys, vocabularies = _TASK_KEYS[task]
    missing = [key for key in keys if key not in config]
    if missing:
        raise damaged(f"missing key(s) {missing} of a {task} folder")
    tables = config.get("vocabularies", {})
    if not isinstance(tables, dict):
        raise damaged("'vocabularies' must be an object of token lists")
    for name in vocabularies:
        if name not in tables:
            raise damaged(f"missing vocabularies[{name!r}]")
    for name, tokens in tables.items():
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise damaged(f"vocabularies[{name!r}] must be a list of strings")
    models = config.setdefault("subword_models", {})
    for side in ("source", "target"):
        if config.get(f"{side}_tokenizer") in SENTENCEPIECE_KINDS and not isinstance(
            models.get(side), str
        ):
            raise damaged(f"the {side} side's SentencePiece model is not named in 'subword_models'")
    for key in ("labels", "tags"):
        value = config.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(t, str) for t in value)
        ):
            raise damaged(f"{key!r} must be a list of strings")
    return config


def _pad(rows, shape, dtype="int32"):
    """A batch of `rows` (nested lists of ids, ragged at every depth) as one array padded
    with 0: each dimension the longest row's (at least 1), or the file's fixed size
    where `shape` (deploy.json's, None for a dynamic dimension) fixes it."""
    depth = len(shape)
    longest = [0] * depth

    def measure(node, level):
        longest[level] = max(longest[level], len(node))
        if level + 1 < depth:
            for child in node:
                measure(child, level + 1)

    measure(rows, 0)
    target = [max(n, 1) if dim is None else dim for n, dim in zip(longest, shape)]
    if any(have > want for have, want in zip(longest[1:], target[1:])):
        raise ValueError(
            f"an input of shape {tuple(longest[1:])} does not fit the exported fixed shape "
            f"{tuple(target[1:])}: export again with a larger --sequence-length."
        )
    padded = np.zeros(target, dtype)

    def fill(node, index):
        if len(index) == depth - 1:
            padded[tuple(index)][: len(node)] = node
        else:
            for i, child in enumerate(node):
                fill(child, (*index, i))

    fill(rows, ())
    return padded


def _check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")


def _batched(model, items, run, batch_size, size=len, empty=None):
    """`run(batch)` (a list of `items` -> a result each) over `items` in batches of
    `batch_size`, or of the file's batch where `model`'s first input fixes it; sorted
    by `size` so that a batch pads little. An item that is None needs no model call and
    gets `empty` (a copy). The results in the order of `items`."""
    _check_batch_size(batch_size)
    fixed = model.shapes[0][0]
    step = batch_size if fixed is None else fixed
    present = sorted(
        (i for i, item in enumerate(items) if item is not None), key=lambda i: size(items[i])
    )
    results = [None if item is not None else dict(empty) for item in items]
    for start in range(0, len(present), step):
        chunk = present[start : start + step]
        for i, result in zip(chunk, run([items[i] for i in chunk])):
            results[i] = result
    return results


class Client:
    """An exported recipe folder: `predict` runs the classifier or the tagger as the
    recipe's SavedModel does (module docstring)."""

    def __init__(self, folder):
        self.config = read_deploy(os.path.join(folder, "deploy.json"))
        self.task = self.config["task"]
        self.models = {
            name: Runtime(folder, entry) for name, entry in self.config["models"].items()
        }
        self.ids = {
            key: {token: i for i, token in enumerate(tokens)}
            for key, tokens in self.config.get("vocabularies", {}).items()
        }
        self.subwords = {
            side: _sentencepiece(os.path.join(folder, name))
            for side, name in self.config.get("subword_models", {}).items()
        }

    def lookup(self, vocabulary, tokens):
        """Tokens -> ids in `vocabulary` (unknown -> [UNK])."""
        table = self.ids[vocabulary]
        return [table.get(token, UNK_ID) for token in tokens]

    def predict(self, inputs, batch_size=1):
        """Classifier: texts -> ``{label, probability, probabilities}`` each; pair
        classifier: ``(sentence_a, sentence_b)`` pairs -> the same, or ``{score}`` for
        relatedness; tagger: token lists -> ``{tags, probabilities}`` each (translator:
        `translate`; language model: `generate`). `batch_size` inputs share a call
        (module docstring); the results are the same at every batch size."""
        if self.task == "translator":
            return self.translate(inputs, batch_size=batch_size)
        if self.task == "language_model":
            return self.generate(inputs, batch_size=batch_size)
        model = self.models["model"]
        if self.task == "classifier":
            items, size = [self._words(text) for text in inputs], len
        elif self.task == "pair_classifier":
            limit = self.config["max_length"]
            items = [tuple(self._words(text, limit) for text in pair) for pair in inputs]
            size = lambda pair: max(map(len, pair))  # noqa: E731
        else:
            items = [self._tagger_ids(list(tokens)) for tokens in inputs]
            size = lambda item: len(item[0])  # noqa: E731
        run = getattr(self, "_" + self.task)
        empty = {"tags": [], "probabilities": []}  # a tagger's sentence of no tokens
        return _batched(model, items, run, batch_size, size, empty)

    def _words(self, text, max_length=None):
        """A text's word ids (at least one: an empty text is one [PAD], all masked)."""
        ids = self.lookup("words", split_words(text, self.config["lowercase"]))
        return ids[:max_length] or [PAD_ID]

    def _classifier(self, batch):
        """Word ids of a batch of texts -> their classes."""
        model = self.models["model"]
        (probabilities,) = model.run(_pad(batch, model.shapes[0]))
        return [self._classes(row) for row in probabilities]

    def _pair_classifier(self, batch):
        """Word ids of a batch of pairs -> the judgment as `_classifier` gives it, or
        ``{score}`` for relatedness."""
        model = self.models["model"]
        sides = ([pair[side] for pair in batch] for side in (0, 1))
        (out,) = model.run(*(_pad(rows, shape) for rows, shape in zip(sides, model.shapes)))
        if self.config["labels"] is None:  # relatedness
            return [{"score": float(row.reshape(-1)[0])} for row in out]
        return [self._classes(row) for row in out]

    def _classes(self, probabilities):
        probabilities = probabilities.astype("float64")
        labels = self.config["labels"]
        best = int(np.argmax(probabilities))
        return {
            "label": labels[best],
            "probability": float(probabilities[best]),
            "probabilities": dict(zip(labels, map(float, probabilities))),
        }

    def _tagger_ids(self, tokens):
        """A sentence's word ids and its words' character ids (None without
        characters); None for a sentence of no tokens, which needs no model call."""
        if not tokens:
            return None
        keys = [t.lower() for t in tokens] if self.config["lowercase"] else tokens
        chars = None
        if "chars" in self.ids:
            chars = [self.lookup("chars", list(t)[: self.config["max_chars"]]) for t in tokens]
        return self.lookup("words", keys), chars

    def _tagger(self, batch):
        """The ids of a batch of sentences -> ``{tags, probabilities}`` each."""
        model = self.models["model"]
        arrays = [_pad([words for words, _ in batch], model.shapes[0])]
        if "chars" in self.ids:
            arrays.append(_pad([chars for _, chars in batch], model.shapes[1]))
        outputs = model.run(*arrays)
        results = []
        for row, (words, _) in enumerate(batch):
            n = len(words)
            if self.config["crf"]:
                best, probability = outputs[0][row, :n], outputs[1][row, :n]
            else:
                probabilities = outputs[0][row, :n]
                best, probability = probabilities.argmax(-1), probabilities.max(-1)
            tags = [self.config["tags"][int(i)] for i in best]
            if self.config.get("bio"):  # trained in BIOES, reported in BIO
                tags = [re.sub("^E-", "I-", re.sub("^S-", "B-", t)) for t in tags]
            results.append({"tags": tags, "probabilities": [float(p) for p in probability]})
        return results

    def translate(self, texts, search=None, batch_size=1):
        """Translator: texts -> ``{translation, score}`` each, decoded by the graph's
        loop (`search`: ``"greedy"`` or ``"beam"``; default the run's beam size's);
        `batch_size` texts a call (module docstring)."""
        model = self.models[search or self.config["default"]]

        def run(batch):
            output, score = model.run(_pad(batch, model.shapes[0]))
            return [
                {"translation": self._detokenize(row[0]), "score": float(best[0])}
                for row, best in zip(output, score)
            ]

        items = [self._source_ids(text) for text in texts]
        return _batched(model, items, run, batch_size, empty={"translation": "", "score": 0.0})

    def _source_ids(self, text):
        """A source text's ids (at most `max_source_length`); None for a blank text."""
        ids = self.lookup("source", self._source_tokens(text))[: self.config["max_source_length"]]
        return ids if text.strip(" \t\n\r\f\v") and ids else None

    def stream_translate(self, texts):
        """Translator: greedy translations by the streaming graphs, the loop in
        Python: ``encoder`` once per text, then one ``decoder_step`` call per target
        token (token, states and the encoder's memory in; logits and states out),
        until [END] or the length limit (`max_decode_length`, and
        ceil(max_length_ratio * source length) where the run sets a ratio)."""
        return [
            {"translation": self._detokenize(ids), "score": score}
            for ids, score in (self.stream_translate_ids(text) for text in texts)
        ]

    def stream_translate_ids(self, text):
        """The greedy target ids of `text` ([END] included where reached) and their
        log-probability, by the streaming graphs (`stream_translate`)."""
        config = self.config
        ids = self._source_ids(text)
        if ids is None:
            return [], 0.0
        encoder, step = self.models["encoder"], self.models["decoder_step"]
        outputs = encoder.run(_pad([ids], encoder.shapes[0]))
        count, kept = config["stream"]["memory"], config["stream"]["states"]
        memory, states = outputs[:count], outputs[count : count + kept]
        limit = config["max_decode_length"]
        if config["max_length_ratio"]:
            length = max(int(outputs[-1][0]), 1)
            limit = min(limit, math.ceil(config["max_length_ratio"] * length))
        token, out, score = START_ID, [], 0.0
        while len(out) < limit:
            logits, *states = step.run(np.asarray([token], "int32"), *states, *memory)
            logits = logits[0].astype("float64")
            token = int(np.argmax(logits))
            peak = logits.max()
            score += float(logits[token] - peak - np.log(np.exp(logits - peak).sum()))
            out.append(token)
            if token == END_ID:
                break
        return out, score

    def _source_tokens(self, text):
        config = self.config
        return tokenize(
            text, config["source_tokenizer"], config["lowercase"], self.subwords.get("source")
        )

    def _detokenize(self, ids):
        """Target ids up to the first [END] -> text."""
        ids = [int(i) for i in ids]
        ids = ids[: ids.index(END_ID)] if END_ID in ids else ids
        target = self.config["vocabularies"]["target"]
        words = [target[i] for i in ids if i not in (PAD_ID, START_ID)]
        return detokenize(words, self.config["target_tokenizer"])

    def translate_greedy(self, texts, batch_size=1):
        """`translate` with the greedy search graph."""
        return self.translate(texts, "greedy", batch_size)

    def _prompt_ids(self, prompt):
        """[first token] + the prompt's ids (characters, or whitespace-split words)."""
        level = self.config["level"]
        tokens = list(prompt) if level == "char" else split_words(prompt)
        return [self.config["first_token"]] + self.lookup("words", tokens)

    def _continuation(self, ids):
        words = []
        for i in ids:
            if i == END_ID:
                break
            if i != PAD_ID:
                words.append(self.config["vocabularies"]["words"][int(i)])
        return ("" if self.config["level"] == "char" else " ").join(words)

    def generate(self, prompts, batch_size=1):
        """Language model: prompts -> continuations (str), decoded by the graph's loop
        (the run's method, greedy or beam search); `batch_size` prompts a call (module
        docstring)."""
        model = self.models["generate"]

        def run(batch):
            lengths = _pad([len(ids) for ids in batch], model.shapes[1])
            (out,) = model.run(_pad(batch, model.shapes[0]), lengths)
            return [self._continuation(row) for row in out]

        return _batched(model, [self._prompt_ids(p) for p in prompts], run, batch_size)

    def stream(self, prompts, max_length=None):
        """Language model: greedy continuations of `prompts`, one ``step`` call per
        token (the streaming graph: token and states in, logits and states out), the
        loop in Python; stops at [END] or after `max_length` tokens (default the run's
        gen_length)."""
        limit = max_length or self.config["gen_length"]
        return [self._continuation(self.stream_ids(p, limit)) for p in prompts]

    def stream_ids(self, prompt, max_length):
        """The greedy token ids after `prompt` ([END] included where reached), one
        ``step`` call per token."""
        step = self.models["step"]
        states = [
            np.zeros([1, *shape], "float32") for layer in self.config["states"] for shape in layer
        ]
        logits = None
        for token in self._prompt_ids(prompt):  # the prompt's tokens, as they arrive
            logits, *states = step.run(np.asarray([token], "int32"), *states)
        out: list = []
        while len(out) < max_length:
            token = int(np.argmax(logits[0]))
            out.append(token)
            if token == END_ID:
                break
            logits, *states = step.run(np.asarray([token], "int32"), *states)
        return out


def load(folder):
    """The `Client` of an exported folder."""
    return Client(folder)


def _parser():
    parser = argparse.ArgumentParser(
        prog="client.py",
        description="Runs an exported kerasrnn folder on inputs; prints the predictions as JSON.",
    )
    parser.add_argument("folder", help="the exported folder (deploy.json, the model files)")
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="texts (a tagger's words space-separated; a pair classifier's two sentences in turn)",
    )
    parser.add_argument(
        "--input",
        metavar="FILE",
        help="a UTF-8 file of inputs, one a line (a pair classifier's two sentences "
        "tab-separated), read after the INPUTs",
    )
    parser.add_argument("--batch-size", type=int, default=1, help="inputs a model call (default 1)")
    return parser


def pair_lines(lines, path):
    """A pair classifier's inputs from `path`'s lines: two sentences a line, separated
    by a tab."""
    pairs = [tuple(line.split("\t")) for line in lines]
    bad = next((n for n, pair in enumerate(pairs, 1) if len(pair) != 2), None)
    if bad is not None:
        raise ValueError(f"{path} line {bad}: a pair needs two sentences separated by a tab.")
    return pairs


def main(argv):
    """``python client.py FOLDER INPUT... [--input FILE] [--batch-size N]``: the
    predictions as JSON (a tagger's inputs are whitespace-tokenised; a pair
    classifier's are its pairs' sentences in turn, or tab-separated in the file)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"argument --batch-size: must be at least 1, got {args.batch_size}")
    if not args.inputs and args.input is None:
        parser.error("give INPUTs or --input FILE")
    lines = []
    if args.input is not None:  # read before the model loads: a wrong path fails at once
        try:
            with open(args.input, encoding="utf-8") as file:
                lines = file.read().splitlines()
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or "not a UTF-8 text file"
            print(f"client.py: error: --input {args.input}: {reason}", file=sys.stderr)
            return 2
    try:
        client = load(args.folder)
        inputs = list(args.inputs)
        if client.task == "pair_classifier":  # first, second, first, second, ...
            if len(inputs) % 2:
                raise ValueError("a pair classifier takes its INPUTs two by two.")
            inputs = list(zip(inputs[::2], inputs[1::2])) + pair_lines(lines, args.input)
        else:
            inputs += lines
    except (DeployFileError, ValueError) as error:
        print(f"client.py: error: {error}", file=sys.stderr)
        return 2
    if client.task == "tagger":
        inputs = [text.split() for text in inputs]
    predictions = client.predict(inputs, batch_size=args.batch_size)
    print(json.dumps(predictions, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
