"""dp_accounting's two mixture events mapped to dpacct (``dpacct/_dp_accounting_mixtures.py``).

``MixtureOfGaussiansDpEvent`` and ``TruncatedSubsampledGaussianDpEvent`` become the
mechanisms built by hand, their degenerate cases are no-ops or non-private, and the
replace-one relation is refused.
"""

from __future__ import annotations

import math

import pytest

from dpacct.accountant import MixtureOfGaussiansMechanism, compose
from dpacct.accountant.transformers.truncated_poisson import TruncatedPoissonGaussianMechanism

dpa = pytest.importorskip("dp_accounting")


def test_mixture_event_maps_to_the_mechanism():
    from dp_accounting import dp_event as de

    from dpacct.dp_accounting import DpEventAccountant, from_dp_event

    ev = de.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0, 2.0], [0.81, 0.18, 0.01])
    run = from_dp_event(de.SelfComposedDpEvent(ev, 10))
    want = compose([MixtureOfGaussiansMechanism(1.0, [0, 1, 2], [0.81, 0.18, 0.01])], [10])
    assert run.epsilon(1e-5) == want.epsilon(1e-5)
    acct = DpEventAccountant()
    assert acct.supports(ev)
    # the sensitivity is always 0: nothing is revealed; no noise: not private
    assert DpEventAccountant().compose(de.MixtureOfGaussiansDpEvent(1.0, [0.0], [1.0])).get_epsilon(
        1e-5
    ) == pytest.approx(0.0, abs=1e-12)
    assert DpEventAccountant().compose(ev_zero := de.MixtureOfGaussiansDpEvent(0.0, [1.0], [1.0]))
    assert math.isinf(DpEventAccountant().compose(ev_zero).get_epsilon(1e-5))
    replace = DpEventAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    assert not replace.supports(ev)
    with pytest.raises(ValueError, match=r"event.sensitivities: .*sensitivities"):
        from_dp_event(de.MixtureOfGaussiansDpEvent(1.0, [-1.0, 1.0], [0.5, 0.5]))


def test_truncated_event_maps_to_the_mechanism():
    from dp_accounting import dp_event as de

    from dpacct.dp_accounting import DpEventAccountant, from_dp_event

    ev = de.TruncatedSubsampledGaussianDpEvent(10_000, 0.01, 120, 1.0)
    # the same mechanism (value equality: every parameter; its epsilon takes seconds)
    assert from_dp_event(ev) == TruncatedPoissonGaussianMechanism(1.0, 0.01, 10_000, 120)
    for empty in (
        de.TruncatedSubsampledGaussianDpEvent(0, 0.01, 120, 1.0),
        de.TruncatedSubsampledGaussianDpEvent(10_000, 0.0, 120, 1.0),
        de.TruncatedSubsampledGaussianDpEvent(10_000, 0.01, 0, 1.0),
    ):
        assert DpEventAccountant().compose(empty).get_epsilon(1e-5) == pytest.approx(0, abs=1e-12)
    noiseless = de.TruncatedSubsampledGaussianDpEvent(10_000, 0.01, 120, 0.0)
    assert math.isinf(DpEventAccountant().compose(noiseless).get_epsilon(1e-5))
    replace = DpEventAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    assert not replace.supports(ev)
