"""The recipe skeleton: `Recipe` (one train / evaluate / predict / export flow and
one command line, filled in by a few hooks) and `Prepared` (what `Recipe.prepare`
returns)."""

import contextlib
import os
import sys
from typing import Any, NamedTuple

from recipes import run_folder
from recipes.cli import build_parser, main
from recipes.config import ConfigError, RecipeError, defaults_of
from recipes.files import read_json, run_files, saved_config, tidy, write_json
from recipes.options import COMMON_OPTIONS
from recipes.training import distribution, fit, load_splits, set_seed
from recipes.usage import EXAMPLES

# `export --format`: kerasrnn.export.bundle.FORMATS, spelled out so that --help needs
# no Keras import
EXPORT_FORMATS = ("saved_model", "onnx", "litert")
# `export --quantization`, per format (kerasrnn.export.onnx / litert's QUANTIZATIONS)
EXPORT_QUANTIZATIONS = {"onnx": ("dynamic_int8",), "litert": ("dynamic_int8", "float16")}


def _log(line):
    print(line, file=sys.stderr, flush=True)


class Prepared(NamedTuple):
    """What `Recipe.prepare` returns: the data for `fit`, what `Recipe.build` needs
    (`model`: the preprocessor, pretrained vectors ...) and facts for results.json."""

    train: Any
    valid: Any
    model: dict
    info: dict


