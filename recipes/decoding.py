"""The decoding configuration of the recipes that generate (translator, language model):
the `kerasrnn.decoding` strategy the options name, shallow fusion with a language
model's run folder, and the other settings of a translator's `generate`."""

from recipes.config import ConfigError, Option

# --lm / --lm-weight: shallow fusion with a target-side language model
# (`kerasrnn.decoding.ShallowFusion`), trained on the text the translator's `lm-text` writes
FUSION_OPTIONS = dict(
    lm=Option(None, "a target-side language model's run folder (`lm-text`); null: none"),
    lm_weight=Option(0.3, "with `lm`: the language model's weight"),
)

# --beam-groups: `kerasrnn.decoding.DiverseBeamSearch` (docs/decoding.md)
DIVERSE_OPTIONS = dict(
    beam_groups=Option(1, "diverse beam search: groups (dividing beam_size); 1: off"),
    beam_diversity=Option(0.5, "diverse beam search: penalty per earlier group's same token"),
)


def strategy(config, beam_size=None, n_best=1):
    """The configured `kerasrnn.decoding` strategy. ``method: sample`` draws with
    `RandomSampling` (temperature, top_k, top_p, seed); ``method: greedy`` is
    `GreedySearch`; otherwise `kerasrnn.decoding.search` of width `beam_size` (None: the
    config's) returning `n_best` hypotheses, with the config's length normalization,
    beam groups and `max_length_ratio` where it has them."""
    from kerasrnn import decoding

    method = config.get("method", "beam")
    if method == "sample":
        top_k, top_p = config["top_k"] or None, config["top_p"] or None
        return decoding.RandomSampling(config["temperature"], top_k, top_p, config["seed"])
    if method == "greedy":
        beam_size = 1
    beam_size = config["beam_size"] if beam_size is None else int(beam_size)
    ratio = config.get("max_length_ratio") or None
    groups = config.get("beam_groups", 1)
    try:
        return decoding.search(
            beam_size,
            n_best,
            decoding.Scorer(config["length_normalization"] or None),
            decoding.Constraints(max_length_ratio=ratio) if ratio else None,
            groups,
            config.get("beam_diversity", 0.0),
        )
    except ValueError as error:  # a beam that the groups do not divide
        raise ConfigError(f"--beam-groups {groups}: {error}") from None


def fusion(config, task):
    """The `ShallowFusion` of the config's `lm` (a language model's run folder) into
    `task` with weight `lm_weight` (`ShallowFusion.of`), or None without `lm`."""
    from kerasrnn import decoding
    from kerasrnn.models import LanguageModel, PresetError

    if not config.get("lm"):
        return None
    try:
        language_model = LanguageModel.from_preset(config["lm"], compile=False)
        return decoding.ShallowFusion.of(language_model, task, config["lm_weight"])
    except (PresetError, ValueError) as error:
        raise ConfigError(
            f"`lm` {config['lm']}: {error} (a language model run trained with "
            "--vocabulary-file <this run>/target_vocab.txt)"
        ) from None


def generate_settings(config, task):
    """A translator's `generate` settings of the run: its length, readout precision and
    fusion (`Seq2Seq.generate`'s ``max_length``, ``readout_dtype``, ``fusion``)."""
    return {
        "max_length": config["max_decode_length"],
        "readout_dtype": config["readout_dtype"],
        "fusion": fusion(config, task),
    }
