"""Pretrained word vectors in the recipes: the options (`EMBEDDING_OPTIONS` for a recipe
with one word vocabulary, `SIDE_EMBEDDING_OPTIONS` for the translator's two sides), the
vectors of a run (`load`: `kerasrnn.data.vectors.load_vectors` with the coverage logged
on stderr at the start of training and recorded in results.json) and their copy into the
built model's embedding layer, frozen or fine-tuned (`RunVectors.apply`)."""

import sys

from recipes.config import Option, count_or_zero

_FORMATS = (
    "word2vec/GloVe text with or without its 'count dim' header line, fastText .vec or "
    "word2vec binary (gzip too)"
)
EMBEDDING_OPTIONS = {
    "embeddings": Option(
        None,
        f"a word-vector file ({_FORMATS}) whose vectors start the word embedding (its "
        "width replaces `embedding_dim`; words it lacks start random at its scale); "
        "null: off",
    ),
    "freeze_embeddings": Option(
        False, "with `embeddings`: keep the word embedding fixed in training (else fine-tuned)"
    ),
    "embeddings_extend": Option(
        0,
        "with `embeddings`: the file's N most frequent words that the training data lacks "
        "join the vocabulary with their vectors (then best frozen: held-out words keep "
        "a pretrained vector); 0: off",
        check=count_or_zero("0: off"),
    ),
}
SIDE_EMBEDDING_OPTIONS = {
    "source_embeddings": Option(
        None,
        f"a word-vector file ({_FORMATS}) for the source embedding (its width replaces "
        "`embedding_dim`); null: off",
    ),
    "target_embeddings": Option(
        None,
        "a word-vector file for the target embedding (the width of the source side's, "
        "if both are given); null: off",
    ),
    "freeze_embeddings": EMBEDDING_OPTIONS["freeze_embeddings"]._replace(
        help="keep the embeddings that start from vectors fixed in training (else fine-tuned)"
    ),
    "embeddings_extend": EMBEDDING_OPTIONS["embeddings_extend"]._replace(
        help="with `source_embeddings`: the file's N most frequent words that the training "
        "sources lack join the source vocabulary with their vectors; 0: off"
    ),
}


def load(config, vocabulary, key="embeddings", extend=True, lowercase=False):
    """The `kerasrnn.data.vectors.WordVectors` of ``config[key]`` aligned to
    `vocabulary` (extended by ``embeddings_extend`` words when `extend`), its coverage
    logged; None when the option is off."""
    from kerasrnn.data.vectors import load_vectors

    path = config.get(key)
    if not path:
        return None
    count = config.get("embeddings_extend", 0) if extend else 0
    vectors = load_vectors(path, vocabulary, extend=count, lowercase=lowercase)
    print(f"--{key.replace('_', '-')} {vectors.describe()}", file=sys.stderr, flush=True)
    return vectors


def info(named):
    """``{"pretrained_vectors": {name: coverage}}`` of the loaded vectors in `named`
    (``{name: WordVectors or None}``), for results.json; {} when there are none."""
    coverage = {name: v.coverage() for name, v in named.items() if v is not None}
    return {"pretrained_vectors": coverage} if coverage else {}


def width(config, *vectors):
    """`config` with ``embedding_dim`` the vectors' width (unchanged without vectors);
    vectors of different widths are a one-line error."""
    from recipes.config import ConfigError

    dims = {v.dim: v.path for v in vectors if v is not None}
    if len(dims) > 1:
        raise ConfigError(
            "the embeddings share one width but the vector files differ: "
            + ", ".join(f"{path} is {dim}-d" for dim, path in dims.items())
            + "; give files of one width."
        )
    return dict(config, embedding_dim=next(iter(dims))) if dims else config


def find_layer(model, name):
    """The layer called `name` anywhere in `model`: in nested models' `layers` and in
    the layer attributes of subclassed layers (e.g. a `Seq2SeqBackbone`'s)."""
    import keras

    stack, seen = [model], set()
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if layer.name == name and layer is not model:
            return layer
        stack.extend(getattr(layer, "layers", ()))
        stack.extend(v for v in vars(layer).values() if isinstance(v, keras.layers.Layer))
    raise ValueError(f"the model has no layer named {name!r}")


def apply(model, config, named):
    """Copies each loaded vectors of `named` (``{embedding layer name: WordVectors or
    None}``) into that layer of the built `model`, frozen with ``freeze_embeddings``.
    Returns `model`."""
    for name, vectors in named.items():
        if vectors is not None:
            vectors.initialize(find_layer(model, name), not config["freeze_embeddings"])
    return model
