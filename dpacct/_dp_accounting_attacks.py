"""The membership-inference bounds of :class:`dpacct.dp_accounting.DpEventAccountant`.

dp_accounting's ``PLDAccountant`` answers ``get_true_positive_rates`` and
``get_gdp_parameter_estimate`` (added in 2026); :class:`AttackBounds` gives the
accountant the same two methods, from dpacct's safe-side trade-off curve.  A mixin: the
class using it supplies ``mechanism()``, ``_non_private`` and ``_tol``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpacct.accountant.families.gaussian_dp import gaussian_tpr_up
from dpacct.accountant.validation import check_fpr

__all__ = ["AttackBounds"]


def _check_ignored_deltas(deltas: object) -> None:
    """dp_accounting's ``deltas`` grid, not needed here: refused if it is not numbers in
    [0, 1] (a garbage argument is a mistake, even when it would be ignored)."""
    if deltas is not None:
        check_fpr(deltas, "deltas")


class AttackBounds:
    """Mixin: certified TPR bounds and a Gaussian-DP estimate from the composed mechanism.

    Examples
    --------
    >>> import dp_accounting as dpa
    >>> from dpacct.dp_accounting import DpEventAccountant
    >>> issubclass(DpEventAccountant, AttackBounds)
    True
    """

    mechanism: object
    _non_private: bool
    _tol: float | None

    def get_true_positive_rates(
        self, false_positive_rates: float | np.ndarray, deltas: np.ndarray | None = None
    ) -> float | np.ndarray:
        """Certified upper bound on any membership-inference attack's TPR at given FPRs.

        dp_accounting's ``PLDAccountant.get_true_positive_rates`` (added in 2026) bounds
        the TPR through the ``(epsilon, delta)`` pairs at a grid of deltas; here it is
        ``1 - f(fpr)`` with ``f`` the safe-side trade-off curve of everything composed
        (:meth:`~dpacct.accountant.Mechanism.tradeoff`: exact where known, else the
        pessimistic PLDs' Neyman-Pearson curve; Kulynych et al. 2024, Eq. (3)), which is
        at least as tight: every ``(epsilon, delta)`` bound is implied by it.  A
        Gaussian composition's (``mu``-GDP) is computed directly, ``Phi(Phi^-1(fpr) +
        mu)`` rounded up (:func:`~dpacct.accountant.families.gaussian_dp.gaussian_tpr_up`),
        which keeps its relative precision at tiny FPRs, where ``1 - f`` would not.

        Parameters
        ----------
        false_positive_rates : float or numpy.ndarray
            FPR(s), in [0, 1].
        deltas : numpy.ndarray, optional
            Accepted for dp_accounting's interface and ignored (no delta grid is
            needed); checked to be numbers in [0, 1] all the same.

        Returns
        -------
        float or numpy.ndarray
            The TPR bound(s), shaped like ``false_positive_rates``.

        Examples
        --------
        >>> import dp_accounting as dpa
        >>> from dpacct.dp_accounting import DpEventAccountant
        >>> acct = DpEventAccountant().compose(dpa.GaussianDpEvent(1.0))
        >>> round(float(acct.get_true_positive_rates(0.01)), 4)  # 1 - Phi(Phi^-1(0.99) - 1)
        0.0924
        """
        fpr = check_fpr(false_positive_rates, "false_positive_rates")
        _check_ignored_deltas(deltas)
        if self._non_private:
            out = np.ones_like(fpr)
        else:
            mech = self.mechanism()
            mu = None if mech is None else mech.gdp_mu()
            if mu is not None:  # Gaussian: the TPR itself, accurate where it is tiny
                out = gaussian_tpr_up(mu, fpr)
            else:
                beta = None if mech is None else mech.tradeoff(fpr, tol=self._tol)
                # 1 - beta rounded up (the subtraction rounds to nearest), capped at 1
                out = fpr.copy() if beta is None else np.minimum(
                    np.nextafter(1.0 - np.asarray(beta, dtype=float), np.inf), 1.0)
        return float(out) if np.ndim(false_positive_rates) == 0 else out.reshape(fpr.shape)

    def get_gdp_parameter_estimate(
        self, false_positive_rates: np.ndarray | None = None, deltas: np.ndarray | None = None
    ) -> float:
        """The smallest Gaussian-DP ``mu`` whose TPR curve is above the certified TPR
        bounds at the given FPRs (dp_accounting's ``get_gdp_parameter_estimate``).

        ``mu = max over fpr of Phi^-1(TPR(fpr)) - Phi^-1(fpr)`` (Dong, Roth, Su 2019,
        the ``mu``-GDP trade-off ``Phi(Phi^-1(1 - a) - mu)``), with ``TPR`` from
        :meth:`get_true_positive_rates`.  An estimate, as there: pessimistic at each FPR
        (certified TPR bounds), optimistic between the FPRs of the grid.

        Parameters
        ----------
        false_positive_rates : numpy.ndarray, optional
            FPRs in (0, 1); default ``numpy.logspace(-12, log10(0.5), 500)``, as
            dp_accounting.
        deltas : numpy.ndarray, optional
            Accepted for dp_accounting's interface and ignored; checked to be numbers
            in [0, 1] all the same.

        Returns
        -------
        float
            The estimate (``inf`` for a non-private event, 0 when nothing was composed).

        Examples
        --------
        >>> import dp_accounting as dpa
        >>> from dpacct.dp_accounting import DpEventAccountant
        >>> acct = DpEventAccountant().compose(dpa.GaussianDpEvent(2.0))
        >>> round(acct.get_gdp_parameter_estimate(), 4)   # 1/sigma
        0.5
        """
        _check_ignored_deltas(deltas)
        if false_positive_rates is None:
            fpr = np.logspace(-12, np.log10(0.5), 500)
        else:
            fpr = check_fpr(false_positive_rates, "false_positive_rates").reshape(-1)
            if fpr.size == 0 or np.any((fpr <= 0) | (fpr >= 1)):
                raise ValueError("false_positive_rates must be a non-empty array in (0, 1)")
        if self._non_private:
            return math.inf
        tpr = np.asarray(self.get_true_positive_rates(fpr)).reshape(-1)
        with np.errstate(divide="ignore"):
            mu = special.ndtri(tpr) - special.ndtri(fpr)
        return max(float(np.max(mu)), 0.0)
