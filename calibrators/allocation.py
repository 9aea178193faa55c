"""The noise multiplier of a random-allocation run (each record in k of T steps per epoch).

:func:`random_allocation_noise_multiplier` searches the noise multiplier at which
:func:`~dpacct.accountant.transformers.random_allocation` (the certified upper end of its
bracket, docs/theory/allocation_k_of_t.md) meets ``(epsilon, delta)``, with the generic
:func:`~dpacct.calibrators.calibrate`; a Poisson central-limit estimate at rate ``k / T``
only steers the search.
"""

from __future__ import annotations

import math

from dpacct.accountant import random_allocation
from dpacct.accountant.families.gaussian import GaussianMechanism
from dpacct.accountant.validation import check_count, check_delta, check_positive

from .calibrate import Calibration, calibrate
from .dpsgd import _clt_epsilon

__all__ = ["random_allocation_noise_multiplier"]


def _checked(epsilon, delta, steps, k, epochs, full_output, direct):
    """The calibrator's arguments, validated: ``(epsilon, delta, steps, k, epochs)``."""
    eps = check_positive("epsilon", epsilon)
    d = check_delta(delta)
    t = check_count(steps, "steps")
    kk = check_count(k, "k")
    e = check_count(epochs, "epochs")
    if kk > t:
        raise ValueError(f"k must be <= steps ({t}), got {kk}")
    if not isinstance(full_output, bool):
        raise TypeError(f"full_output must be True or False, got {full_output!r}")
    if not isinstance(direct, bool):
        raise TypeError(f"direct must be True or False, got {direct!r}")
    return eps, d, t, kk, e


def random_allocation_noise_multiplier(
    epsilon: float,
    delta: float,
    steps: int,
    *,
    k: int = 1,
    epochs: int = 1,
    rtol: float = 1e-3,
    tol: float | None = None,
    full_output: bool = False,
    direct: bool = True,
) -> float | Calibration:
    """The noise multiplier at which k-of-T random allocation meets ``(epsilon, delta)``.

    Every epoch allocates each record to ``k`` of its ``steps`` Gaussian steps, chosen
    uniformly; ``epochs`` epochs are composed.  The epsilon checked is
    :meth:`RandomAllocationMechanism.epsilon
    <dpacct.accountant.RandomAllocationMechanism.epsilon>`, a sound upper bound, so the
    returned sigma is sufficient; its ``epsilon_bounds`` says how much smaller the
    truth can be.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    steps : int
        Steps per epoch ``T``, >= 1.
    k : int, default 1
        Steps per record per epoch, ``1 <= k <= steps``.
    epochs : int, default 1
        Epochs, >= 1.
    rtol : float, default 1e-3
        The epsilon reached lies in ``[epsilon * (1 - rtol), epsilon]``.
    tol : float, optional
        Accuracy of the engine's epsilon.
    full_output : bool, default False
        Return the :class:`~dpacct.calibrators.Calibration` instead of the number.
    direct : bool, default True
        Passed to :func:`~dpacct.accountant.transformers.random_allocation`: where a
        direct route is tried (``k = 2, 3, 4``) the search first runs on the blocks
        alone, then, where the direct route's epsilon at their sigma is below
        ``epsilon * (1 - rtol)``, again below it with the route, steered by the estimate
        scaled to the route there (a law of a few CPU seconds per sigma tried at k = 2,
        5-60 at k = 3, 4).

    Returns
    -------
    float or Calibration

    Raises
    ------
    ValueError
        A parameter out of range (named), or ``k > steps``.

    Examples
    --------
    >>> from dpacct.accountant import random_allocation
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> s = random_allocation_noise_multiplier(1.0, 1e-6, 100, k=3, epochs=2)
    >>> run = random_allocation(GaussianMechanism(s), 100, k=3, epochs=2)
    >>> bool(1.0 * (1 - 1e-3) <= run.epsilon(1e-6) <= 1.0)
    True
    """
    eps, d, t, kk, e = _checked(epsilon, delta, steps, k, epochs, full_output, direct)

    def family(sigma: float, use_direct: bool = False):
        return random_allocation(
            GaussianMechanism(sigma=sigma), t, k=kk, epochs=e, direct=use_direct
        )

    # steering only: Poisson at rate k / T over T * epochs steps (Bu et al. 2020's CLT)
    def estimate(sigma: float) -> float:
        return _clt_epsilon(sigma, kk / t, t * e, d)

    start = math.sqrt(kk * e) / eps  # about the unamplified Gaussian's scale
    cal = calibrate(
        family,
        eps,
        d,
        interval=(0.55, max(1.0, start)),
        rtol=rtol,
        increasing=False,
        estimate=estimate,
        tol=tol,
        name="noise_multiplier",
    )
    cal = _with_direct(family, cal, eps, d, rtol, tol, estimate, direct)
    return cal if full_output else float(cal.parameter)


def _with_direct(family, cal: Calibration, eps: float, d: float, rtol: float, tol, estimate,
                 direct: bool) -> Calibration:
    """The blocks' calibration ``cal``, refined with the direct route where it gains at
    their sigma: below ``eps (1 - rtol)`` there (one law built; otherwise the search
    would build one per sigma tried and return within ``rtol`` of the blocks' answer)."""
    s_top = float(cal.parameter)
    top = family(s_top, direct)
    if top._direct_route is None:
        return cal
    e_top = float(top.epsilon(d, tol=tol))
    if e_top >= eps * (1.0 - rtol):
        return cal
    # steering only: the estimate scaled to the route's epsilon at s_top, so that the
    # search's first law is built near the answer (each law is a new sigma: 5-60 CPU s
    # at k = 3, 4)
    ratio = e_top / max(estimate(s_top), 1e-300)
    return _refine_direct(lambda s: family(s, True), s_top, eps, d, rtol, tol,
                          lambda s: ratio * estimate(s))


def _refine_direct(family, top: float, eps: float, d: float, rtol: float, tol,
                   estimate=None) -> Calibration:
    """The calibration again with the direct k = 2, 3 or 4 route, below the blocks' sigma
    ``top``, steered by ``estimate`` (a model of the route's epsilon; only where the
    search goes, never the answer, which is always an evaluated sigma).

    The route takes the smaller of itself and the blocks, so the sigma it needs is at
    most ``top``, and at least 0.95 of it wherever measured (docs/theory/
    allocation_k_of_t.md); :func:`calibrate` widens the interval if not.
    """
    return calibrate(
        family,
        eps,
        d,
        interval=(0.95 * top, top),
        rtol=rtol,
        increasing=False,
        estimate=estimate,
        start=top,  # its law is the one just built (remove_atoms4 keeps the last)
        tol=tol,
        name="noise_multiplier",
    )
