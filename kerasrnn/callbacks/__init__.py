"""Keras callbacks for training runs that must survive being killed, and their curves.

* `AtomicModelCheckpoint` / `AtomicBackupAndRestore`: Keras' `ModelCheckpoint` and
  `BackupAndRestore` (same arguments) that never leave a half-written file, so a run
  killed at any moment (SIGKILL, a pre-empted machine) resumes from its last finished
  epoch when started again;
* `atomic_path` / `save_model_atomically` / `write_json_atomically`: the same guarantee
  for any file a training script writes;
* `TrainingRun`: `model.fit` into a folder that survives being killed (best and last
  checkpoints, a backup a re-run resumes from, the epochs' rows, the curves) and that a
  later `fit` continues, holding the folder's `folder_lock` (one writer at a time);
* `EpochLog`: every epoch's logs as rows, kept on disk across a resume;
* `TrainingCurves` / `plot_training_curves`: a PNG of the loss and a metric per epoch;
* `PolyakAveraging` / `ExponentialAveraging` / `NTASGD` / `StartAveraging` /
  `average_checkpoints`: weight averaging (a running or exponential average from a
  step, AWD-LSTM's non-monotone switch to the running one, OpenNMT's checkpoint
  averaging);
* `TimeBudget` / `WarmupCosineDecay` / `WarmupStableDecay` / `OneCycle` /
  `BudgetSchedule`: training fitted to a wall-clock budget (a schedule whose length
  follows the measured speed);
* `LearningRateFinder` / `find_budget_peak`: the learning-rate range test, a peak rate
  from a short sweep (and the peak policy of a time-budgeted run);
* `LanguageModelEvaluation`: a language model's perplexity on held-out streams after
  every epoch, into the logs;
* `SlantedTriangular` / `DiscriminativeAdam` / `DiscriminativeSGD` /
  `discriminative_factors` / `GradualUnfreezing`: ULMFiT's fine-tuning of a pretrained
  network (slanted triangular rates, a learning rate per layer group, unfreezing from
  the top).

Example:

>>> import os, tempfile
>>> import keras, numpy as np
>>> from kerasrnn.callbacks import AtomicBackupAndRestore, AtomicModelCheckpoint, TrainingCurves
>>> folder = tempfile.mkdtemp()
>>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
>>> model.compile("sgd", "mse")
>>> x, y = np.ones((8, 3)), np.zeros((8, 1))
>>> callbacks = [
...     AtomicModelCheckpoint(os.path.join(folder, "last.weights.h5"), save_weights_only=True),
...     AtomicBackupAndRestore(os.path.join(folder, "backup")),
...     TrainingCurves(os.path.join(folder, "curves.png"), metric=None),
... ]
>>> _ = model.fit(x, y, epochs=2, verbose=0, callbacks=callbacks)
>>> sorted(os.listdir(folder))
['curves.png', 'last.weights.h5']
"""

from kerasrnn.callbacks.averaging import (
    NTASGD,
    ExponentialAveraging,
    PolyakAveraging,
    StartAveraging,
    average_checkpoints,
)
from kerasrnn.callbacks.budget import (
    BudgetSchedule,
    OneCycle,
    TimeBudget,
    WarmupCosineDecay,
    WarmupStableDecay,
    budget_schedule,
)
from kerasrnn.callbacks.checkpoints import (
    AtomicBackupAndRestore,
    AtomicModelCheckpoint,
    atomic_path,
    partial_name,
    save_model_atomically,
    write_json_atomically,
)
from kerasrnn.callbacks.curves import EpochLog, TrainingCurves, plot_training_curves
from kerasrnn.callbacks.folder_lock import FolderLockedError, folder_lock
from kerasrnn.callbacks.language_model import LanguageModelEvaluation, language_model_perplexity
from kerasrnn.callbacks.lr_finder import (
    LearningRateFinder,
    LearningRateSearch,
    find_budget_peak,
    set_peak,
)
from kerasrnn.callbacks.run import TrainingRun
from kerasrnn.callbacks.transfer import (
    DiscriminativeAdam,
    DiscriminativeRates,
    DiscriminativeSGD,
    GradualUnfreezing,
    SlantedTriangular,
    discriminative_factors,
)

__all__ = [
    "NTASGD",
    "ExponentialAveraging",
    "PolyakAveraging",
    "StartAveraging",
    "average_checkpoints",
    "BudgetSchedule",
    "OneCycle",
    "TimeBudget",
    "WarmupCosineDecay",
    "WarmupStableDecay",
    "budget_schedule",
    "LearningRateFinder",
    "LearningRateSearch",
    "find_budget_peak",
    "set_peak",
    "DiscriminativeAdam",
    "DiscriminativeRates",
    "DiscriminativeSGD",
    "GradualUnfreezing",
    "SlantedTriangular",
    "discriminative_factors",
    "AtomicBackupAndRestore",
    "AtomicModelCheckpoint",
    "EpochLog",
    "FolderLockedError",
    "folder_lock",
    "LanguageModelEvaluation",
    "language_model_perplexity",
    "TrainingCurves",
    "TrainingRun",
    "atomic_path",
    "partial_name",
    "plot_training_curves",
    "save_model_atomically",
    "write_json_atomically",
]
