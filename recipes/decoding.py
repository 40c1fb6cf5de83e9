"""The decoding configuration of the recipes that generate (translator, language model):
the `kerasrnn.decoding` strategy the options name, and shallow fusion with a language
model's run folder."""

from recipes.config import ConfigError


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
