"""How PyTorch's OpenMP threads wait between parallel regions, set before torch loads.

`OMP_WAIT_POLICY` (the environment variable) chooses:

* PASSIVE (the benchmarks' default): threads sleep at once. Robust on a loaded machine:
  there, spinning threads that get descheduled stall every step (measured: 0.9-9 s per
  LSTM step instead of 0.2-0.7 s under load 10). On an idle machine PyTorch is slower.
* default: libgomp's own policy, spinning briefly, then sleeping. On an idle machine
  PyTorch runs at its best, and it leaves the CPU to the next contender (measured:
  the Keras rows as fast as beside a passive PyTorch). The fair setting there.
* ACTIVE: threads spin until the next parallel region, taking CPU from whatever
  runs in between, the other contenders included.
"""

import functools
import os


@functools.cache  # a second call (another bench module) keeps the first one's policy
def apply():
    """Sets the policy for this process (PASSIVE unless the environment names one);
    returns its name as the benchmarks print it."""
    policy = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if policy.lower() == "default":
        del os.environ["OMP_WAIT_POLICY"]  # libgomp knows no "default": unset
        return "default"
    return policy
