"""Which sampling rate an Opacus run's ledger records: the data path's, never a guess.

Opacus hands its accountant a rate in three places: the optimiser hook's
``sample_rate`` (always ``1 / len(data_loader)``, whatever the loader samples), the
``history`` its noise-multiplier search assigns (the same number), and a user's own
``step(sample_rate=...)``.  None of them is read from the sampler.  A loader built on
Opacus' Poisson sampler with its own ``sample_rate`` -- ``DataLoader(ds,
batch_sampler=UniformWithReplacementSampler(num_samples=240, sample_rate=0.5,
steps=20))`` given to ``make_private(..., poisson_sampling=False)`` -- draws records at
0.5 while the hook says ``1 / 20 = 0.05``; recording the hook's number under-reports
epsilon ninefold (1.31 instead of 11.53 at sigma 1.2, delta 1e-5).

So the identified data path (:func:`~dpacct._opacus_data_path.identify`) is the one
source of the rate, and the numbers passed in are only compared with it:

* the hook records the path's rate: a Poisson sampler's own ``sample_rate``; for
  fixed-size schemes ``k / len(data_loader)`` for ``k`` accumulated batches (it
  counts batches, not a Poisson rate); the comparison is kept for the summary;
* an assigned ``history`` entry below a verified Poisson rate is raised to it, one
  above is kept (both are the safe direction: a larger rate never costs less);
* a user's ``step()`` whose rate differs from a verified Poisson rate is refused,
  naming both numbers: which of the two the step ran at cannot be told;
* under the override ``assume_poisson=True`` nothing is verified, and the larger of
  the assumed and the passed rate is recorded.
"""

from __future__ import annotations

import math
import numbers

from dpacct._opacus_data_path import POISSON, DataPath
from dpacct.accountant.validation import check_count

__all__ = [
    "check_history",
    "check_step",
    "hook_rate",
    "normaliser_note",
    "rate_note",
    "resolve_history",
    "step_rate",
]

#: relative difference below which two rates are the same number (float round-off of
#: ``1 / len(loader)`` and friends)
_SAME = 1e-12


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= _SAME * max(a, b)


def check_step(noise_multiplier: object, sample_rate: object, where: str) -> tuple[float, float]:
    """Validate one step's parameters; ``where`` prefixes the parameter names.

    Examples
    --------
    >>> check_step(1.0, 0.25, "")
    (1.0, 0.25)
    """
    sigma = _real(f"{where}noise_multiplier", noise_multiplier)
    if not (math.isfinite(sigma) and sigma >= 0.0):
        raise ValueError(f"{where}noise_multiplier must lie in [0, inf), got {sigma!r}")
    q = _real(f"{where}sample_rate", sample_rate)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"{where}sample_rate must lie in (0, 1], got {q!r}")
    return sigma, q