class Recipe:
    """The skeleton every recipe fills in: one train / evaluate / predict / export flow
    and one command line.

    A run folder is a preset (`kerasrnn.models.Task.from_preset`): its ``best.keras``
    holds the trained task with its preprocessor, named by ``preset.json``; `load`
    reads it, and ``evaluate``, ``predict`` and ``export`` run that task.

    Class attributes: `name` (the module ``recipes.<name>``, whose docstring's first
    paragraph is the `description`), `options`, `task` (the `kerasrnn.models` class it
    trains), `holdouts` (splits ``<split>_fraction`` may hold out), `metric` (of the
    curves), `test_help`, `predict_command` (predict, translate, generate) and
    `run_options` (what the commands on a trained run take beyond `RUN_OPTIONS`). The
    hooks below fill in the flow: `load_examples`, `prepare`, `build` and `evaluate_run`
    have no default.
    """

    name = None
    options = COMMON_OPTIONS
    task = "Task"
    holdouts = ()
    metric = "accuracy"
    test_help = "the labelled data"
    predict_command = "predict"
    run_options = ()

    # The options every command on a trained run takes (not only `train`): where the
    # run is, the test data and how to read it, progress output.
    RUN_OPTIONS = tuple(
        "output_dir test encoding tfds_data_dir format batch_size verbose seed".split()
    )

    def options_of(self, command):
        """The options a command on a trained run takes: `RUN_OPTIONS`, `run_options`."""
        wanted = set(self.RUN_OPTIONS) | set(self.run_options)
        return [key for key in self.options if key in wanted]

    @property
    def defaults(self):
        return defaults_of(self.options)

    @property
    def examples(self):
        """``{command: [arguments, ...]}`` of its ``--help`` (`recipes.usage`)."""
        return EXAMPLES.get(self.name, {})

    @property
    def description(self):
        """The first paragraph of the recipe module's docstring."""
        doc = sys.modules[type(self).__module__].__doc__ or ""
        return " ".join(doc.split("\n\n")[0].split())

    # ---- hooks ---------------------------------------------------------------------
    def load_examples(self, config, spec, split):
        """One data spec -> the split's examples as columns, e.g. ``(texts, labels)``."""
        raise NotImplementedError

    def load_splits(self, config):
        """``{"train", "valid", "test"}`` examples (None where absent)."""
        return load_splits(config, self.load_examples, self.holdouts)

    def check_config(self, config):
        """Raises a `ConfigError` for options that cannot work together."""

    def check_data(self, config, splits):
        """Raises a `RecipeError` for data the recipe cannot use (before training)."""

    def prepare(self, config, splits):
        """The preprocessor and the datasets: a `Prepared`."""
        raise NotImplementedError

    def build(self, config, prepared):
        """The compiled Keras model (called inside the strategy's scope)."""
        raise NotImplementedError

    def monitor(self, config, prepared):
        """``(logged value, "min" | "max")`` that picks the best epoch."""
        return "val_loss", "min"

    def curve_metric(self, config):
        """The metric ``training_curves.png`` plots beside the loss."""
        return self.metric

    def fit_callbacks(self, config, prepared):
        """Callbacks run before the checkpoints (one that logs the monitored value)."""
        return []

    def summarize(self, config, prepared, results, rows):
        """The results after training (`rows`: every epoch's logs)."""
        return results

    def after_fit(self, config, prepared, splits):
        """Runs after training, before the evaluation (e.g. rewrite ``best.keras``)."""

    def evaluate_splits(self, config, splits):
        """The scores of the best model on the valid and test splits."""
        trained, results = None, {}
        for name in ("valid", "test"):
            if splits.get(name):
                trained = trained or self.load(config)
                results[name] = self.evaluate_run(trained, config, splits[name])
        return results

    def load(self, config):
        """The run's trained task: `from_preset` of its folder."""
        import zipfile

        import kerasrnn

        run_folder.recover(config["output_dir"])
        try:
            return getattr(kerasrnn.models, self.task).from_preset(config["output_dir"])
        except kerasrnn.models.PresetError:
            raise
        except (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile) as error:
            # Keras' own errors of a file cut short or changed (a bad zip, a CRC that
            # does not match, "File not found" for a truncated archive): one line
            reason = " ".join(str(error).split())[:240] or type(error).__name__
            raise RecipeError(
                f"{run_files(config)['best']} is damaged: it does not load as a .keras "
                f"archive ({reason}); train the run again (train --overwrite)."
            ) from None

    # ---- the flow ------------------------------------------------------------------
    def train(self, config, splits=None, callbacks=(), continue_run=False):
        """Trains `config` (complete: `load_config` of the options) into its run folder,
        on `splits` (``{"train": examples, "valid": ..., "test": ...}``) or its data,
        with extra Keras `callbacks`; `continue_run` extends the finished run there.
        Returns the results (results.json). A `RunFolderError` when another process
        writes there, or (command line) the run there may not be replaced."""
        self.check_config(config)
        strategy, config = distribution(config)  # multi_worker: a folder per worker
        with run_folder.lock(config["output_dir"]):  # one writer at a time
            continue_run, replacing = run_folder.claim(config, continue_run, log=_log)
            if replacing:  # --overwrite: the old run goes once the new one has an epoch
                callbacks = [*callbacks, run_folder.discard_previous_callback(config["output_dir"])]
            results = self._train_locked(config, strategy, splits, callbacks, continue_run)
            run_folder.discard_previous(config["output_dir"])
            return results

    def _train_locked(self, config, strategy, splits, callbacks, continue_run):
        import time

        set_seed(config["seed"])
        splits = splits or self.load_splits(config)
        self.check_data(config, splits)
        files = run_files(config)
        write_json(files["config"], config)
        prepared = self.prepare(config, splits)
        with strategy.scope():
            model = self.build(config, prepared)
            if continue_run:
                from kerasrnn.callbacks import TrainingRun

                try:
                    TrainingRun(config["output_dir"]).restore_last_epoch(model)
                except ValueError as error:  # e.g. other data: another vocabulary
                    reason = " ".join(str(error).split())[:240]
                    raise RecipeError(
                        f"{run_files(config)['last']} does not fit the model that this "
                        f"config and data build ({reason}): --continue trains the run on "
                        "with its own data and options."
                    ) from None
        from kerasrnn.models.preset import write_preset_file

        # the run folder is the task's preset: its best epoch, once written
        write_preset_file(config["output_dir"], type(model), os.path.basename(files["best"]))
        monitor, mode = self.monitor(config, prepared)
        began = time.perf_counter()
        history = fit(
            model,
            config,
            prepared.train,
            prepared.valid,
            monitor,
            mode,
            callbacks=callbacks,
            continue_run=continue_run,
            before=self.fit_callbacks(config, prepared),
            metric=self.curve_metric(config),
        )
        results = dict(prepared.info)
        results.update(
            parameters=int(model.count_params()),
            replicas=int(strategy.num_replicas_in_sync),
            train_seconds=time.perf_counter() - began,
            history=history,
        )
        for key in ("time_budget", "find_lr"):  # {minutes, seconds_used, ...}, {pick, ...}
            if key in history:
                results[key] = history.pop(key)
        results = self.summarize(
            config, prepared, results, read_json(files["history"], ("rows",), dict)["rows"]
        )
        self.after_fit(config, prepared, splits)
        results.update(self.evaluate_splits(config, splits))
        results = tidy(results)
        write_json(files["results"], results)
        return results

    # ---- the command line ----------------------------------------------------------
    def predict_arguments(self, parser):
        parser.add_argument("texts", nargs="*", help="inputs, one per argument")
        parser.add_argument("--input", help="a file with one input per line")

    def inputs_of(self, config, args):
        """The positional inputs and the lines of ``--input``."""
        from kerasrnn.data.loaders import read_lines

        texts = list(args.texts)
        if args.input:
            texts += [line for _, line in read_lines(args.input, config.get("encoding", "utf-8"))]
        return texts

    def evaluate_run(self, trained, config, examples):
        """``evaluate``'s result: the trained task's scores on the test examples."""
        raise NotImplementedError

    def predict_rows(self, trained, config, texts, args=None):
        """``predict``'s result: one dict per input."""
        if not texts:  # (Keras' predict would take an empty list for no arrays)
            return []
        return [{"text": t, **p} for t, p in zip(texts, trained.predict(texts))]

    def export_options(self, config):
        """`export_task`'s settings beyond the format (a generative task's decoding)."""
        return {}

    def stored(self, config, args):
        """The config the run in ``--output-dir`` was trained with, flags on top."""
        run_folder.recover(config["output_dir"])
        return saved_config(self.options, config["output_dir"], args.overrides)

    def _train(self, config, args):
        if args.continue_run and args.overwrite:
            raise ConfigError("--continue and --overwrite exclude each other: choose one.")
        if args.continue_run:
            with run_folder.policy("continue"):
                return self.train(self.stored(config, args), continue_run=True)
        with run_folder.policy("overwrite" if args.overwrite else "new"):
            return self.train(config)

    def _evaluate(self, config, args):
        config = self.stored(config, args)
        if not config["test"]:
            raise ConfigError(f"evaluate needs `--test` ({self.test_help}).")
        results = self.evaluate_run(
            self.load(config), config, self.load_examples(config, config["test"], "test")
        )
        write_json(os.path.join(config["output_dir"], "evaluation.json"), results)
        return results

    def _predict(self, config, args):
        config = self.stored(config, args)
        return self.predict_rows(self.load(config), config, self.inputs_of(config, args), args)

    def _export(self, config, args):
        config = self.stored(config, args)
        if config["verbose"] == 3:  # the converters' own messages, as they come
            import logging

            logging.getLogger("kerasrnn.export").setLevel(logging.DEBUG)
        fmt = args.export_format
        path = args.export_dir or os.path.join(config["output_dir"], fmt)
        quantization = None if args.quantization == "none" else args.quantization
        if quantization and quantization not in EXPORT_QUANTIZATIONS.get(fmt, ()):
            formats = [f for f, allowed in EXPORT_QUANTIZATIONS.items() if quantization in allowed]
            raise ConfigError(
                f"--quantization {quantization} does not apply to --format {fmt}: use "
                f"--format {' or '.join(formats)}, or --quantization none."
            )
        # writing into the run folder: one writer at a time (elsewhere export only
        # reads the run, as predict does: its last complete checkpoint)
        run = config["output_dir"]
        inside = os.path.realpath(path).startswith(os.path.realpath(run) + os.sep)
        with run_folder.lock(run) if inside else contextlib.nullcontext():
            if inside:
                run_folder.restore_previous(run)
            from kerasrnn.export import export_task

            try:
                export_task(
                    self.load(config),
                    path,
                    fmt,
                    sequence_length=args.sequence_length,
                    quantization=quantization,
                    **self.export_options(config),
                )
            except ValueError as error:  # what the format cannot hold, in one line
                raise ConfigError(f"--format {fmt}: {error}") from None
        return {fmt: path}

    def commands(self):
        """``{name: (help, add_arguments, run[, option names])}`` (no names: all)."""

        def train_arguments(parser):
            on = "train the run in --output-dir on to --epochs (its config, flags on top)"
            parser.add_argument("--continue", dest="continue_run", action="store_true", help=on)
            over = "start over in --output-dir (its run goes once the new one has an epoch)"
            parser.add_argument("--overwrite", action="store_true", help=over)

        def export_arguments(parser):
            parser = parser.group("export")  # the "export options" of its --help
            parser.add_argument(
                "--export-dir", metavar="DIR", help="default: <output_dir>/<format>"
            )
            parser.add_argument(
                "--format",
                dest="export_format",
                default="saved_model",
                choices=EXPORT_FORMATS,
                help="saved_model: strings in and out; onnx, litert: ids, vocabularies, client.py",
            )
            parser.add_argument(
                "--sequence-length",
                metavar="INT",
                type=int,
                default=64,
                help="tokens per input of a LiteRT file (fixed shapes; default: 64)",
            )
            parser.add_argument(
                "--quantization",
                default="none",
                choices=("none", "dynamic_int8", "float16"),
                help="onnx or litert weights: none (default), dynamic_int8, float16 (litert)",
            )

        run = self.options_of("run")
        commands = {
            "train": (f"train a {self.name} and evaluate it", train_arguments, self._train),
            "evaluate": (f"evaluate a trained {self.name} on --test", None, self._evaluate, run),
            self.predict_command: (
                f"run a trained {self.name} on inputs",
                self.predict_arguments,
                self._predict,
                run,
            ),
            "export": (
                "export a SavedModel taking raw strings, or an ONNX / LiteRT model "
                "of token ids with its vocabularies and a reference client",
                export_arguments,
                self._export,
                # --format is the export's format here, not the data format
                [key for key in run if key != "format"],
            ),
        }
        commands.update(self.extra_commands())
        return commands

    def extra_commands(self):
        """More commands, or replacements, as `commands` gives them."""
        return {}

    def parser(self, prog=None):
        """The recipe's whole parser (`prog`: default ``recipes.NAME``); runs nothing."""
        return build_parser(
            prog or f"recipes.{self.name}",
            self.description,
            self.options,
            self.commands(),
            self.examples,
        )

    def main(self, argv=None, prog=None):
        """The recipe's command line (`prog`: default ``recipes.NAME``): the exit status."""
        argv = sys.argv[1:] if argv is None else argv
        return main(argv, self.parser(prog), self.options, self.commands())
