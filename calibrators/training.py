"""Calibrate the training algorithms (NoisyGD, DP-SGD) to a target ``(epsilon, delta)``.

* :func:`calibrate_noisy_gd` -- the noise multiplier of :class:`~dpacct.mechanisms.NoisyGD`
  for a number of iterations, or the largest number of iterations for a noise multiplier;
* :func:`calibrate_dp_sgd` -- the noise multiplier of :class:`~dpacct.mechanisms.DPSGD`
  for a sampling rate (or batch size) and a number of steps (or epochs);
* :func:`naive_split_sigma` -- the noise multiplier that splitting the budget evenly,
  ``(epsilon / T, delta / T)`` per iteration, would need: the baseline that the engine's
  accounting improves on.

Every search goes through the generic :func:`~dpacct.calibrators.calibrate.calibrate` on the
algorithm itself, so the answer is checked with the algorithm's own accounting (the
composition of its primitives): the epsilon reached lies in
``[epsilon * (1 - rtol), epsilon]``.
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_positive,
    check_sample_rate,
    show_value,
)
from dpacct.mechanisms.algorithms.dp_sgd import DPSGD
from dpacct.mechanisms.algorithms.noisy_gd import NoisyGD

from .calibrate import Calibration, calibrate
from .dpsgd import analytic_gaussian_sigma, gaussian_epsilon, noise_multiplier
from .search import DEFAULT_RTOL

__all__ = ["calibrate_dp_sgd", "calibrate_noisy_gd", "naive_split_sigma"]


@overload
def calibrate_noisy_gd(
    epsilon: float,
    delta: float,
    *,
    iterations: int | None = ...,
    sigma: float | None = ...,
    rtol: float = ...,
    full_output: Literal[False] = ...,
    **fields: Any,
) -> NoisyGD: ...
@overload
def calibrate_noisy_gd(
    epsilon: float,
    delta: float,
    *,
    iterations: int | None = ...,
    sigma: float | None = ...,
    rtol: float = ...,
    full_output: Literal[True],
    **fields: Any,
) -> Calibration: ...
# long function: 51 lines are the docstring; the body is 51 lines
def calibrate_noisy_gd(
    epsilon: float,
    delta: float,
    *,
    iterations: int | None = None,
    sigma: float | None = None,
    rtol: float = DEFAULT_RTOL,
    full_output: bool = False,
    **fields: Any,
) -> NoisyGD | Calibration:
    """A :class:`~dpacct.mechanisms.algorithms.noisy_gd.NoisyGD` that meets ``(epsilon, delta)``.

    Give exactly one of

    * ``iterations = T``: find the noise multiplier ``sigma`` (continuous search; the
      epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]``);
    * ``sigma``: find the largest number of iterations ``T`` within the budget
      (``T + 1`` iterations exceed it).

    NoisyGD's privacy is ``T`` composed Gaussian mechanisms, exactly one Gaussian with
    noise multiplier ``sigma / sqrt(T)`` (Dong, Roth & Su 2019, Corollary 3.3); the
    search is steered by that exact curve (Balle & Wang 2018, Theorem 8) and settled
    with the algorithm's own (sound, rounded-up) accounting.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    iterations : int, optional
        Number of iterations, >= 1.
    sigma : float, optional
        Noise multiplier, > 0.
    rtol : float
        Relative tolerance of the continuous search, in (0, 0.5) (default 5e-5).
    full_output : bool
        Return the :class:`~dpacct.calibrators.calibrate.Calibration` (its ``mechanism`` is the
        NoisyGD) instead of the NoisyGD.
    **fields
        The other fields of NoisyGD (``loss``, ``clip`` or ``x_bound``, ...).

    Returns
    -------
    NoisyGD or Calibration

    Raises
    ------
    UnreachableTargetError
        With ``sigma``: even one iteration exceeds the budget.

    Examples
    --------
    >>> gd = calibrate_noisy_gd(1.0, 1e-5, iterations=100, loss="logistic", clip=1.0)
    >>> round(gd.sigma, 2)
    37.32
    >>> bool(0.999 <= gd.epsilon(1e-5) <= 1.0)
    True
    >>> calibrate_noisy_gd(1.0, 1e-5, sigma=37.0, loss="logistic", clip=1.0).iterations
    98
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="the Gaussian mechanism")
    if (iterations is None) == (sigma is None):
        raise TypeError(
            "give exactly one of iterations (to calibrate sigma) or sigma (to find the "
            f"largest number of iterations), got iterations={show_value(iterations)}, "
            f"sigma={show_value(sigma)}"
        )
    if iterations is not None:
        T = check_count(iterations, "iterations")
        NoisyGD(sigma=1.0, iterations=T, **fields)  # validate the fields before searching

        def family_sigma(s: float) -> NoisyGD:
            return NoisyGD(sigma=s, iterations=T, **fields)

        res = calibrate(
            family_sigma,
            eps,
            delta,
            rtol=rtol,
            increasing=False,
            estimate=lambda s: gaussian_epsilon(math.sqrt(T) / s, delta),
            name="sigma",
        )
    else:
        s0 = check_positive("sigma", sigma)
        NoisyGD(sigma=s0, iterations=1, **fields)

        def family_iterations(k: int) -> NoisyGD:
            return NoisyGD(sigma=s0, iterations=int(k), **fields)

        res = calibrate(
            family_iterations,
            eps,
            delta,
            integer=True,
            increasing=True,
            estimate=lambda k: gaussian_epsilon(math.sqrt(k) / s0, delta),
            name="iterations",
        )
    return res if full_output else res.mechanism  # type: ignore[return-value]


