"""accountant/capabilities.py: the declaration of what a mechanism knows, and the check,
run when a subclass is defined, that every declared flag has its hook and back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.accountant.capabilities import (
    Capabilities,
    MissingCapabilityError,
    check_declaration,
)
from dpacct.accountant.mechanism import Mechanism
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def test_every_flag_names_one_hook_and_describe_lists_the_true_ones():
    flags = [f.name for f in dataclasses.fields(Capabilities)]
    assert sorted(Capabilities.HOOKS) == sorted(flags)
    assert len(set(Capabilities.HOOKS.values())) == len(flags)
    assert Capabilities().describe() == "none"
    assert Capabilities(gdp=True, rdp=True).describe() == "rdp, gdp"  # field order
    with pytest.raises(TypeError):
        Capabilities.HOOKS["rdp"] = "_other"  # read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        Capabilities().rdp = True


class _Base:
    """A stand-in contract class (check_declaration is independent of Mechanism)."""

    declares = Capabilities()


def test_check_declaration_accepts_a_matching_declaration():
    class Both(_Base):
        declares = Capabilities(rdp=True, gdp=True)

        def _rdp(self, alpha):
            return alpha

        def _gdp_mu(self):
            return 1.0

    check_declaration(Both, _Base)  # no error


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"declares": Capabilities(rdp=True)}, r"Bad declares rdp=True but defines no _rdp\(\)"),
        ({"_gdp_mu": lambda self: 1.0}, r"Bad defines _gdp_mu\(\) but does not declare it"),
        ({"declares": "rdp"}, r"Bad.declares must be a Capabilities"),
    ],
    ids=["flag-without-hook", "hook-without-flag", "not-capabilities"],
)
def test_check_declaration_refusals_name_class_flag_and_hook(body, message):
    bad = type("Bad", (_Base,), body)
    with pytest.raises(TypeError, match=message):
        check_declaration(bad, _Base)


def test_a_mixin_hook_must_be_declared_and_an_inherited_declaration_is_refused():
    class Mixin:
        def _rdp(self, alpha):
            return alpha

    with_mixin = type("WithMixin", (Mixin, _Base), {})
    with pytest.raises(TypeError, match=r"WithMixin defines _rdp\(\) but does not declare"):
        check_declaration(with_mixin, _Base)

    class Parent(_Base):
        declares = Capabilities(rdp=True)

        def _rdp(self, alpha):
            return alpha

    child = type("Child", (Parent,), {"_rdp": lambda self, a: 2 * a})
    with pytest.raises(TypeError, match=r"Child implements _rdp.*inherits its declaration"):
        check_declaration(child, _Base)


def test_missing_capability_error_is_a_not_implemented_error():
    assert issubclass(MissingCapabilityError, NotImplementedError)
    m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    with pytest.raises(MissingCapabilityError, match="EpsilonDeltaMechanism"):
        m.rdp(2.0)


def test_a_hook_needs_its_declaration_and_back():
    with pytest.raises(TypeError, match=r"defines _rdp\(\) but does not declare it"):

        class Undeclared(Mechanism):
            def _rdp(self, alpha):
                return alpha

    with pytest.raises(TypeError, match=r"declares exact_curve=True but defines no _delta_exact"):

        class Unimplemented(Mechanism):
            declares = Capabilities(exact_curve=True)

    class Declared(Mechanism):
        declares = Capabilities(rdp=True)

        def _rdp(self, alpha):
            return alpha / 8.0

    m = Declared()
    assert m.capabilities == Capabilities(rdp=True) and m.route == "rdp"
    assert compose([m], [4]).epsilon(DELTA) == pytest.approx(
        compose([GaussianMechanism(sigma=1.0)], [1]).epsilon(DELTA), rel=0.2
    )


def test_a_subclass_that_changes_the_curves_declares_anew():
    """A Gaussian-DP ``mu`` is declared like any capability: a subclass of the Gaussian
    that changes its curves cannot silently keep the parent's ``gdp`` (whose closed
    form would then ignore its curves), and without ``gdp`` it composes by its own."""
    with pytest.raises(TypeError, match="inherits its declaration"):

        class Louder(GaussianMechanism):
            def _rdp(self, alpha):
                return 4.0 * alpha / (2.0 * self.sigma**2)

    class Louder2(GaussianMechanism):  # the curves of mu = 2 / sigma, declared
        declares = Capabilities(rdp=True)

        def _rdp(self, alpha):
            return 4.0 * np.asarray(alpha) / (2.0 * self.sigma**2)

    m = Louder2(sigma=1.0)
    assert m.gdp_mu() is None
    one, two = m.epsilon(DELTA), compose([m], [2]).epsilon(DELTA)
    assert two > one  # two copies never report less than one


def test_lacking_message_names_the_mechanism_what_it_declares_and_what_would_answer():
    from dpacct.accountant.capabilities import lacking_message

    m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    text = lacking_message(m, "rdp()", "rdp")
    assert text.startswith(repr(m)) and "cannot answer rdp()" in text
    assert m.capabilities.describe() in text and "Renyi-DP curve" in text
    assert "loss laws" in lacking_message(m, "epsilon", "any")
    assert m._lacking("rdp()", "rdp") == text
