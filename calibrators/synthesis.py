"""Calibrate a :class:`~dpacct.mechanisms.MarginalSynthesizer` to a privacy budget.

The budget is split between the ``k`` measured marginals (all with the same noise
scale) and the row count by ``count_fraction``:

* **Laplace, pure DP** (``delta = 0``): basic composition of pure-DP mechanisms is
  exact for the pure parameter (Dwork, McSherry, Nissim, Smith 2006; Dwork & Roth 2014,
  Theorem 3.16), so ``k / scale + 1 / count_scale = epsilon`` is solved in closed form:
  the count gets ``count_fraction * epsilon`` (``count_scale = 1 / (f epsilon)``), each
  marginal ``(1 - f) epsilon / k`` (``scale = k / ((1 - f) epsilon)``).
* **Laplace, approximate DP** (``delta > 0``): the composed Laplace mechanisms spend
  less than their pure epsilon at ``delta > 0`` (privacy loss distribution accounting),
  so the closed-form scales are a conservative start; the common factor of both scales
  (their ratio fixed as above) is then calibrated with :func:`dpacct.calibrators.calibrate`.
* **Gaussian** (``delta > 0``): Gaussian mechanisms compose exactly through
  ``1 / sigma^2`` (Dong, Roth, Su 2019, Corollary 3.3), so the budget is split in that
  currency: ``k / scale^2 = (1 - f) / s^2`` and ``1 / count_scale^2 = f / s^2``; the
  common scale ``s`` (the noise multiplier of the whole run) is calibrated with
  :func:`dpacct.calibrators.calibrate`.

In the calibrated cases the run's epsilon at ``delta`` lies in
``[epsilon * (1 - rtol), epsilon]``.

:func:`calibrate_mst` does the same for :class:`~dpacct.mechanisms.MST`, whose budget
is the zCDP ``rho`` split in thirds by the paper: it finds the largest ``rho`` whose
run -- the composition of its Gaussian measurements and exponential-mechanism
selections, accounted by the engine -- meets ``(epsilon, delta)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpacct.accountant.validation import (
    check_delta,
    check_finite,
    check_positive,
    check_probability,
    check_tol,
)
from dpacct.mechanisms.algorithms.synthesis import Column, MarginalSynthesizer
from dpacct.mechanisms.algorithms.synthesis_aim import AIM
from dpacct.mechanisms.algorithms.synthesis_mst import MST
from dpacct.mechanisms.primitives.noise import NOISES

from .calibrate import calibrate
from .search import DEFAULT_RTOL

__all__ = ["calibrate_aim", "calibrate_mst", "calibrate_synthesizer"]


#: the choices of ``noise`` in :func:`calibrate_synthesizer`
_NOISE_CHOICES = ("auto", *NOISES)


def calibrate_synthesizer(
    epsilon: float,
    delta: float,
    columns: Sequence[Column],
    marginals: str | Sequence[Sequence[str]] = "2-way",
    noise: str = "auto",
    count_fraction: float = 0.1,
    *,
    rtol: float = DEFAULT_RTOL,
    tol: float | None = None,
    count: str | int | None = "measure",
) -> MarginalSynthesizer:
    """A :class:`MarginalSynthesizer` whose whole run meets ``(epsilon, delta)``.

    ``noise='auto'`` (the default) chooses the noise, and the returned object's
    ``noise`` says which: Laplace at ``delta = 0`` (the only pure-DP option); at
    ``delta > 0`` both are calibrated to the target and the one with the smaller noise
    variance per marginal cell (``2 b^2`` for Laplace, ``sigma^2`` for Gaussian) is
    returned -- Gaussian unless very few marginals are measured, since Gaussians compose
    in ``1/sigma^2`` (issue 38 measured Laplace 11 % and 32 % worse than Gaussian on two
    tables at ``delta > 0``; both noises are unbiased, so the variance ranks them).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta: ``0`` (pure DP, Laplace only) or in ``(0, 1)``.
    columns : sequence of column specifications
        The public columns (see :class:`MarginalSynthesizer`).
    marginals : '1-way', '2-way' or sequence of column-name tuples
        What to measure (see :class:`MarginalSynthesizer`).
    noise : 'auto', 'laplace' or 'gaussian'
        The noise of every release; ``delta = 0`` needs ``'laplace'`` (which ``'auto'``
        picks there); ``'auto'`` at ``delta > 0``: the smaller noise variance (above).
    count_fraction : float
        Share of the budget spent on the row count, in ``(0, 1)`` (of epsilon for pure
        Laplace, of ``1/sigma^2`` otherwise); unused unless ``count='measure'``.
    rtol : float
        Calibrated cases: the epsilon reached is within ``rtol`` (relative) below the
        target.
    tol : float, optional
        Accuracy passed to the accountant.
    count : 'measure', None or int
        As :class:`MarginalSynthesizer`: with ``None`` (no count release) or a public
        number of rows the whole budget goes to the marginals.

    Returns
    -------
    MarginalSynthesizer

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.synthesis import CategoricalColumn
    >>> cols = [CategoricalColumn(n, [0, 1]) for n in "abc"]
    >>> syn = calibrate_synthesizer(1.0, 0.0, cols, "2-way", "laplace", count_fraction=0.25)
    >>> round(syn.scale, 6), round(syn.count_scale, 6), round(syn.pure_epsilon, 9)
    (4.0, 4.0, 1.0)
    >>> syn = calibrate_synthesizer(1.0, 1e-6, cols, "2-way", "gaussian")
    >>> bool(0.999 <= syn.epsilon(1e-6) <= 1.0)
    True
    >>> calibrate_synthesizer(1.0, 0.0, cols, "2-way", "laplace", count=None).scale
    3.0
    >>> calibrate_synthesizer(1.0, 1e-6, cols).noise     # 3 pairs: Laplace still wins
    'laplace'
    >>> five = [CategoricalColumn(n, [0, 1]) for n in "abcde"]
    >>> calibrate_synthesizer(1.0, 0.0, five).noise, calibrate_synthesizer(1.0, 1e-6, five).noise
    ('laplace', 'gaussian')
    """
    if noise not in _NOISE_CHOICES:
        raise ValueError(f"noise must be one of {_NOISE_CHOICES!r}, got {noise!r}")
    args = (epsilon, delta, columns, marginals)
    kwargs = {"count_fraction": count_fraction, "rtol": rtol, "tol": tol, "count": count}
    if noise != "auto":
        return _calibrate_synthesizer(*args, noise, **kwargs)  # type: ignore[arg-type]
    delta = check_delta(delta, allow_zero=True)
    laplace = _calibrate_synthesizer(*args, "laplace", **kwargs)  # type: ignore[arg-type]
    if delta == 0:
        return laplace
    gaussian = _calibrate_synthesizer(*args, "gaussian", **kwargs)  # type: ignore[arg-type]
    return gaussian if gaussian.scale**2 <= 2.0 * laplace.scale**2 else laplace


# long function: the body is 70 lines
def _calibrate_synthesizer(
    epsilon: float,
    delta: float,
    columns: Sequence[Column],
    marginals: str | Sequence[Sequence[str]],
    noise: str,
    count_fraction: float,
    *,
    rtol: float,
    tol: float | None,
    count: str | int | None,
) -> MarginalSynthesizer:
    epsilon = check_positive("epsilon", epsilon)
    f = check_probability("count_fraction", count_fraction)
    check_tol(tol)
    if not 0.0 < check_finite("rtol", rtol) < 0.5:  # used only at delta > 0, checked always
        raise ValueError(f"rtol must lie in (0, 0.5), got {float(rtol)!r}")
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES!r}, got {noise!r}")
    delta = check_delta(delta, allow_zero=True)
    pure = noise == "laplace" and delta == 0
    if noise == "gaussian":  # Gaussian noise has no pure epsilon: delta = 0 is refused
        delta = check_delta(delta, what="a MarginalSynthesizer with Gaussian noise")
    probe = MarginalSynthesizer(columns, marginals, noise, scale=1.0, count=count)
    k = len(probe.cliques)
    cols, margs = probe.columns, probe.marginals
    if not probe.measures_count:
        # the marginals are the only releases: k of them share the whole budget

        def only_tables(scale: float) -> MarginalSynthesizer:
            return MarginalSynthesizer(cols, margs, noise, scale=scale, count=probe.count)

        if pure:
            syn = only_tables(k / epsilon)
            while syn.pure_epsilon > epsilon:
                syn = only_tables(math.nextafter(syn.scale, math.inf))
            return syn
        res = calibrate(only_tables, epsilon, delta, increasing=False, rtol=rtol, tol=tol,
                        interval=(0.5 * k / epsilon, 2.0 * k / epsilon), name="noise scale")
        return res.mechanism  # type: ignore[return-value]

    def build(scale: float, count_scale: float) -> MarginalSynthesizer:
        return MarginalSynthesizer(cols, margs, noise, scale=scale, count_scale=count_scale)

    if noise == "laplace":
        ratios = {"scale": k / ((1.0 - f) * epsilon), "count_scale": 1.0 / (f * epsilon)}
        if pure:
            syn = build(ratios["scale"], ratios["count_scale"])
            # guard against floating-point rounding pushing the sum above the target
            while syn.pure_epsilon > epsilon:
                syn = build(math.nextafter(syn.scale, math.inf),
                            math.nextafter(syn.count_scale, math.inf))  # type: ignore[arg-type]
            return syn
        # at delta > 0 the pure split over-spends: calibrate the common factor (<= 1)
        interval = (0.05, 1.0)
    else:
        ratios = {"scale": math.sqrt(k / (1.0 - f)), "count_scale": math.sqrt(1.0 / f)}
        interval = (0.5, 2.0)
    res = calibrate(
        build,
        epsilon,
        delta,
        ratios=ratios,
        interval=interval,
        increasing=False,
        rtol=rtol,
        tol=tol,
        name="noise scale",
    )
    return res.mechanism  # type: ignore[return-value]


def _zcdp_rho_for(epsilon: float, delta: float) -> float:
    """``rho`` with ``rho + 2 sqrt(rho log(1/delta)) = epsilon`` (Bun & Steinke 2016,
    Proposition 1.3, inverted): a budget every ``rho``-zCDP run meets, the search's start."""
    log_inv = math.log(1.0 / delta)
    return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2


