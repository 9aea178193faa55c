"""The k-fold Laplace closed form (``mechanisms/primitives/laplace_fold.py``) against
independent values: a 50-digit evaluation of the whole binomial mixture (every cell, no
tail cut, no filing of cells, the B-spline's full sum, ``Phi`` from ``sinh``/``cosh``),
nested mpmath quadrature of the 2-fold convolution, and the PLD route's certified bracket.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms import LaplaceMechanism, ReplaceOneLaplaceMechanism
from dpacct.mechanisms.primitives.laplace_fold import (
    LaplaceComposition,
    laplace_fold_delta_up,
    laplace_fold_epsilon_up,
)


def _phi_mp(m: int, y):
    """``2 sum_i y^(m+1+2i) / (m+1+2i)!`` as ``2 (sinh or cosh) - 2 partial sum``."""
    if y <= 0:
        return mpmath.mpf(0)
    top = mpmath.sinh(y) if (m + 1) % 2 else mpmath.cosh(y)
    partial = sum(y**j / mpmath.factorial(j) for j in range((m + 1) % 2, m + 1, 2))
    return 2 * (top - partial)


def _delta_mp(e0: float, k: int, eps: float, most: int | None = None):
    """delta of k Laplace runs at 50 digits: every cell (m, n) with m <= ``most`` uniform
    draws (default all), the B-spline's full alternating sum (exact at this precision),
    no float.  Cells past ``most`` are left out: the value is below the truth by at most
    their mass ``P(m > most)``, returned beside it."""
    most = k if most is None else most
    with mpmath.workdps(50):
        e, x = mpmath.mpf(e0), mpmath.mpf(eps)
        a = mpmath.exp(-e / 2) / 2
        u = e * a
        total = mpmath.mpf(0)
        pc = -mpmath.expm1(-e) / 2
        left = sum(mpmath.binomial(k, j) * pc**j * (1 - pc) ** (k - j)
                   for j in range(most + 1, k + 1))
        for m in range(most + 1):
            for n in range(k - m + 1):
                w = mpmath.binomial(k, m) * mpmath.binomial(k - m, n) * a ** (k - m) * u**m
                c = e * (2 * n - k + m)
                if m == 0:
                    total += w * max(mpmath.mpf(0), mpmath.exp(c / 2) - mpmath.exp(x - c / 2))
                    continue
                off = x - c
                acc = mpmath.mpf(0)
                for r in range(m + 1):
                    y = (e * (m - 2 * r) - off) / 2
                    acc += (-1) ** r * mpmath.binomial(m, r) * _phi_mp(m, y)
                total += w * e ** (-m) * mpmath.exp(x / 2) * acc
        return total, left


@pytest.mark.parametrize(
    ("b", "k", "epsilons", "most"),
    [
        (20.0, 12, [0.0, 0.1, 0.35, 0.5, 0.61, 0.9], None),  # 0.5, 0.35 on the atoms' lattice
        (3.0, 8, [0.2, 1.0, 2.0, 2.4, 2.6], None),  # 2.6: delta ~ 1e-9, deep in the tail
        (10.0, 5, [0.05, 0.3, 0.45], None),
        # delta ~ 1e-7 and 2e-9 at 40 runs: a running sum taken across the groups of
        # cells (and differenced) is 1e-7 off here; P(more than 22 draws) < 1e-22
        (20.0, 40, [1.4, 1.6], 22),
    ],
)
def test_delta_up_is_sound_and_tight_against_50_digits(b, k, epsilons, most):
    e0 = 1.0 / b
    for eps in epsilons:
        truth, left = _delta_mp(e0, k, eps, most)
        up = laplace_fold_delta_up(b, k, eps)
        assert up >= truth, (b, k, eps, up, truth)
        # certified to about 1e-11 relative, plus round-off of the order of 2^-52 times
        # the straddling cells' mass, and the cells the oracle left out
        assert up - truth <= 1e-10 * truth + 1e-17 + left, (b, k, eps, up, truth)


@pytest.mark.slow
def test_two_runs_against_nested_quadrature():
    """The 2-fold convolution of the loss law (two atoms and the density
    ``exp((l - e)/2) / 4`` on ``(-e, e)``) integrated directly, 30 digits."""

    def oracle(e0, eps):
        with mpmath.workdps(30):
            e, x = mpmath.mpf(e0), mpmath.mpf(eps)
            atoms = [(e, mpmath.mpf(1) / 2), (-e, mpmath.exp(-e) / 2)]

            def f(t):
                return mpmath.exp((t - e) / 2) / 4

            def g(s):
                return max(mpmath.mpf(0), 1 - mpmath.exp(x - s))

            def cut(z):
                return sorted({-e, e, min(max(z, -e), e)})

            out = mpmath.mpf(0)
            for pos, pm in atoms:
                for pos2, pm2 in atoms:
                    out += pm * pm2 * g(pos + pos2)
                out += 2 * pm * mpmath.quad(lambda t, p=pos: f(t) * g(p + t), cut(x - pos))
            out += mpmath.quad(
                lambda t1: f(t1) * mpmath.quad(lambda t2: f(t2) * g(t1 + t2), cut(x - t1)),
                cut(x - e),
            )
            return out

    for e0, eps in ((0.5, 0.3), (2.0, 1.0)):
        truth = oracle(e0, eps)
        up = laplace_fold_delta_up(1.0 / e0, 2, eps)
        assert truth <= up <= truth * (1 + 1e-10)


def test_one_run_is_the_laplace_closed_form():
    for b, eps in ((1.0, 0.3), (5.0, 0.1), (20.0, 0.0)):
        exact = -math.expm1(0.5 * (eps - 1.0 / b))
        up = laplace_fold_delta_up(b, 1, eps)
        assert exact <= up <= exact * (1 + 1e-11)


@pytest.mark.parametrize(
    ("b", "k", "delta"),
    [(20.0, 100, 1e-6), (20.0, 100, 1e-10), (10.0, 30, 1e-5), (50.0, 300, 1e-8), (5.0, 10, 1e-3)],
)
def test_epsilon_inside_the_pld_bracket_and_below_its_answer(b, k, delta):
    eps = laplace_fold_epsilon_up(b, k, delta)
    run = compose([LaplaceMechanism(b=b)], [k])
    lo, hi = run.epsilon_bounds(delta)
    assert lo <= eps <= hi
    assert eps <= run.epsilon(delta)
    assert laplace_fold_delta_up(b, k, eps) <= delta


def test_the_events_row_is_tighter_than_the_pld_route():
    """Laplace(b = 20) x 100 at 1e-6: the PLD route's bracket is [2.1932658, 2.1932823];
    the closed form is within 1e-8 of the 50-digit root of the mixture."""
    eps = laplace_fold_epsilon_up(20.0, 100, 1e-6)
    assert eps <= compose([LaplaceMechanism(b=20.0)], [100]).epsilon(1e-6)
    assert 2.1932808 < eps < 2.1932810


def test_composition_class_answers_and_round_trips():
    run = LaplaceComposition(parts=((LaplaceMechanism(b=20.0), 100),))
    eps = run.epsilon(1e-6)
    assert run.delta(eps) <= 1e-6
    arr = run.delta(np.array([0.5, eps, 5.0]))
    assert arr.shape == (3,) and arr[2] <= 1e-12 and arr[0] > arr[1]
    one = LaplaceComposition(parts=((ReplaceOneLaplaceMechanism(b=20.0), 100),))
    assert one.neighbouring == "replace-one" and one.epsilon(1e-6) == eps


def test_out_of_reach_falls_back_to_the_pld_route():
    # 1/b = 10: more than 50 draws' reach; the closed form declines, the composition answers
    assert math.isnan(laplace_fold_epsilon_up(0.1, 60, 1e-6))
    run = LaplaceComposition(parts=((LaplaceMechanism(b=0.1), 60),))
    assert run.epsilon(1e-6) == compose([LaplaceMechanism(b=0.1)], [60]).epsilon(1e-6)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="delta"):
        laplace_fold_epsilon_up(1.0, 3, 1.5)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_fold_delta_up(1.0, 3, -0.1)
    with pytest.raises(ValueError, match="b"):
        laplace_fold_delta_up(-1.0, 3, 0.1)
    with pytest.raises(TypeError, match="LaplaceComposition"):
        LaplaceComposition(parts=((LaplaceMechanism(b=1.0), 2), (LaplaceMechanism(b=2.0), 1)))


def test_bracket_upper_end_is_the_closed_form():
    run = LaplaceComposition(parts=((LaplaceMechanism(b=20.0), 100),))
    lo, hi = run.epsilon_bounds(1e-6)
    pld_lo, pld_hi = compose([LaplaceMechanism(b=20.0)], [100]).epsilon_bounds(1e-6)
    assert lo == pld_lo and hi == run.epsilon(1e-6) < pld_hi


def test_no_delta_at_or_past_the_pure_epsilon():
    # 4 runs of b = 2: pure epsilon 2; the certified error must not leak past it
    run = LaplaceComposition(parts=((LaplaceMechanism(b=2.0), 4),))
    assert run.delta(2.0) == 0.0 and laplace_fold_delta_up(2.0, 4, 2.0) == 0.0
    assert run.delta(np.array([2.0, 3.0])).tolist() == [0.0, 0.0]
    assert run.delta(1.999) > 0.0


@pytest.mark.parametrize("b", [3.0, 10.0, 50.0])
@pytest.mark.parametrize("k", [2, 10, 100])
@pytest.mark.parametrize("delta", [1e-12, 1e-13, 1e-14, 1e-15])
def test_tiny_delta_answers_without_a_crash(b, k, delta):
    """Regression (session 38): at tiny delta the certified error can exceed delta and
    the search's Newton aim ``log(delta - slack)`` raised a math domain error.  The
    answer is finite, at most the pure epsilon, certified by the closed form where it
    is below the pure epsilon, and the bracket's ends are ordered."""
    run = LaplaceComposition(parts=((LaplaceMechanism(b=b), k),))
    eps = run.epsilon(delta)
    pure = k / b * (1 + 1e-15)
    assert math.isfinite(eps) and 0.0 < eps <= pure
    lo, hi = run.epsilon_bounds(delta)
    assert lo <= hi == eps
    fold = laplace_fold_epsilon_up(b, k, delta)
    assert math.isnan(fold) or fold >= eps


