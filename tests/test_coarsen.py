"""Connect-the-dots re-discretisation onto a coarser grid (``pld.coarsen``).

Independent references: the hockey-stick curves of the fine and the coarse PMFs
evaluated in exact rational-free high precision (``mpmath`` at 60 digits), at real
epsilons on both sides of zero; the P- and Q-masses summed the same way.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.pld.coarsen import coarsen, coarsen_weights

mpmath.mp.dps = 60


def _curve(first, pmf, step, eps):
    """``sum_i p_i (1 - e^{eps - l_i})_+`` in mpmath, ``l_i = (first + i) step``."""
    eps = mpmath.mpf(eps)
    out = mpmath.mpf(0)
    for i, p in enumerate(pmf):
        loss = (first + i) * mpmath.mpf(step)
        if loss > eps:
            out += mpmath.mpf(float(p)) * (1 - mpmath.exp(eps - loss))
    return out


def _masses(first, pmf, step):
    p = mpmath.fsum(mpmath.mpf(float(x)) for x in pmf)
    q = mpmath.fsum(
        mpmath.mpf(float(x)) * mpmath.exp(-(first + i) * mpmath.mpf(step))
        for i, x in enumerate(pmf)
    )
    return p, q


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 40),
    first=st.integers(-60, 60),
    log2_factor=st.integers(1, 4),
    step_exp=st.sampled_from([-1, -2, -3]),
)
def test_the_coarse_curve_is_never_below_the_fine_one(seed, size, first, log2_factor, step_exp):
    rng = np.random.default_rng(seed)
    pmf = rng.random(size) * (rng.random(size) < 0.7)
    pmf[rng.integers(size)] += 1e-300 if rng.random() < 0.2 else 0.5
    pmf = pmf / pmf.sum() * 0.999
    factor, step = 2**log2_factor, 2.0**-10 * 10.0 ** (step_exp + 3)
    cfirst, out, err = coarsen(first, pmf, factor, step)
    assert np.all(out >= 0) and err >= 0
    losses = (first + np.arange(size)) * step
    probe = np.concatenate([losses, losses + step / 3, [losses.min() - 1, -0.2, 0.0, 0.3]])
    for eps in probe:
        fine = _curve(first, pmf, step, eps)
        coarse = _curve(cfirst, out, factor * step, eps) + mpmath.mpf(err)
        assert coarse >= fine, (eps, float(fine), float(coarse))


@pytest.mark.parametrize("factor", [2, 8, 16])
def test_both_masses_are_kept_to_the_slack(factor):
    rng = np.random.default_rng(factor)
    step = 1e-3
    pmf = rng.random(500)
    pmf /= pmf.sum()
    cfirst, out, err = coarsen(-317, pmf, factor, step)
    p0, q0 = _masses(-317, pmf, step)
    p1, q1 = _masses(cfirst, out, factor * step)
    slack = (4 * factor + 40) * 2.0**-53
    # rounded up by the slack, and what a renormalisation took is in err
    assert p0 - mpmath.mpf(err) <= p1 <= p0 * (1 + slack)
    assert q0 * (1 - slack) - mpmath.mpf(err) <= q1 <= q0 * (1 + slack)
    assert p1 <= 1 and err < 1e-13


def test_an_atom_on_a_coarse_node_stays_and_one_between_is_split_by_its_q_mass():
    step, factor = 0.1, 4
    cfirst, out, _ = coarsen(8, np.array([0.25]), factor, step)  # loss 0.8 = node 2
    assert cfirst == 2 and out.size == 1 and out[0] == pytest.approx(0.25, rel=1e-14)
    cfirst, out, _ = coarsen(9, np.array([0.25]), factor, step)  # loss 0.9, in (0.8, 1.2)
    a, b = out
    assert cfirst == 2
    assert a + b == pytest.approx(0.25, rel=1e-14)
    assert a * math.exp(-0.8) + b * math.exp(-1.2) == pytest.approx(0.25 * math.exp(-0.9))


def test_a_carried_error_is_kept_and_an_overfull_pmf_is_renormalised():
    _, out, err = coarsen(0, np.array([0.6, 0.6]), 2, 0.01, err=1e-9)
    assert out.sum() <= 1.0 and err >= 0.2 + 1e-9


def test_weights_match_mpmath():
    w_a, w_b = coarsen_weights(1e-4, 16)
    big = mpmath.mpf(16) * mpmath.mpf(1e-4)
    for r in range(16):
        u = r * mpmath.mpf(1e-4)
        exact_b = (1 - mpmath.exp(-u)) / (1 - mpmath.exp(-big))
        assert abs(w_b[r] - exact_b) <= 4 * 2.0**-53 * max(exact_b, 1e-300) + 1e-300
        assert abs(w_a[r] - (1 - exact_b)) <= 4 * 2.0**-53


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factor": 0}, "factor"),
        ({"factor": 2.0}, "factor"),
        ({"fine_step": -1.0}, "fine_step"),
        ({"fine_step": math.nan}, "fine_step"),
        ({"err": -1.0}, "err"),
        ({"pmf": np.zeros((2, 2))}, "pmf"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    args = {"first": 0, "pmf": np.ones(3) / 3, "factor": 2, "fine_step": 0.01, "err": 0.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        coarsen(**args)
    with pytest.raises(TypeError, match="first"):
        coarsen(0.5, np.ones(3) / 3, 2, 0.01)
