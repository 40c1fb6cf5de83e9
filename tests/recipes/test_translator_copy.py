"""The translator recipe's `copy_attention` (`--copy-attention`): the run's datasets
label copied words with extended ids and its model carries a `CopyReadout` mapping
the run's vocabularies; one training step and a translation run end to end."""

import numpy as np
import pytest

from kerasrnn.data import copy_vocabulary_map
from kerasrnn.seq2seq import CopyReadout


@pytest.mark.large
def test_copy_attention_trains_and_translates_through_the_recipe(tmp_path):
    from recipes import common, translator
    from recipes.decoding import generate_settings

    config = common.load_config(
        translator.DEFAULTS,
        overrides=dict(
            output_dir=str(tmp_path / "run"),
            embedding_dim=5,
            encoder_units=6,
            decoder_units=7,
            attention_units=4,
            dropout=0.0,
            min_freq=2,
            batch_size=4,
            bucket_boundaries=[],
            beam_size=1,
            max_source_length=6,
            max_decode_length=5,
            copy_attention=True,
            coverage_weight=0.5,
        ),
    )
    (tmp_path / "run").mkdir()
    # "dora" twice in a source, once in the targets: a source word only
    sources = ["anna sieht bob", "bob sieht carl", "carl sieht anna", "dora dora sieht anna"]
    targets = ["anna sees bob", "bob sees carl", "carl sees anna", "dora sees anna"]
    prepared = translator.RECIPE.prepare(config, {"train": (sources, targets)})
    preprocessor = prepared.model["preprocessor"]
    source, target = preprocessor.source, preprocessor.target
    assert "dora" not in target.vocabulary  # seen once: outside the target vocabulary
    assert "dora" in source.vocabulary
    x, y = next(iter(prepared.train.unbatch().batch(4)))
    labels = {(int(s[0]), int(t[0])) for s, t in zip(np.asarray(x["source"]), np.asarray(y))}
    dora = source.vocabulary.token_to_id("dora")
    assert (dora, len(target.vocabulary)) in labels  # copied from source position 0
    model = translator.RECIPE.build(config, prepared)
    assert isinstance(model.copy_readout, CopyReadout)
    assert model.copy_readout.source_to_target == copy_vocabulary_map(
        source.vocabulary, target.vocabulary
    )
    assert model.copy_readout.coverage_weight == 0.5
    model.fit(prepared.train, epochs=1, verbose=0, shuffle=False)
    model.copy_readout.b.assign(np.array([-30.0], "float32"))  # copy only
    strategy = translator.search_strategy(config)
    settings = generate_settings(config, model)
    texts = model.generate(["dora sieht anna"], strategy, **settings)
    # copying only: source words alone (a word the target vocabulary lacks among them)
    assert texts[0] and set(texts[0].split()) <= {"dora", "sieht", "anna"}