@pytest.mark.parametrize("b", [0.5, 1.0, 3.0, 20.0])
@pytest.mark.parametrize("cls", [LaplaceMechanism, ReplaceOneLaplaceMechanism])
def test_single_run_answers_as_the_laplace_mechanism(b, cls):
    """One run (session 38): the fold's certified error put its upper end above its own
    bracket and above one Laplace's exact epsilon; now the mechanism's closed form,
    ``delta(eps) = 1 - exp((eps - 1/b) / 2)`` (Koskela et al. 2020, Section 6), answers."""
    mech = cls(b=b)
    run = LaplaceComposition(parts=((mech, 1),))
    for d in (1e-2, 1e-6, 1e-10, 1e-15):
        eps = run.epsilon(d)
        assert eps == mech.epsilon(d)
        assert tuple(run.epsilon_bounds(d)) == tuple(mech.epsilon_bounds(d))
        lo, hi = run.epsilon_bounds(d)
        assert lo <= eps <= hi
        with mpmath.workdps(40):
            exact = max(mpmath.mpf(1) / b + 2 * mpmath.log1p(-mpmath.mpf(d)), 0)
            assert float(exact) <= eps * (1 + 1e-15) and eps <= float(exact) * (1 + 1e-12) + 1e-300
    for e in (0.0, 0.5 / b, 0.99 / b):
        closed = -math.expm1(0.5 * (e - 1.0 / b))
        assert run.delta(e) == mech.delta(e)
        assert closed * (1 - 1e-15) <= run.delta(e) <= closed * (1 + 1e-12)
    grid = np.array([0.0, 0.5 / b, 2.0 / b])
    assert np.array_equal(run.delta(grid), mech.delta(grid))