def calibrate_dp_sgd(
    epsilon: float,
    delta: float,
    *,
    sample_rate: float | None = None,
    batch_size: int | None = None,
    n: int | None = None,
    steps: int | None = None,
    epochs: float | None = None,
    rtol: float = DEFAULT_RTOL,
    full_output: bool = False,
    **fields: Any,
) -> DPSGD | Calibration:
    """A :class:`~dpacct.mechanisms.DPSGD` whose noise multiplier meets ``(epsilon, delta)``.

    The search is the one of :func:`~dpacct.calibrators.dpsgd.noise_multiplier` (the same
    composition of Poisson-subsampled Gaussians), confirmed by the generic
    :func:`~dpacct.calibrators.calibrate.calibrate` on the DPSGD object itself.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    sample_rate : float, optional
        Poisson sampling rate, in (0, 1].
    batch_size : int, optional
        Instead of ``sample_rate``: the expected batch size, ``sample_rate = batch_size / n``.
    n : int, optional
        Dataset size, >= 1: needed with ``batch_size``; with ``sample_rate`` it checks
        that the expected batch ``sample_rate * n`` holds at least one record.
    steps : int, optional
        Number of steps, >= 1.
    epochs : float, optional
        Instead of ``steps``: ``steps = floor(epochs / sample_rate)``.
    rtol : float
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]`` (default 5e-5).
    full_output : bool
        Return the :class:`~dpacct.calibrators.calibrate.Calibration` instead.
    **fields
        The other fields of DPSGD (``loss``, ``clip``, ``learning_rate``, ...).

    Returns
    -------
    DPSGD or Calibration

    Examples
    --------
    >>> sgd = calibrate_dp_sgd(1.0, 1e-5, batch_size=40, n=400, epochs=10, loss="logistic")
    >>> sgd.sample_rate, sgd.steps
    (0.1, 100)
    >>> bool(0.999 <= sgd.epsilon(1e-5) <= 1.0)
    True
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="DP-SGD (a subsampled Gaussian)")
    if (sample_rate is None) == (batch_size is None):
        raise TypeError(
            "give exactly one of sample_rate or batch_size, got "
            f"sample_rate={show_value(sample_rate)}, batch_size={show_value(batch_size)}"
        )
    size = None if n is None else check_count(n, "n")
    if batch_size is not None:
        b = check_count(batch_size, "batch_size")
        if size is None:
            raise TypeError("batch_size needs n (the dataset size): sample_rate = batch_size / n")
        if b > size:
            raise ValueError(f"batch_size must lie in [1, n={size}], got {b}")
        q = b / size
    else:
        q = check_sample_rate(sample_rate)
        if size is not None and q * size < 1:
            raise ValueError(
                f"sample_rate * n must be >= 1 (an expected batch of at least one record), "
                f"got sample_rate={q!r}, n={size}"
            )
    template = DPSGD(sigma=1.0, sample_rate=q, steps=steps, epochs=epochs, **fields)
    T = template.steps
    assert T is not None
    start = noise_multiplier(eps, delta, q, T, rtol=rtol)

    def family(s: float) -> DPSGD:
        return DPSGD(sigma=s, sample_rate=q, steps=steps, epochs=epochs, **fields)

    res = calibrate(family, eps, delta, rtol=rtol, increasing=False, start=start, name="sigma")
    return res if full_output else res.mechanism  # type: ignore[return-value]


def naive_split_sigma(epsilon: float, delta: float, iterations: int) -> float:
    """Noise multiplier per iteration when the budget is split evenly over the iterations.

    The naive recipe: make each of the ``T`` iterations ``(epsilon / T, delta / T)``-DP
    and add them up with basic composition (Dwork & Roth 2014, Theorem 3.16).  Each
    iteration is calibrated with the exact analytic Gaussian (Balle & Wang 2018,
    Theorem 8), so the only loss is the composition.  Compare with
    ``calibrate_noisy_gd(epsilon, delta, iterations=T).sigma``: the ratio of the two is
    how much less noise the engine's (exact) accounting needs.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0.
    delta : float
        Total delta, in (0, 1).
    iterations : int
        Number of iterations ``T``, >= 1.

    Returns
    -------
    float
        ``analytic_gaussian_sigma(epsilon / T, delta / T)``.

    Examples
    --------
    >>> naive = naive_split_sigma(1.0, 1e-5, 100)
    >>> round(naive, 1)
    362.0
    >>> gd = calibrate_noisy_gd(1.0, 1e-5, iterations=100, loss="logistic", clip=1.0)
    >>> round(naive / gd.sigma, 2)
    9.7
    """
    eps = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="the Gaussian mechanism")
    T = check_count(iterations, "iterations")
    return analytic_gaussian_sigma(eps / T, delta / T)
