"""The replace-one convention of dpacct.dp_accounting, and the explicit choice of dp_accounting's.

Under ``REPLACE_ONE`` dpacct reads a ``GaussianDpEvent``'s noise multiplier ``s`` against
a sensitivity of 2 C (one record's clipped vector swapped for another's: the Gaussian of
noise multiplier ``s / 2`` per unit shift); dp_accounting's RDP accountant reads it
against C.  ``replace_one_sensitivity=1`` is that reading, chosen by name.  Independent
values: dp_accounting's own RDP and PLD accountants, and the Gaussian-DP closed form
(Dong, Roth, Su 2019, Corollary 2.13) solved with scipy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")

from dp_accounting import NeighboringRelation as Rel  # noqa: E402
from dp_accounting import dp_event as de  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402
from oracles import gaussian_epsilon  # noqa: E402

from dpacct.dp_accounting import DpEventAccountant, from_dp_event  # noqa: E402
from dpacct.mechanisms import ReplaceOneGaussianMechanism, ReplaceOneLaplaceMechanism  # noqa: E402

DELTA = 1e-5


def fixed_dpsgd_event(noise_multiplier, iterations, *, dataset_size, batch_size):
    """What JAX Privacy's ``accounting.fixed_dpsgd_event`` builds (replace=False): a
    self-composition of sampling without replacement around a Gaussian event."""
    step = de.SampledWithoutReplacementDpEvent(
        dataset_size, batch_size, de.GaussianDpEvent(noise_multiplier)
    )
    return de.SelfComposedDpEvent(step, iterations)


def jax_run(sigma: float):
    return fixed_dpsgd_event(sigma, 1000, dataset_size=10_000, batch_size=100)


def rdp_epsilon(event, delta: float = DELTA) -> float:
    acct = RdpAccountant(neighboring_relation=Rel.REPLACE_ONE)
    acct.compose(event)
    return float(acct.get_epsilon(delta))


def test_jax_privacy_fixed_batches_both_readings():
    """The issue's run: dpacct's default is dp_accounting's RDP at sigma / 2 (20.99), and
    replace_one_sensitivity=1 is dp_accounting's RDP at sigma (3.58)."""
    ours = DpEventAccountant(Rel.REPLACE_ONE).compose(jax_run(1.0)).get_epsilon(DELTA)
    theirs_reading = DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=1)
    theirs_reading.compose(jax_run(1.0))
    at_c = theirs_reading.get_epsilon(DELTA)
    rdp_at_sigma, rdp_at_half = rdp_epsilon(jax_run(1.0)), rdp_epsilon(jax_run(0.5))
    assert rdp_at_sigma == pytest.approx(3.576, abs=1e-3)  # the numbers
    assert rdp_at_half == pytest.approx(20.987, abs=1e-3)
    # dpacct's bounds are sound upper bounds of the same mechanisms: at most the RDP
    # accountant's (up to dpacct's rounding up), and their brackets hold the RDP values
    assert ours <= rdp_at_half * (1 + 1e-6) and at_c <= rdp_at_sigma * (1 + 1e-6)
    # ... and the same reading as each: a tighter accounting of the sampler (a PLD) may
    # lower dpacct's numbers by its usual margin over RDP, never by the factor ~6 that
    # separates the two readings
    assert ours >= 0.5 * rdp_at_half and at_c >= 0.5 * rdp_at_sigma
    assert ours > 5 * at_c  # the gap is the reading, not the accounting
    # the same mechanism: the chosen reading at sigma is the default at 2 sigma
    default_2s = DpEventAccountant(Rel.REPLACE_ONE).compose(jax_run(2.0)).get_epsilon(DELTA)
    assert at_c == default_2s