def _real(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got bool {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item) and getattr(value, "ndim", 1) == 0:
        return _real(name, item())
    raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")


def check_history(history: object, name: str) -> list[tuple[float, float, int]]:
    """Opacus' history as a validated list of ``(sigma, q, steps)`` tuples.

    Examples
    --------
    >>> check_history([(1.0, 0.1, 3)], "history")
    [(1.0, 0.1, 3)]
    """
    if isinstance(history, str | bytes) or not isinstance(history, list | tuple):
        raise ValueError(
            f"{name} must be a list of (noise_multiplier, sample_rate, steps), "
            f"got {type(history).__name__}"
        )
    out: list[tuple[float, float, int]] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError(
                f"{name}[{i}] must be a (noise_multiplier, sample_rate, steps) triple, "
                f"got {entry!r}"
            )
        sigma, q = check_step(entry[0], entry[1], f"{name}[{i}].")
        out.append((sigma, q, check_count(entry[2], f"{name}[{i}].steps")))
    return out


def _verified_poisson(path: DataPath | None) -> bool:
    return path is not None and path.scheme == POISSON and not path.assumed


def hook_rate(path: DataPath | None, passed: float, k: int) -> float:
    """The rate the hook records for a step of ``k`` batches; ``passed`` is Opacus' number.

    Parameters
    ----------
    path : DataPath or None
        The identified data path (None: the hook's number is all there is).
    passed : float
        The ``sample_rate`` Opacus gave ``get_optimizer_hook_fn`` (``1/len(loader)``).
    k : int
        Batches accumulated into the step.

    Examples
    --------
    >>> path = DataPath("poisson", "UniformWithReplacementSampler", 20, 0.5)
    >>> hook_rate(path, 0.05, 1)        # the sampler's rate, not Opacus' 1/len(loader)
    0.5
    >>> hook_rate(DataPath("shuffle", "RandomSampler", 10, 0.1, 24), 0.1, 2)
    0.2
    """
    if path is None:
        return min(1.0, passed * k)
    if path.scheme == POISSON:
        rate = path.sample_rate if not path.assumed else max(path.sample_rate, passed)
        return min(1.0, rate * k)
    return min(1.0, k / path.steps_per_epoch)


def step_rate(path: DataPath | None, given: float) -> float:
    """The rate a user's ``step(sample_rate=given)`` records; refuses a contradiction.

    Raises
    ------
    ValueError
        ``given`` differs from a verified Poisson sampler's rate (both are named).

    Examples
    --------
    >>> step_rate(None, 0.01)
    0.01
    """
    if _verified_poisson(path) and not _same(given, path.sample_rate):
        raise ValueError(
            f"step(sample_rate={given:.6g}) but the data path is {path.describe()}: the "
            f"sampler draws at rate {path.sample_rate:.6g}, and which of the two this "
            "step ran at cannot be told; nothing was recorded (steps of the accounted "
            "loader are recorded by Opacus' hook; for another loader use another "
            "accountant)"
        )
    return given


def resolve_history(
    path: DataPath | None, history: list[tuple[float, float, int]]
) -> list[tuple[float, float, int]]:
    """An assigned history with every rate below a verified Poisson rate raised to it.

    Opacus' noise-multiplier search assigns ``[(sigma, 1 / len(data_loader), steps)]``;
    with a Poisson sampler of another rate the run draws at the sampler's rate, so
    that is what is accounted.  A larger rate is kept (safe: it never costs less).

    Examples
    --------
    >>> path = DataPath("poisson", "UniformWithReplacementSampler", 20, 0.5)
    >>> resolve_history(path, [(1.2, 0.05, 20), (1.0, 0.6, 2)])
    [(1.2, 0.5, 20), (1.0, 0.6, 2)]
    """
    if not _verified_poisson(path):
        return history
    q = path.sample_rate
    return [(s, q if r < q else r, n) for s, r, n in history]


def rate_note(path: DataPath | None, passed: float | None) -> str | None:
    """One line for the summary when Opacus' rate and the recorded one differ.

    Examples
    --------
    >>> path = DataPath("poisson", "UniformWithReplacementSampler", 20, 0.5)
    >>> print(rate_note(path, 0.05).split("; ")[1])
    the sampler's own rate 0.5 is recorded
    """
    if passed is None or path is None:
        return None
    if path.scheme == POISSON:
        recorded = path.sample_rate if not path.assumed else max(path.sample_rate, passed)
        what = "the sampler's own rate" if not path.assumed else "the larger rate"
    else:
        recorded = 1.0 / path.steps_per_epoch
        what = "one batch of the identified loader per step, rate"
    if _same(passed, recorded):
        return None
    return (
        f"Opacus' hook passed sample_rate {passed:.6g} (1/len(data_loader)); "
        f"{what} {recorded:.6g} is recorded"
    )


def normaliser_note(dataset_size: int, sample_rate: float, normaliser: int) -> str | None:
    """Why a Poisson run's guarantee is read for zero-out neighbours, or None (add/remove).

    Opacus divides the noisy sum of clipped gradients by ``normaliser =
    int(len(dataset) * sample_rate)`` (``expected_batch_size``), a function of the
    dataset size (Opacus issue #819).  Where it is the same for ``n - 1``, ``n`` and
    ``n + 1`` records, the division is one fixed post-processing and the add/remove
    guarantee of the noisy sum holds for the released gradients; where it differs, the
    two neighbours' outputs are scaled differently (distinguishable in high dimension),
    and the guarantee holds for zero-out neighbours only (a record's gradient replaced
    by zero, the dataset size public), whose privacy profile for the Poisson-subsampled
    Gaussian is the same pair of distributions (docs/theory/opacus_normalisation.md).

    Parameters
    ----------
    dataset_size : int
        ``len(dataset)``.
    sample_rate : float
        The rate Opacus derived the normaliser from (``1 / len(data_loader)``).
    normaliser : int
        Opacus' ``expected_batch_size``.

    Examples
    --------
    >>> normaliser_note(250, 0.1, 25) is None      # 24.9, 25.1: floor 24 and 25
    False
    >>> normaliser_note(255, 0.1, 25) is None      # 25.4 and 25.6: floor 25 both
    True
    """
    others = {int((dataset_size + d) * sample_rate) for d in (-1, 1)}
    if others == {normaliser}:
        return None
    low, high = min(others | {normaliser}), max(others | {normaliser})
    return (
        f"Opacus divides the noisy gradient sum by int(len(dataset) * sample_rate) = "
        f"{normaliser}, which is {low if low != normaliser else high} for a dataset one "
        "record smaller or larger (Opacus issue #819): the add/remove guarantee does not "
        "hold for the released gradients; the number holds for zero-out neighbours (a "
        "record's gradient replaced by zero, the dataset size public)"
    )
