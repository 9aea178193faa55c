"""One contract, run over every mechanism type in the registry.

Every registered mechanism and transformer (primitives, subsampling, composition, the
algorithms in ``mechanisms/``, and a mechanism known only by a privacy-loss law) must
honour the contract of docs/design.md: sound, monotone curves; a bracket with lower <= upper;
vectorised RDP at real orders, non-decreasing up to alpha = 1e22 and capped by the pure
epsilon; a trade-off curve inside [0, 1 - fpr]; clear errors for bad queries; a repr that
shows its parameters.  The examples come from ``tests/registry_examples.py``, keyed by
registry name; a registered type without one fails
:func:`test_every_registered_type_has_an_example`.
"""

import math
import warnings

import numpy as np
import pytest
from registry_examples import EXAMPLES, REGISTERED, build_all

from dpacct.accountant import Mechanism, MissingCapabilityError
from dpacct.accountant.serialization import registered_mechanisms


def test_every_registered_type_has_an_example():
    missing = sorted(set(registered_mechanisms()) - set(EXAMPLES))
    missing = [m for m in missing if m in REGISTERED]  # registered by the library
    assert not missing, f"registered mechanism types without a contract example: {missing}"
    # and the table names only registered types, each example of its type
    assert set(EXAMPLES) <= set(REGISTERED), sorted(set(EXAMPLES) - set(REGISTERED))
    for name, mech in build_all():
        assert isinstance(mech, REGISTERED[name]), (name, mech)


def test_the_registry_holds_the_algorithms_and_transformers():
    names = set(REGISTERED)
    for required in (
        "compose",
        "poisson_subsample",
        "subsample_without_replacement",
        "noisy_gd",
        "dp_sgd",
        "ssp",
        "adassp",
        "marginal_synthesizer",
        "histogram_quantiles",
        "tree_quantiles",
        "exponential_quantile",
        "dp_theil_sen",
        "test_loss_law_only",
    ):
        assert required in names, required


EXAMPLES_BUILT = build_all()
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(EXAMPLES_BUILT)]


@pytest.fixture(params=[m for _, m in EXAMPLES_BUILT], ids=IDS)
def mech(request) -> Mechanism:
    return request.param


def test_epsilon_is_finite_nonnegative_and_monotone(mech):
    deltas = [1e-2, 1e-5, 1e-8]
    eps = [mech.epsilon(d) for d in deltas]
    assert all(e >= 0 and math.isfinite(e) for e in eps)
    assert eps[0] <= eps[1] <= eps[2]


def test_delta_is_a_probability_and_monotone(mech):
    d = [mech.delta(e) for e in (0.0, 0.5, 2.0)]
    assert all(0.0 <= x <= 1.0 for x in d)
    assert d[0] >= d[1] >= d[2]


def test_epsilon_and_delta_are_consistent(mech):
    eps = mech.epsilon(1e-5)
    assert mech.delta(eps) <= 1e-5 * (1 + 1e-6) + 1e-15


def test_bracket(mech):
    lo, hi = mech.epsilon_bounds(1e-5)
    assert 0.0 <= lo <= hi
    assert hi == pytest.approx(mech.epsilon(1e-5), rel=1e-12)


def test_rdp_vectorised_real_orders(mech):
    if not (mech.has_rdp or mech.has_pld):
        # refused with an error naming the query, never a silent value
        with pytest.raises(NotImplementedError, match="Renyi"):
            mech.rdp(2.0)
        return
    alphas = np.array([1.5, 2.0, 3.25, 16.0])
    if not mech.has_rdp:
        # no declared curve: the PLD's Renyi divergence, unless the PLD has mass at
        # +inf (a truncated tail), which is refused by name instead of an inf
        try:
            out = mech.rdp(alphas)
        except MissingCapabilityError as exc:
            assert "Renyi" in str(exc) and "mass at +inf" in str(exc)
            return
        assert np.all(np.isfinite(out))
    out = mech.rdp(alphas)
    assert out.shape == alphas.shape
    assert np.all(out >= 0)
    # Renyi divergence is non-decreasing in alpha (inf, a trivial bound, allowed)
    assert np.all((out[1:] >= out[:-1]) | (np.diff(out) >= -1e-12))
    assert mech.rdp(2.0) == pytest.approx(out[1], rel=1e-12)


def test_tradeoff_curve(mech):
    fpr = np.linspace(0, 1, 11)
    beta = mech.tradeoff(fpr)
    assert beta.shape == fpr.shape
    assert np.all(beta >= 0) and np.all(beta <= 1 - fpr + 1e-12)
    assert np.all(np.diff(beta) <= 1e-12)


def test_no_warnings(mech):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech.epsilon(1e-9)
        mech.delta(1.0)


@pytest.mark.parametrize("bad", [1.0, -0.5, math.nan, 3])
def test_bad_delta_is_rejected(mech, bad):
    with pytest.raises(ValueError, match="delta"):
        mech.epsilon(bad)


def test_delta_zero_is_pure_dp(mech):
    """``delta = 0`` asks for pure DP: the pure epsilon, or an error naming it."""
    pure = mech.pure_epsilon
    if math.isfinite(pure):
        assert mech.epsilon(0.0) == pure
        assert mech.epsilon_bounds(0.0)[1] == pure
        assert mech.delta(pure) == 0.0
    else:
        with pytest.raises(ValueError, match="pure_epsilon"):
            mech.epsilon(0.0)


def test_bad_epsilon_is_rejected(mech):
    with pytest.raises(ValueError, match="epsilon"):
        mech.delta(-1.0)


def test_repr_names_the_class(mech):
    # the class or its public base (ExponentialMechanism(bounded_range=False) is a
    # private subclass that reprs as the public constructor call)
    public = [c.__name__ for c in type(mech).__mro__ if not c.__name__.startswith("_")]
    assert repr(mech).split("(")[0] in public


def test_rdp_non_decreasing_and_capped_up_to_huge_orders(mech):
    if not mech.has_rdp:
        pytest.skip("no closed-form Renyi curve (PLD-derived RDP is checked above)")
    alphas = 1.0 + np.geomspace(1e-4, 1e22, 400)
    out = np.asarray(mech.rdp(alphas))
    assert np.all(out >= 0)
    assert np.all(np.diff(out) >= -1e-12 * np.abs(out[1:]))
    assert np.all(out <= mech.pure_epsilon * (1 + 1e-12))


def test_serialisation_round_trip_or_clear_refusal(mech):
    from dpacct.accountant.serialization import from_dict, to_dict

    try:
        data = to_dict(mech)
    except TypeError as exc:  # a parameter that is not a JSON value: said so
        assert "cannot be serialised" in str(exc)
        return
    assert from_dict(data) == mech
