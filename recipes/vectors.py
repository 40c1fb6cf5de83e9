"""Pretrained word vectors in the recipes: the options (`EMBEDDING_OPTIONS`, and the
translator's `SIDE_EMBEDDING_OPTIONS`), a run's vectors (`load`, their coverage logged)
and their copy into the built model's embedding layers (`apply`)."""

import sys

from recipes.config import Option

# word2vec or GloVe text, fastText .vec, word2vec binary; gzip too (kerasrnn.data.vectors)
EMBEDDING_OPTIONS = {
    "embeddings": Option(None, "a word-vector file that starts the word embedding; null: off"),
    "freeze_embeddings": Option(False, "with `embeddings`: keep the word embedding fixed"),
    "embeddings_extend": Option(0, "with `embeddings`: its N most frequent words join; 0: off"),
}
SIDE_EMBEDDING_OPTIONS = {
    "source_embeddings": Option(None, "a word-vector file for the source embedding; null: off"),
    "target_embeddings": Option(None, "a word-vector file for the target embedding; null: off"),
    "freeze_embeddings": EMBEDDING_OPTIONS["freeze_embeddings"]._replace(
        help="keep the embeddings that start from vectors fixed"
    ),
    "embeddings_extend": EMBEDDING_OPTIONS["embeddings_extend"]._replace(
        help="with `source_embeddings`: its N most frequent words join; 0: off"
    ),
}


def load(config, vocabulary, key="embeddings", extend=True, lowercase=False):
    """The `WordVectors` of ``config[key]`` for `vocabulary` (extended by
    ``embeddings_extend`` words when `extend`), or None."""
    from kerasrnn.data.vectors import load_vectors

    path = config.get(key)
    if not path:
        return None
    count = config.get("embeddings_extend", 0) if extend else 0
    vectors = load_vectors(path, vocabulary, extend=count, lowercase=lowercase)
    print(f"--{key.replace('_', '-')} {vectors.describe()}", file=sys.stderr, flush=True)
    return vectors


def info(named):
    """``{"pretrained_vectors": {name: coverage}}`` of `named`'s vectors, for results.json."""
    coverage = {name: v.coverage() for name, v in named.items() if v is not None}
    return {"pretrained_vectors": coverage} if coverage else {}


def width(config, *vectors):
    """`config` with ``embedding_dim`` the vectors' width (they must share one)."""
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
    """The layer called `name` anywhere in `model`, nested layers' attributes too."""
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
    """Copies `named`'s vectors (``{layer name: WordVectors or None}``) into `model`."""
    for name, vectors in named.items():
        if vectors is not None:
            vectors.initialize(find_layer(model, name), not config["freeze_embeddings"])
    return model