def test_delta_up_with_the_most_draws_that_apply_is_sound():
    """Where no setup reaches a 2^-40 1e-30 tail (3 x 30 runs of b = 3: at most 12
    draws, series argument 2), the most draws that apply answer with their Chernoff
    tail: above the 50-digit value of the whole mixture (every cell), and the
    composition's delta is the smaller of it and the PLD route's."""
    b, k = 3.0, 30
    run = LaplaceComposition(parts=((LaplaceMechanism(b=b), k),))
    route = compose([LaplaceMechanism(b=b)], [k])
    for eps in (2.0, 5.0):
        truth, _ = _delta_mp(1.0 / b, k, eps)
        up = laplace_fold_delta_up(b, k, eps)
        assert math.isfinite(up) and up >= truth
        assert run.delta(eps) == min(up, route.delta(eps))


@pytest.mark.parametrize(
    ("b", "k"), [(10.0, 30), (20.0, 30), (50.0, 30), (10.0, 100), (20.0, 300), (50.0, 100)]
)
def test_delta_at_the_fold_epsilon_is_at_most_delta(b, k):
    """Session 38: ``delta(epsilon(d)) <= d`` where the closed form answers epsilon
    (before, delta's closed form used another tail cut, or none applied and the PLD
    route answered: up to 0.4 % above d at 1e-15; 24 of 270 grid points)."""
    run = LaplaceComposition(parts=((LaplaceMechanism(b=b), k),))
    for d in (1e-3, 1e-6, 1e-10, 1e-13, 1e-15):
        if math.isnan(laplace_fold_epsilon_up(b, k, d)):
            continue
        eps = run.epsilon(d)
        assert run.delta(eps) <= d, (b, k, d, eps)
        assert run.delta(eps) <= compose([LaplaceMechanism(b=b)], [k]).delta(eps)
