"""Command-line mistakes: each is one line on stderr naming the option, the
value and what it must be, exit status 2, with no TensorFlow start-up lines before it in
a fresh process; flags are never abbreviated; a command lists only its own options; the
``kerasrnn`` command (``python -m recipes``) dispatches to the recipes and names an
unknown one."""

import os
import subprocess
import sys

import pytest

from recipes import classifier, common, language_model, pair_classifier, tagger, translator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fresh(*args):
    """Runs ``python -m recipes.classifier ARGS`` as a user would: a fresh process, no
    TF_CPP_MIN_LOG_LEVEL set (the recipes set it), PYTHONPATH at this checkout."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    done = subprocess.run(
        [sys.executable, "-m", "recipes.classifier", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.large
@pytest.mark.parametrize(
    "args, expected",
    [
        (["--dropout", "1.5"], "argument --dropout: must be a number in [0, 1) (a rate), got 1.5"),
        (["--epoch", "1"], "unrecognized arguments: --epoch 1"),  # not taken as --epochs
    ],
)
def test_a_cli_mistake_is_one_line_with_exit_status_2_in_a_fresh_process(args, expected):
    # (a value's check and an unknown flag; the other checks' lines in this process:
    # test_numeric_options_are_range_checked_at_parse_time)
    code, out, err = _fresh("train", "--train", "data.tsv", *args)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err  # no TensorFlow log lines before it
    assert err.startswith("recipes.classifier") and expected in err, err


@pytest.mark.large
def test_help_in_a_fresh_process_has_no_tensorflow_lines():
    code, out, err = _fresh("predict", "--help")
    assert code == 0 and err == "", err
    assert out.startswith("usage: recipes.classifier predict")


def _error(capsys, recipe, *args):
    with pytest.raises(SystemExit) as exit_:
        recipe.main(list(args))  # (a recipe module, or recipes.console)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    "flag, value, must",
    [
        ("--epochs", "0", "must be an integer >= 1"),
        ("--batch-size", "2.5", "must be of type int (like its default 32), got 2.5"),
        ("--valid-fraction", "1", "must be a number in [0, 1)"),
        ("--embedding-dropout", "-0.1", "must be a number in [0, 1)"),
        ("--clipnorm", "-1", "must be a number >= 0"),
        ("--units", "many", "must be of type int (like its default 128), got 'many'"),
        ("--pooling", "sum", "invalid choice 'sum' (choose from last, mean, max, concat)"),
        ("--embedding-dim", "0", "must be an integer >= 1"),
        (
            "--bucket-boundaries",
            "[10, x]",
            "must be a list of increasing integers >= 1, e.g. [10, 20, 30] ([] for plain "
            "batching), got [10, x]",
        ),
        ("--learning-rate", "-1", "must be a number > 0 (a learning rate, e.g. 0.001), got -1"),
    ],
)
def test_numeric_options_are_range_checked_at_parse_time(capsys, flag, value, must):
    err = _error(capsys, classifier, "train", flag, value)
    assert f"argument {flag}: {must}" in err, err


def test_a_size_whose_default_is_zero_takes_zero_and_nothing_below(capsys):
    # The language model's embedding_dim 0 means "the same as units".
    assert (
        common.check_of("embedding_dim", language_model.OPTIONS["embedding_dim"]).problem(0) is None
    )
    err = _error(capsys, language_model, "train", "--embedding-dim", "-1")
    assert "argument --embedding-dim: must be an integer >= 0" in err
    for flag, value in (
        ("--top-p", "1.5"),
        ("--temperature", "0"),
        ("--beam-size", "0"),
        ("--lr-decay", "0"),
    ):
        assert f"argument {flag}:" in _error(capsys, language_model, "train", flag, value)


def test_every_numeric_option_of_every_recipe_has_a_range():
    for recipe in _recipes():
        for key, option in recipe.options.items():
            numeric = isinstance(option.default, (int, float)) and not isinstance(
                option.default, bool
            )
            if numeric or isinstance(option.default, list) and key != "train":
                check = common.check_of(key, option)
                assert check is not None, (recipe.name, key)
                assert check.problem(option.default) is None, (recipe.name, key)


def test_a_config_file_value_out_of_range_is_a_one_line_error(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("dropout: 1.5\n")
    assert classifier.main(["train", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert (
        err == "recipes.classifier train: error: `dropout` must be a number in [0, 1) "
        "(a rate), got 1.5.\n"
    )


def test_no_flag_is_abbreviated(capsys):
    err = _error(capsys, tagger, "train", "--epoch", "3")
    assert "unrecognized arguments: --epoch 3" in err
    err = _error(capsys, classifier, "predict", "--output", "runs/x")
    assert "unrecognized arguments: --output " in err  # (runs/x is an input text)


def test_commands_on_a_trained_run_list_only_their_own_options(capsys):
    with pytest.raises(SystemExit):
        tagger.main(["predict", "--help"])
    predict = capsys.readouterr().out
    with pytest.raises(SystemExit):
        tagger.main(["train", "--help"])
    train = capsys.readouterr().out
    assert "--output-dir" in predict and "--input" in predict
    for flag in ("--learning-rate", "--char-units", "--epochs", "--units"):
        assert flag in train and flag not in predict, flag

    def flags(text):
        return [line for line in text.splitlines() if line.lstrip().startswith("--")]

    assert len(flags(predict)) < len(flags(train)) / 3
    # A training option given to predict is an error, not silently ignored.
    err = _error(capsys, tagger, "predict", "--units", "8", "a b")
    assert "unrecognized arguments: --units " in err


def test_the_kerasrnn_command_runs_each_recipe_as_python_m_does(capsys, tmp_path):
    import tomllib

    from recipes import console

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["kerasrnn"] == "recipes.console:console"
    # `kerasrnn --help` lists the five recipes with what each is.
    with pytest.raises(SystemExit) as exit_:
        console.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name in cli_docs_names():
        assert f"\n  {name} " in out, name
    assert "Sequence tagging (POS, NER, chunking)" in out
    # `kerasrnn RECIPE COMMAND ...` is the recipe's own command line under its name.
    with pytest.raises(SystemExit) as exit_:
        console.main(["translator", "train", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: kerasrnn translator train")
    assert "\n  kerasrnn translator train --train '[train.de, train.en]'" in out
    err = _error(capsys, console, "classifier", "train", "--dropout", "1.5")
    assert err.startswith("kerasrnn classifier train: error: argument --dropout: must be")
    assert console.main(["language-model", "generate", "--output-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("kerasrnn language_model generate: error: ")
    parser = console.recipe_of("tagger").parser()
    assert parser.parse_args(["train", "--crf"]).opt_crf is True


@pytest.mark.parametrize(
    "args, expected",
    [
        (["translater", "train"], "kerasrnn: error: unknown recipe 'translater': choose from "),
        ([], "kerasrnn: error: a recipe is needed: classifier, tagger, "),
        (["--epochs", "3"], "kerasrnn: error: unrecognized arguments: --epochs"),
    ],
)
def test_the_kerasrnn_command_names_an_unknown_recipe_in_one_line(capsys, args, expected):
    from recipes import console

    try:
        code = console.main(args)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(expected), err


@pytest.mark.large
@pytest.mark.parametrize(
    "command, prog",
    [
        (["-m", "recipes"], "python -m recipes"),
        # What the installed console script runs (its argv[0] is the script's path).
        (
            [
                "-c",
                "import sys; sys.argv[0] = '/venv/bin/kerasrnn'; "
                "from recipes.console import console; console()",
            ],
            "kerasrnn",
        ),
    ],
)
def test_the_kerasrnn_command_in_a_fresh_process_is_quiet(command, prog):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    done = subprocess.run(
        [sys.executable, *command, "tagger", "train", "--crf", "maybe"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (  # no TensorFlow start-up lines before it
        f"{prog} tagger train: error: argument --crf: must be true or false, got 'maybe' "
        "(a switch: --crf or --no-crf) (see --help)\n"
    )


def _recipes():
    return [m.RECIPE for m in (classifier, tagger, language_model, translator, pair_classifier)]


def cli_docs_names():
    return [recipe.name for recipe in _recipes()]
