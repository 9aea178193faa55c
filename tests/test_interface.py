"""accountant/interface.py: the members the router and the declarations read of a mechanism
(and of a ledger) are named once, as protocols that the base classes satisfy."""

from __future__ import annotations

import typing

import pytest

from dpacct.accountant import Mechanism, PrivacyAccountant, compose, poisson_subsample
from dpacct.accountant.interface import Routed, RoutedLedger
from dpacct.accountant.ledger.ledger_mechanism import LedgerMechanism
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse


def _members(protocol: type) -> set[str]:
    return {
        name
        for name in vars(protocol)
        if not name.startswith("__") and name not in ("_is_protocol", "_is_runtime_protocol")
        and not name.startswith("_abc")
    } - set(vars(typing.Protocol))


def test_the_base_classes_define_every_member_the_protocols_name():
    assert _members(Routed) and _members(RoutedLedger)
    assert not sorted(n for n in _members(Routed) if not hasattr(Mechanism, n))
    assert not sorted(n for n in _members(RoutedLedger) if not hasattr(LedgerMechanism, n))


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(sigma=1.0),
        LaplaceMechanism(b=2.0),
        RandomizedResponse(p=0.75),
        poisson_subsample(GaussianMechanism(sigma=1.0), 0.01),
        compose([LaplaceMechanism(b=1.0)], counts=[3]),
        Mechanism.from_gdp(0.5),
    ],
)
def test_mechanisms_of_every_kind_are_routed(mech):
    assert isinstance(mech, Routed)


def test_a_ledger_is_routed_and_other_objects_are_not():
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    assert isinstance(acct.ledger, Routed)
    assert not isinstance(object(), Routed)
    assert not isinstance(1.0, Routed)
