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

from ._exports import LAYERS

#: public name -> the subpackage that defines it (loaded lazily by ``__getattr__``),
#: from the one export table: the first layer listing a name is its home
_EXPORTS: dict[str, str] = {}
for _layer, _names in LAYERS.items():
    for _name in _names:
        _EXPORTS.setdefault(_name, _layer)
del _layer, _names, _name

_SUBPACKAGES = tuple(LAYERS)

__all__ = ["__version__", *_SUBPACKAGES, *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module 'dpacct' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
