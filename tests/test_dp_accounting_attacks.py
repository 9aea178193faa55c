"""DpEventAccountant's membership-inference bounds (dpacct._dp_accounting_attacks).

Independent values: the Gaussian trade-off curve in closed form (Dong, Roth, Su 2019,
``f(a) = Phi(Phi^-1(1 - a) - mu)``) with scipy.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

dpa = pytest.importorskip("dp_accounting")

from dpacct._dp_accounting_attacks import AttackBounds  # noqa: E402
from dpacct.dp_accounting import DpEventAccountant  # noqa: E402


def test_the_accountant_has_the_mixin():
    assert issubclass(DpEventAccountant, AttackBounds)


@pytest.mark.parametrize("sigma", [0.8, 2.0, 5.0])
def test_tpr_bound_of_a_gaussian_is_its_closed_form(sigma):
    fpr = np.array([1e-4, 0.01, 0.1, 0.5])
    acct = DpEventAccountant().compose(dpa.GaussianDpEvent(sigma))
    want = 1.0 - stats.norm.cdf(stats.norm.ppf(1.0 - fpr) - 1.0 / sigma)
    got = acct.get_true_positive_rates(fpr)
    assert np.all(got >= want - 1e-12) and np.allclose(got, want, rtol=1e-6, atol=1e-12)
    assert acct.get_gdp_parameter_estimate() == pytest.approx(1.0 / sigma, rel=1e-4)


def test_empty_and_non_private():
    assert DpEventAccountant().get_true_positive_rates(0.1) == pytest.approx(0.1)
    assert DpEventAccountant().get_gdp_parameter_estimate() == 0.0
    acct = DpEventAccountant().compose(dpa.NonPrivateDpEvent())
    assert acct.get_true_positive_rates(0.1) == 1.0
    assert acct.get_gdp_parameter_estimate() == np.inf


@pytest.mark.parametrize("bad", [np.array([np.nan]), np.array([1.5]), "0.1", True])
def test_the_ignored_deltas_are_checked(bad):
    acct = DpEventAccountant().compose(dpa.GaussianDpEvent(1.0))
    with pytest.raises((TypeError, ValueError), match="deltas"):
        acct.get_true_positive_rates(0.1, deltas=bad)
    with pytest.raises((TypeError, ValueError), match="deltas"):
        acct.get_gdp_parameter_estimate(deltas=bad)
