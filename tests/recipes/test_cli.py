"""The recipes' shared command line and training flow (recipes.common.Recipe): option
help and choices from one table, --help grouped with choices, switches and examples,
the docs generated from it, --version, JSON on stdout, rounded results, train
--continue and the training curves."""

import json
import os
import re
import shlex
import subprocess
import sys

import keras
import numpy as np
import pytest

from recipes import (
    classifier,
    common,
    language_model,
    options,
    pair_classifier,
    tagger,
    translator,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
TINY = {
    "embedding_dim": 8,
    "units": 8,
    "batch_size": 8,
    "epochs": 1,
    "verbose": 0,
    "bucket_boundaries": [],
    "patience": 0,
}
TEXTS = ["good film", "bad film", "great fun", "dull plot", "fine acting", "poor script"] * 4
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"] * 4


def _cli_docs():
    """tools/cli_docs.py, the generator of docs/cli.md (a script, not a package)."""
    import importlib.util

    path = os.path.join(REPO, "tools", "cli_docs.py")
    spec = importlib.util.spec_from_file_location("cli_docs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recipes():
    return [m.RECIPE for m in (classifier, tagger, language_model, translator, pair_classifier)]


def test_every_option_has_help_and_sane_choices():
    for recipe in _recipes():
        assert set(common.COMMON_OPTIONS) <= set(recipe.options), recipe.name
        for key, option in recipe.options.items():
            assert isinstance(option, common.Option), (recipe.name, key)
            assert len(option.help.split()) >= 3, (recipe.name, key, option.help)
            if option.choices is not None:
                assert option.default in option.choices, (recipe.name, key)
        # The module's DEFAULTS are the table's defaults.
        module = sys.modules[type(recipe).__module__]
        assert module.DEFAULTS == common.defaults_of(recipe.options)


def _help(recipe, *args):
    """The ``--help`` text of `recipe`'s command line `args`."""
    with pytest.raises(SystemExit) as exit_:
        recipe.main([*args, "--help"])
    assert exit_.value.code == 0
    return exit_


def _help_text(capsys, recipe, *args):
    _help(recipe, *args)
    return capsys.readouterr().out


def test_help_shows_what_an_option_does_its_choices_and_default(capsys):
    out = " ".join(_help_text(capsys, classifier, "train").split())
    # The choices are the flag's value, not prose after it; the option table's help
    # follows, the default ends the text.
    pooling = " ".join(classifier.OPTIONS["pooling"].help.rstrip(".").split())
    assert f"--pooling {{last,mean,max,concat}} {pooling} (default: last)" in out
    assert "--continue" in out
    assert "--cell {lstm,gru,simple,layer_norm_lstm,layer_norm_simple}" in out
    assert "--length-normalization {null,average,gnmt}" in " ".join(
        _help_text(capsys, language_model, "train").split()
    )
    # The range once, in short, beside the default; no "STR" and no "one of" prose.
    assert (
        "--dropout FLOAT dropout rate between recurrent layers and before the output "
        "(in [0, 1); default: 0.5)" in out
    )
    assert (
        "--epochs INT epochs to train at most (with --continue: the new total) "
        "(>= 1; default: 10)" in out
    )
    assert " STR " not in out and "; one of " not in out


def _entries(help_text):
    """``{flag: its help, one line}`` of the options of a ``--help`` text."""
    entries, flag = {}, None
    for line in help_text.splitlines():
        match = re.match(r"  (--[a-z0-9-]+)", line)
        if match:
            flag = match.group(1)
            entries[flag] = line
        elif flag and line.startswith("      "):
            entries[flag] += line
        else:
            flag = None
    return {k: " ".join(v.split()) for k, v in entries.items()}


def test_no_wrong_or_doubled_range_text_in_help(capsys):
    tagger_help = _entries(_help_text(capsys, tagger, "train"))
    # 0 is the first column, not "off or all".
    assert tagger_help["--token-column"] == (
        "--token-column INT column files: the token's column (>= 0; default: 0)"
    )
    translator_help = _entries(_help_text(capsys, translator, "train"))
    assert translator_help["--label-smoothing"] == (
        "--label-smoothing FLOAT label smoothing of the token cross-entropy "
        "(in [0, 1); default: 0.0)"
    )
    for recipe in (classifier, tagger, language_model, translator, pair_classifier):
        for flag, text in _entries(_help_text(capsys, recipe, "train")).items():
            assert "off or all" not in text, flag
            for interval in ("[0, 1)", "[0, 1]", ">= 0", ">= 1", "> 0"):
                assert text.count(f"{interval};") + text.count(f", {interval}") <= 1, flag
            assert text.count("default:") <= 1, flag


def test_train_help_is_grouped_data_model_training_decoding_run(capsys):
    expected = {
        classifier: ["data", "model", "training", "run"],
        tagger: ["data", "model", "training", "run"],
        language_model: ["data", "model", "training", "decoding", "run"],
        translator: ["data", "model", "training", "decoding", "run"],
        pair_classifier: ["data", "model", "training", "run"],
    }
    for recipe, groups in expected.items():
        out = _help_text(capsys, recipe, "train")
        headings = [
            line[: -len(" options:")]
            for line in out.splitlines()
            if line.endswith(" options:") and not line.startswith(" ")
        ]
        assert headings == groups, (recipe.__name__, headings)
        sections = _sections(out)
        # Each option is listed in its group.
        assert "--train" in sections.get("data", "") or "--train-file" in sections["data"]
        assert "--cell {" in sections["model"] and "--learning-rate" in sections["training"]
        assert "--output-dir" in sections["run"] and "--seed" in sections["run"]
    export = _sections(_help_text(capsys, translator, "export"))
    assert "--format {saved_model,onnx,litert}" in export["export"]
    assert "--quantization" in export["export"] and "--beam-size" in export["decoding"]


def _sections(text):
    """``{group: its lines}`` of a ``--help`` text."""
    sections, name = {}, None
    for line in text.splitlines():
        if line.endswith(" options:") and not line.startswith(" "):
            name = line[: -len(" options:")]
            sections[name] = ""
        elif line and not line.startswith(" "):
            name = None
        elif name:
            sections[name] += line + "\n"
    return sections


def test_every_option_of_every_recipe_has_a_help_group():
    for recipe in _recipes():
        for key, option in recipe.options.items():
            assert option.group in common.GROUPS or key in options.GROUP_OF, (recipe.name, key)
        assert common.group_of("lowercase", recipe.options.get("lowercase")) == "data"
    assert set(options.GROUP_OF.values()) <= set(common.GROUPS)


def test_booleans_are_switches_and_configs_still_take_true_false(capsys, tmp_path):
    out = " ".join(_help_text(capsys, tagger, "train").split())
    assert "--crf, --no-crf a linear-chain CRF output layer" in out
    parser = tagger.RECIPE.parser()

    def crf(*args):
        return vars(parser.parse_args(["train", *args])).get("opt_crf")

    assert crf("--crf") is True and crf("--no-crf") is False and crf() is None
    # The old form, as a config file writes it, still works.
    assert crf("--crf", "true") is True and crf("--crf", "false") is False
    assert crf("--crf=no") is False and crf("--crf", "Yes", "--epochs", "2") is True
    # Anything else is a one-line error that names the new form.
    err = _error(capsys, tagger, "train", "--crf", "maybe")
    assert "argument --crf: must be true or false, got 'maybe' (a switch: --crf or --no-crf)" in err
    # A config file takes true/false and the flag wins over it.
    config_file = tmp_path / "c.yaml"
    config_file.write_text("crf: true\nlowercase: false\n")
    config = common.load_config(tagger.OPTIONS, config_file, {"lowercase": True})
    assert config["crf"] is True and config["lowercase"] is True
    # A switch beside a positional input leaves the input alone.
    args = translator.RECIPE.parser().parse_args(["translate", "--replace-unk", "ein Haus ."])
    assert args.opt_replace_unk is True and args.texts == ["ein Haus ."]


def _error(capsys, recipe, *args):
    with pytest.raises(SystemExit) as exit_:
        recipe.main(list(args))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_every_command_has_two_examples_that_its_own_parser_takes(capsys):
    for recipe in _recipes():
        parser = recipe.parser()
        commands = recipe.commands()
        assert set(recipe.examples) == set(commands), recipe.name
        for command, examples in recipe.examples.items():
            assert len(examples) == 2, (recipe.name, command)
            for example in examples:
                args = parser.parse_args([command, *shlex.split(example)])
                assert args.command == command
            out = _help_text(capsys, recipe, command)
            epilog = out[out.index("\nexamples:\n") :]
            typed = epilog.replace(" \\\n      ", " ")  # the continuation lines joined
            for example in examples:
                assert f"python -m recipes.{recipe.name} {command} {example}".rstrip() in typed


def _default_shown(help_text, key):
    """The default that ``--help`` shows for option `key`."""
    after = re.split(rf"\n  --{key.replace('_', '-')}\b", help_text, maxsplit=1)[1]
    return re.search(r"default: (.*?)\)", " ".join(after.split())).group(1)


def test_the_demo_shows_its_own_defaults(capsys):
    demo = _help_text(capsys, translator, "demo")
    train = _help_text(capsys, translator, "train")
    for key, value in translator.DEMO_DEFAULTS.items():
        shown = json.dumps(value) if isinstance(value, (bool, list)) else str(value)
        assert _default_shown(demo, key) == shown, key
    assert _default_shown(demo, "output_dir") == "runs/translator-demo"
    assert (_default_shown(demo, "epochs"), _default_shown(demo, "beam_size")) == ("3", "4")
    assert _default_shown(train, "output_dir") == "runs/translator"
    assert (_default_shown(train, "epochs"), _default_shown(train, "beam_size")) == ("10", "5")
    # What the demo runs with: the defaults its help shows.
    assert {k: v for k, v in translator.DEMO_DEFAULTS.items()} == {
        k: v
        for k, v in common.defaults_of(
            common.with_defaults(translator.OPTIONS, translator.DEMO_DEFAULTS)
        ).items()
        if k in translator.DEMO_DEFAULTS
    }


def test_docs_list_every_option_of_every_recipe():
    cli_docs = _cli_docs()
    with open(cli_docs.PAGE, encoding="utf-8") as f:
        page = f.read()
    # Generated from the parsers and option tables: `python tools/cli_docs.py` rewrites it.
    assert cli_docs.updated(page) == page, "docs/cli.md is stale: python tools/cli_docs.py"
    for recipe in _recipes():
        for key in recipe.options:
            flag = "--" + key.replace("_", "-")
            rows = [line for line in page.splitlines() if line.startswith(f"| `{flag}` ")]
            assert rows, (recipe.name, flag)
    # Grouped as --help groups them; a switch shows both spellings.
    assert "#### tagger: training options" in page
    assert "| `--crf` / `--no-crf` |" in page


def test_unknown_choices_are_rejected_at_parse_time_with_the_allowed_list(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        classifier.main(["train", "--cell", "transformer", "--train", "missing.tsv"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        "argument --cell: invalid choice 'transformer' (choose from lstm, gru, simple, "
        "layer_norm_lstm, layer_norm_simple)"
    ) in err
    with pytest.raises(SystemExit):
        classifier.main(["train", "--naive-bayes", "3"])
    assert "choose from 0, 1, 2" in capsys.readouterr().err
    # A config file's value is checked too (before any data is read).
    config = tmp_path / "c.yaml"
    config.write_text("pooling: median\n")
    assert classifier.main(["train", "--config", str(config), "--train", "missing.tsv"]) == 2
    assert "`pooling` must be one of ['last', 'mean', 'max', 'concat'], got 'median'" in (
        capsys.readouterr().err
    )


def test_version(capsys):
    import kerasrnn

    with pytest.raises(SystemExit) as exit_:
        classifier.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"recipes.classifier {kerasrnn.__version__}"


def test_results_are_rounded():
    assert common.tidy(100.00000000000004) == 100.0
    assert common.tidy(
        {"a": [0.1 + 0.2, np.float32(1 / 3)], "b": float("nan"), "c": 3, "d": True}
    ) == {"a": [0.3, 0.33333334], "b": None, "c": 3, "d": True}


@pytest.mark.large
def test_stdout_holds_only_the_json_result(tmp_path):
    """`... > results.json` is JSON: progress bars and logs go to stderr."""
    data = tmp_path / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.classifier",
            "train",
            "--train",
            str(data),
            "--output-dir",
            str(tmp_path / "run"),
            "--embedding-dim",
            "8",
            "--units",
            "8",
            "--epochs",
            "2",
            "--verbose",
            "1",
            "--batch-size",
            "8",
            "--bucket-boundaries",
            "[]",
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)  # the whole of stdout
    assert result["train_examples"] > 0 and len(result["history"]["loss"]) == 2
    assert "Epoch 1/2" in done.stderr  # Keras' progress went to stderr
    # No float in the results carries more than 8 significant digits.
    for text in (done.stdout, (tmp_path / "run" / "results.json").read_text()):
        assert not re.search(r"\d\.\d{9,}", text), text


class _StartState(keras.callbacks.Callback):
    """The weights and optimizer step count a `fit` starts from."""

    def on_train_begin(self, logs=None):
        self.weights = [w.copy() for w in self.model.get_weights()]
        self.iterations = int(self.model.optimizer.iterations)


def _png(path):
    """(width, height) of a PNG file, read by matplotlib (which fails on a broken one)."""
    import matplotlib.image

    assert open(path, "rb").read(4) == b"\x89PNG", path
    height, width = matplotlib.image.imread(path).shape[:2]
    return width, height


@pytest.mark.large
def test_continue_extends_a_finished_run_from_its_last_epoch(tmp_path, capsys):
    run = tmp_path / "run"
    data = tmp_path / "d.tsv"
    data.write_text("".join(f"{label}\t{t}\n" for t, label in zip(TEXTS, LABELS)))
    config = common.load_config(
        classifier.OPTIONS,
        overrides={**TINY, "output_dir": str(run), "train": str(data), "valid": str(data)},
    )
    first = classifier.train(config)
    assert first["history"]["epochs_run"] == 1 and not (run / "backup").exists()
    steps = -(-len(TEXTS) // TINY["batch_size"])
    after_one = keras.saving.load_model(run / "best.keras").get_weights()

    start = _StartState()
    stored = common.saved_config(classifier.OPTIONS, str(run), {"epochs": 2})
    second = classifier.train(stored, callbacks=[start], continue_run=True)
    # It started from epoch 1's weights and optimizer state, not from scratch.
    assert start.iterations == steps
    for restored, saved in zip(start.weights, after_one):
        np.testing.assert_array_equal(restored, saved)
    history = second["history"]
    assert (history["first_epoch"], history["epochs_run"]) == (2, 1)
    assert len(history["loss"]) == len(history["val_accuracy"]) == 2
    assert history["loss"][0] == first["history"]["loss"][0]
    saved = json.loads((run / "results.json").read_text())
    assert saved["history"]["loss"] == history["loss"]
    assert [r["epoch"] for r in json.loads((run / "history.json").read_text())["rows"]] == [1, 2]
    import h5py

    # The saved optimizer went on counting: 2 epochs of steps.
    with h5py.File(run / "last.weights.h5") as f:
        found = []
        f.visititems(
            lambda name, obj: found.append(obj[()]) if name.endswith("optimizer/vars/0") else None
        )
    assert int(found[0]) == 2 * steps
    width, height = _png(run / "training_curves.png")
    assert width > 400 and height > 200

    # Through the command line: `train --continue` with the stored config.
    code = classifier.main(["train", "--continue", "--output-dir", str(run), "--epochs", "3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and len(out["history"]["loss"]) == 3
    # Not more epochs than trained: a one-line error.
    assert classifier.main(["train", "--continue", "--output-dir", str(run), "--epochs", "3"]) == 2
    assert "has trained 3 epoch(s); continuing it needs `epochs` above that, got 3" in (
        capsys.readouterr().err
    )


def test_shared_option_groups_are_defined_once():
    # Every recipe's vocabulary, cell, training and decoding options come from the
    # shared groups of recipes.options (their help begins with the group's), with the
    # recipe's own defaults.
    shared = {
        **options.vocabulary_options(1, 1, lowercase=False, embedding_dropout=0.0),
        **options.cell_options("lstm", units=1, num_layers=1, bidirectional=False),
        **options.training_options(),
        **options.decoding_options(1, sampling=True),
    }
    own = {  # the same name, another meaning in that recipe
        ("language_model", "bidirectional"),  # a biLM
        ("language_model", "embedding_dropout"),  # whole-word dropout of embedding rows
        ("language_model", "clipnorm"),  # the global norm
    }
    found = 0
    for recipe in _recipes():
        for key, option in recipe.options.items():
            if key in shared and (recipe.name, key) not in own:
                assert option.help.startswith(shared[key].help), (recipe.name, key)
                assert option.choices == shared[key].choices, (recipe.name, key)
                found += 1
    assert found > 5 * len(options.training_options()) + 20
    # The recipes' own defaults stay theirs.
    assert (tagger.DEFAULTS["epochs"], classifier.DEFAULTS["epochs"]) == (20, 10)
    assert language_model.DEFAULTS["max_vocab"] == 0 and translator.DEFAULTS["max_vocab"] == 30000
    assert language_model.OPTIONS["clipnorm"].help.startswith("clip the global gradient norm")
    # A typo in a recipe's changes is an error, not a new option.
    with pytest.raises(TypeError, match="epoch"):
        options.training_options(epoch=3)
    with pytest.raises(TypeError, match="lowercase"):
        options.vocabulary_options(10, 10, notes={"lowercase": "absent here"})
