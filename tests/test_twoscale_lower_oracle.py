"""The optimistic two-scale ladder's lower end against an independent upper value.

Session 31 (issue 37, ``epsilon_bounds`` at most 2x ``epsilon``) made the optimistic
tail products cheaper
(:func:`dpacct.accountant.pld.optimistic_tail._optimistic_tail_product`: one plain
transform of the tail with the sum of its coarse-grid factors, rounded down by its
rigorous bound, when that drops at most a few tail shares).  A lower end must never
exceed the true epsilon.  The independent
value here is dp_accounting's *pessimistic* PLD (connect-the-dots, value interval
1e-4; Doroshenko et al. 2022), an upper bound on the true epsilon up to its own
uncertified FFT round-off, computed live by another library's code: the truth lies at
or below it, so dpacct's lower end must too.

The rows are Poisson-subsampled Gaussian and Laplace compositions long enough that the
bulk/tail split and its tail products run (the ladder squares 10-17 times).  The lower
end is read from the optimistic PLDs exactly as :func:`routes.epsilon_bracket` reads it,
but without the bracket's own contradiction check (lower above upper raises there), so
that this comparison is what fails.  Power (session 31, checked by hand): with every
optimistic tail product shifted up by one coarse step (an unsound, too optimistic tail)
the first row's lower end is 5.19287 > 5.19262 and the test fails; with the top quarter
of each tail product moved to ``+inf`` 5.19294, and it fails too.
"""

from __future__ import annotations

import pytest

import dpacct as dp
from dpacct.accountant import routes

dpa_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

DELTA = 1e-5
INTERVAL = 1e-4

#: (kind, sample rate, sigma or Laplace scale b, steps)
ROWS = [
    ("gaussian", 0.01, 1.1, 10_000),
    ("gaussian", 0.1, 2.0, 1_000),
    ("gaussian", 0.05, 1.0, 3_000),
    ("laplace", 0.01, 1.0, 10_000),
    ("laplace", 0.05, 2.0, 2_000),
]


def _peer_upper(kind: str, q: float, scale: float, steps: int) -> float:
    make = (dpa_pld.from_gaussian_mechanism if kind == "gaussian"
            else dpa_pld.from_laplace_mechanism)
    pld = make(scale, sampling_prob=q, value_discretization_interval=INTERVAL,
               pessimistic_estimate=True, use_connect_dots=True)
    return float(pld.self_compose(steps).get_epsilon_for_delta(DELTA))


def _lower_end(mech) -> float:
    """The optimistic PLDs' epsilon on the grids that decided the upper end (as
    ``routes.epsilon_bracket`` reads it, without its contradiction check)."""
    found = routes.pld_upper(mech, DELTA, None)
    return max(mech._pld_one(False, found.settings, w).epsilon(DELTA) for w in found.deciding)


@pytest.mark.parametrize("row", ROWS, ids=[f"{k}-q{q}-{s}-T{t}" for k, q, s, t in ROWS])
def test_lower_end_below_dp_accountings_pessimistic_pld(row):
    kind, q, scale, steps = row
    base = dp.GaussianMechanism(sigma=scale) if kind == "gaussian" else dp.LaplaceMechanism(b=scale)
    mech = dp.compose([dp.poisson_subsample(base, sample_rate=q)], counts=[steps])
    lower = _lower_end(mech)
    peer = _peer_upper(kind, q, scale, steps)
    assert lower <= peer, (row, lower, peer)
    # and the public bracket agrees with the end read here
    lo, hi = mech.epsilon_bounds(DELTA)
    assert lo == lower and lo <= hi