#: the range of ``rho`` that :class:`~dpacct.mechanisms.MST` accepts
MST_RHO_RANGE = (1e-300, 1e300)


def calibrate_mst(
    epsilon: float,
    delta: float,
    columns: Sequence[Column],
    *,
    rtol: float = DEFAULT_RTOL,
    tol: float | None = None,
) -> MST:
    """An :class:`~dpacct.mechanisms.MST` whose whole run meets ``(epsilon, delta)``.

    The paper converts ``(epsilon, delta)`` to a zCDP ``rho`` once and spends a third of
    it on each step.  Here the split is the paper's, and the common ``rho`` is found by
    :func:`dpacct.calibrators.calibrate` against the engine's epsilon of the run (the
    exact Gaussian RDP and the exponential mechanism's tight bounded-range RDP,
    composed and converted), which is at or below the zCDP conversion: the calibrated
    ``rho`` is at least the paper's.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1) (the Gaussian measurements have no pure-DP guarantee).
    columns : sequence of column specifications
        At least two.
    rtol : float
        The run's epsilon at ``delta`` lies in ``[epsilon (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy passed to the accountant.

    Returns
    -------
    MST

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.synthesis import CategoricalColumn
    >>> cols = [CategoricalColumn(n, [0, 1, 2]) for n in "abcd"]
    >>> mst = calibrate_mst(1.0, 1e-6, cols)
    >>> bool(0.999 <= mst.epsilon(1e-6) <= 1.0)
    True
    >>> bool(mst.rho > _zcdp_rho_for(1.0, 1e-6))    # more budget than the plain conversion
    True
    """
    epsilon = check_positive("epsilon", epsilon)
    # delta = 0 is refused naming pure_epsilon: the Gaussian measurements have none
    delta = check_delta(delta, what="MST (its measurements are Gaussian)")
    probe = MST(columns, rho=1.0)
    cols = probe.columns
    # MST's rho lies in [1e-300, 1e300]: the search stays there, and a budget every rho
    # meets (epsilon = 1e308) is answered by the largest (at_domain_edge)
    start = min(max(_zcdp_rho_for(epsilon, delta), MST_RHO_RANGE[0]), MST_RHO_RANGE[1] / 4.0)
    res = calibrate(
        lambda rho: MST(cols, rho=rho),
        epsilon,
        delta,
        increasing=True,
        rtol=rtol,
        tol=tol,
        interval=(start, 4.0 * start),
        domain=MST_RHO_RANGE,
        name="rho",
    )
    return res.mechanism  # type: ignore[return-value]


