"""dpacct: differential-privacy accounting and calibration, sound, tight and fast.

The everyday names live here, so ``import dpacct as dp`` is all most code needs::

    >>> import dpacct as dp
    >>> step = dp.poisson_subsample(dp.GaussianMechanism(sigma=1.1), sample_rate=256 / 60_000)
    >>> run = dp.compose([step], counts=[14_063])
    >>> round(run.epsilon(delta=1e-5), 3)
    2.382
    >>> sigma = dp.noise_multiplier(epsilon=3.0, delta=1e-5, sample_rate=0.01, steps=10_000)
    >>> bool(1.5 < sigma < 1.6)
    True

The three layers are subpackages, imported on first use (``import dpacct`` itself
loads no numerical library, so ``dpacct --version`` answers at once):

* :mod:`dpacct.accountant` -- the engine: privacy curves, composition, subsampling,
  the online :class:`~dpacct.accountant.PrivacyAccountant`;
* :mod:`dpacct.mechanisms` -- the zoo: Gaussian, Laplace, randomized response, ... and
  the algorithms built on them;
* :mod:`dpacct.calibrators` -- searches for the parameter that meets a target.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

#: the layers, in the order a name is looked up: each keeps its own export list
#: (its ``__all__``), and a name exported by two layers is the first one's
#: (``GaussianMechanism``, listed by the engine and re-exported by the zoo, is the
#: engine's).  The engine's ``__init__`` is lazy (PEP 562), so asking it is cheap.
_SUBPACKAGES = ("accountant", "mechanisms", "calibrators")


def _home(name: str) -> Any:
    """The first layer whose ``__all__`` lists ``name``, or None."""
    for layer in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{layer}")
        if name in module.__all__:
            return module
    return None


def _all() -> list[str]:
    names: set[str] = set()
    for layer in _SUBPACKAGES:
        names.update(importlib.import_module(f"{__name__}.{layer}").__all__)
    return ["__version__", *_SUBPACKAGES, *sorted(names)]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "__all__":  # the layers' lists, read when asked (``import dpacct`` stays light)
        value: Any = _all()
    else:
        home = _home(name) if not name.startswith("__") else None
        if home is None:
            raise AttributeError(f"module 'dpacct' has no attribute {name!r}")
        value = getattr(home, name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__getattr__("__all__")))
