"""The conversion rules of dp_accounting events (dpacct._dp_event_convert), called
directly: parts without recording, the replace-one reading scoped to its block, the
closed-form merge of replace-one Gaussians, and the public classes' home."""

from __future__ import annotations

import math
import pickle

import pytest

dpa = pytest.importorskip("dp_accounting")

import dpacct.dp_accounting as public  # noqa: E402
from dpacct._dp_event_convert import (  # noqa: E402
    ReplaceOneZCDPMechanism,
    UnsupportedEventError,
    as_mechanism,
    check_relation,
    convert,
    reading,
)
from dpacct.mechanisms import (  # noqa: E402
    GaussianMechanism,
    LaplaceMechanism,
    ReplaceOneGaussianMechanism,
)

ADD = dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
REPLACE = dpa.NeighboringRelation.REPLACE_ONE


def test_the_public_classes_live_at_their_public_address():
    for cls in (UnsupportedEventError, ReplaceOneZCDPMechanism):
        assert cls.__module__ == "dpacct.dp_accounting"
        assert getattr(public, cls.__name__) is cls
    mech = pickle.loads(pickle.dumps(ReplaceOneZCDPMechanism(rho=0.5, xi=0.25)))
    assert mech == ReplaceOneZCDPMechanism(rho=0.5, xi=0.25) and mech.rdp(2.0) == 1.25


def test_convert_returns_parts_and_flags_a_non_private_event():
    tree = dpa.ComposedDpEvent(
        [dpa.GaussianDpEvent(2.0), dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 3)]
    )
    got = convert(tree, ADD, "event")
    assert got.parts == [(GaussianMechanism(sigma=2.0), 1), (LaplaceMechanism(b=1.0), 3)]
    assert not got.non_private
    assert convert(dpa.NonPrivateDpEvent(), ADD, "event").non_private
    with pytest.raises(UnsupportedEventError, match=r"at event.events\[1\]"):
        convert(dpa.ComposedDpEvent([dpa.NoOpDpEvent(), dpa.UnsupportedDpEvent()]), ADD, "event")
    with pytest.raises(TypeError, match="NeighboringRelation"):
        check_relation("REPLACE_ONE")


def test_the_replace_one_reading_holds_inside_its_block_only():
    event = dpa.GaussianDpEvent(2.0)
    assert convert(event, REPLACE, "event").parts == [(ReplaceOneGaussianMechanism(sigma=1.0), 1)]
    with reading(1.0):
        inside = convert(event, REPLACE, "event").parts
    assert inside == [(ReplaceOneGaussianMechanism(sigma=2.0), 1)]
    assert convert(event, REPLACE, "event").parts[0][0].sigma == 1.0


def test_replace_one_gaussians_merge_in_closed_form():
    """``k_i`` runs at ``sigma_i`` are one Gaussian with ``sigma^-2 = sum k_i sigma_i^-2``
    (Dong, Roth & Su 2022, Corollary 3.3): 3 at 1 and 1 at 2 give ``1 / sqrt(3.25)``."""
    parts = [
        (ReplaceOneGaussianMechanism(sigma=1.0), 3),
        (ReplaceOneGaussianMechanism(sigma=2.0), 1),
    ]
    merged = as_mechanism(parts, REPLACE)
    assert merged.sigma == pytest.approx(1.0 / math.sqrt(3.25), rel=1e-15)
    # add/remove (not a relation these parts come from): a plain composition, unmerged
    assert as_mechanism(parts, ADD).parts == tuple(parts)


def test_zcdp_parts_alone_merge_into_one_with_summed_parameters():
    """k runs of (xi, rho)-zCDP are (k xi, k rho)-zCDP (Renyi curves add): the merged
    mechanism's parameters are the exact sums rounded up (0.1 * 10 rounds *down* to 1.0 in
    floats), its epsilon never above the composition's grid conversion that answered
    before, and only all-zCDP trees of one class merge."""
    from fractions import Fraction

    from dpacct.accountant import compose
    from dpacct.mechanisms import ZCDPMechanism

    event = dpa.SelfComposedDpEvent(dpa.ZCDpEvent(0.1), 10)
    mech = public.from_dp_event(event)
    assert type(mech) is ZCDPMechanism and mech.xi == 0.0
    assert Fraction(mech.rho) >= 10 * Fraction(0.1) and mech.rho == math.nextafter(1.0, 2.0)
    before = compose([ZCDPMechanism(0.1)], counts=[10]).epsilon(1e-6)  # main's route
    assert mech.epsilon(1e-6) <= before <= mech.epsilon(1e-6) * (1 + 2e-12)
    mixed = dpa.ComposedDpEvent([dpa.ZCDpEvent(0.1, 0.05), dpa.SelfComposedDpEvent(
        dpa.ZCDpEvent(0.2), 3)])
    merged = public.from_dp_event(mixed)
    assert Fraction(merged.rho) >= Fraction(0.1) + 3 * Fraction(0.2) and merged.xi == 0.05
    replace = public.from_dp_event(event, neighboring_relation=REPLACE)
    assert type(replace) is ReplaceOneZCDPMechanism
    with_laplace = public.from_dp_event(dpa.ComposedDpEvent([dpa.ZCDpEvent(0.1),
                                                              dpa.LaplaceDpEvent(1.0)]))
    assert type(with_laplace).__name__ == "ComposedMechanism"
    single = [(ZCDPMechanism(0.5), 1)]
    assert as_mechanism(single, ADD) is single[0][0]