def test_the_reading_is_the_sensitivity_and_nothing_else():
    rel = {"neighboring_relation": Rel.REPLACE_ONE}
    for s in (0.7, 1.0, 3.0):
        g = de.GaussianDpEvent(s)
        assert from_dp_event(g, **rel) == ReplaceOneGaussianMechanism(sigma=s / 2)
        assert from_dp_event(g, **rel, replace_one_sensitivity=1) == ReplaceOneGaussianMechanism(
            sigma=s
        )
        lap = de.LaplaceDpEvent(s)
        assert from_dp_event(lap, **rel, replace_one_sensitivity=1.0) == (
            ReplaceOneLaplaceMechanism(b=s)
        )
    # with sensitivity 1 a replace-one neighbour is no farther than an add/remove one:
    # every noise event is then its add/remove law (Gaussian, Laplace, tree aggregation,
    # discrete Laplace's shift k, discrete Gaussian's Delta)
    for event in [
        de.SelfComposedDpEvent(de.GaussianDpEvent(3.0), 4),
        de.LaplaceDpEvent(3.0),
        de.SingleEpochTreeAggregationDpEvent(2.0, 8),
        de.DiscreteLaplaceDpEvent(0.5, 2),
    ]:
        one = DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=1).compose(event)
        add_remove = DpEventAccountant().compose(event)
        assert one.get_epsilon(DELTA) == add_remove.get_epsilon(DELTA)
        two = DpEventAccountant(Rel.REPLACE_ONE).compose(event)
        assert two.get_epsilon(DELTA) > one.get_epsilon(DELTA)
    # add/remove events are untouched by the choice
    g = de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 100)
    a = DpEventAccountant(replace_one_sensitivity=1).compose(g).get_epsilon(DELTA)
    assert a == DpEventAccountant().compose(g).get_epsilon(DELTA)


@pytest.mark.parametrize("sigma", [2.0, 4.0, 10.0])
def test_both_readings_against_the_closed_form_and_dp_accountings_pld(sigma):
    """Ten Gaussian events under REPLACE_ONE: the default is mu = sqrt(10) * 2 / sigma GDP
    (dp_accounting's PLD accountant reads the event so too), the chosen reading
    mu = sqrt(10) / sigma."""
    event = de.SelfComposedDpEvent(de.GaussianDpEvent(sigma), 10)
    default = DpEventAccountant(Rel.REPLACE_ONE).compose(event).get_epsilon(DELTA)
    chosen = DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=1).compose(event)
    assert default == pytest.approx(gaussian_epsilon(math.sqrt(10) * 2 / sigma, DELTA), rel=1e-6)
    assert chosen.get_epsilon(DELTA) == pytest.approx(
        gaussian_epsilon(math.sqrt(10) / sigma, DELTA), rel=1e-6
    )
    pld = PLDAccountant(Rel.REPLACE_ONE).compose(event).get_epsilon(DELTA)
    assert default == pytest.approx(pld, rel=1e-4)
    assert chosen.get_epsilon(DELTA) < rdp_epsilon(event)  # RDP's conversion is looser


def test_the_summary_and_repr_say_which_reading():
    default = DpEventAccountant(Rel.REPLACE_ONE).compose(jax_run(1.0))
    text = default.summary(DELTA)
    assert "sensitivity 2 C" in text and "replace_one_sensitivity=1" in text
    assert "dp_accounting's RDP accountant" in text and "epsilon = 14.82" in text
    assert "replace_one_sensitivity=2.0" in repr(default)
    chosen = DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=1)
    text = chosen.compose(jax_run(1.0)).summary(DELTA)
    assert "sensitivity 1 C (chosen: replace_one_sensitivity=1)" in text
    assert "epsilon = 2.19" in text and "Sound only if" in text
    assert "replace_one_sensitivity=1.0" in repr(chosen)
    add_remove = DpEventAccountant().compose(de.GaussianDpEvent(1.0))
    assert "sensitivity" not in add_remove.summary() and "replace_one" not in repr(add_remove)


@pytest.mark.parametrize("bad", [0.5, 3, 1.5, 0, -2.0, math.inf, math.nan, 10**400])
def test_other_sensitivities_are_refused(bad):
    with pytest.raises(ValueError, match="replace_one_sensitivity"):
        DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=bad)
    with pytest.raises(ValueError, match="replace_one_sensitivity"):
        from_dp_event(de.GaussianDpEvent(1.0), replace_one_sensitivity=bad)


@pytest.mark.parametrize("bad", [True, "1", None, 1 + 0j, np.array([1.0, 2.0])])
def test_non_numbers_are_refused(bad):
    with pytest.raises(TypeError, match="replace_one_sensitivity"):
        DpEventAccountant(Rel.REPLACE_ONE, replace_one_sensitivity=bad)