def calibrate_aim(
    epsilon: float,
    delta: float,
    columns: Sequence[Column],
    workload: str | Sequence[Sequence[str]] = "2-way",
    *,
    rounds: int | None = None,
    rtol: float = DEFAULT_RTOL,
    tol: float | None = None,
) -> AIM:
    """An :class:`~dpacct.mechanisms.AIM` whose every run meets ``(epsilon, delta)``.

    AIM's run is ``rho``-zCDP however its rounds turn out (its zCDP filter), so its
    ``(epsilon, delta)`` is the engine's conversion of ``rho``-zCDP (Canonne, Kamath,
    Steinke 2020, Proposition 12, optimised over all orders); the largest ``rho``
    meeting the target is found by :func:`dpacct.calibrators.calibrate`.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1) (zCDP has no pure-DP guarantee).
    columns : sequence of column specifications
        At least two.
    workload : '2-way', '1-way' or sequence of column-name tuples
        As :class:`~dpacct.mechanisms.AIM`.
    rounds : int, optional
        As :class:`~dpacct.mechanisms.AIM` (default ``16 d``).
    rtol : float
        The run's epsilon at ``delta`` lies in ``[epsilon (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy passed to the accountant.

    Returns
    -------
    AIM

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.synthesis import CategoricalColumn
    >>> cols = [CategoricalColumn(n, [0, 1, 2]) for n in "abcd"]
    >>> aim = calibrate_aim(1.0, 1e-6, cols)
    >>> bool(0.999 <= aim.epsilon(1e-6) <= 1.0)
    True
    >>> bool(aim.rho >= _zcdp_rho_for(1.0, 1e-6))    # at least the classical conversion
    True
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="AIM (it is zCDP: its measurements are Gaussian)")
    probe = AIM(columns, rho=1.0, workload=workload, rounds=rounds)  # validates the rest
    start = _zcdp_rho_for(epsilon, delta)
    if not 4.0 * start <= 1e300:
        raise ValueError(
            f"epsilon={epsilon!r} at delta={delta!r} needs rho above AIM's largest, 1e300"
        )
    res = calibrate(
        lambda rho: AIM(probe.columns, rho=rho, workload=probe.workload, rounds=rounds),
        epsilon,
        delta,
        increasing=True,
        rtol=rtol,
        tol=tol,
        interval=(start, 4.0 * start),
        name="rho",
    )
    return res.mechanism  # type: ignore[return-value]
