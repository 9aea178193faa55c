"""accountant/families/gaussian_certified.py and the certified Gaussian inversion: the
float bounds on the exact mu-GDP curve (Balle & Wang 2018, Theorem 8) against mpmath at
60+ digits (an independent evaluation), the measured error constants they rest on
re-measured on fresh points (tests/test_normal_tails.py), and the certified epsilon
bracket against an mpmath root."""

from __future__ import annotations

import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.families import gaussian_certified as gc
from dpacct.accountant.families.gaussian_dp import (
    certified_gaussian_bracket,
    certified_gaussian_delta,
    certified_gaussian_epsilon,
    gaussian_delta,
    gaussian_delta_at_most_exact,
)
from dpacct.accountant.numerics import invert_decreasing

U = 2.0**-53


def mp_log_delta(mu: float, eps: float):
    """log of the exact curve at the floats mu, eps (as exact reals), in mpmath: the
    closed form at 60 digits plus those the cancellation costs (None if it is 0)."""
    with mpmath.workdps(60 + max(0, math.ceil(-math.log10(mu)))):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        d = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        return mpmath.log(d) if d > 0 else None


def _points(rng: np.random.Generator, n: int):
    """(mu, eps) over the range users ask and beyond: mu in [1e-5, 1e3], eps where
    the curve is between about 1e-300 and 1 (a = mu/2 - eps/mu in [-37, 30]), plus
    eps = 0 and tiny eps."""
    out = []
    for _ in range(n):
        mu = float(10 ** rng.uniform(-5, 3))
        z = float(rng.uniform(-30, 37))
        u = rng.random()
        if u < 0.8:
            eps = max(0.0, mu * (mu / 2 + z))
        elif u < 0.9:
            eps = float(10 ** rng.uniform(-300, 0))
        else:
            eps = 0.0
        out.append((mu, eps))
    return out


def test_bounds_contain_the_exact_curve_on_a_dense_random_grid():
    rng = np.random.default_rng(20261128)
    checked = 0
    for mu, eps in _points(rng, 1500):
        bounds = gc.log_delta_bounds(mu, eps)
        if bounds is None:
            continue
        exact = mp_log_delta(mu, eps)
        if exact is None:
            continue
        checked += 1
        assert bounds[0] <= exact <= bounds[1], (mu, eps, bounds, exact)
    assert checked > 1000  # the float path answers most of the grid


@pytest.mark.parametrize(
    ("mu", "eps"),
    [
        (1.0, 0.0),
        (1.0, 1.0),
        (1.0, 4.377178095681225),  # delta 1e-5
        (2.0**-0.5, 30.0),  # delta near 1e-200
        (0.05, 0.3299019562162755),  # sigma 20: the two terms cancel
        (1 / 4300, 0.0077),  # sigma 4 300, delta near 1e-250: heavy cancellation
        (50.0, 1462.285015964764),  # a near -1.6, b near -51.6
        (200.0, 20000.0 - 7000.0),  # a = 35: Phi(a) near 1
        (1e-5, 1e-3),  # sigma 1e5, a = -100: the curve below Phi(-40)
        (3.0, 1e-300),  # a tiny epsilon
        (1e3, 5e5 + 30.0 * 1e3),  # b = -1030
    ],
)
def test_bounds_at_extremes(mu, eps):
    bounds = gc.log_delta_bounds(mu, eps)
    exact = mp_log_delta(mu, eps)
    if bounds is None or exact is None:
        # outside the float path: at_most then defers to mpmath, which answers
        assert gc.at_most(mu, eps, 1e-5) in (None, True)
        return
    assert bounds[0] <= exact <= bounds[1]


@settings(max_examples=300, deadline=None)
@given(
    mu=st.floats(min_value=1e-3, max_value=100.0),
    z=st.floats(min_value=-37.0, max_value=20.0),
)
def test_bounds_hypothesis(mu, z):
    eps = max(0.0, mu * (mu / 2 + z))
    bounds = gc.log_delta_bounds(mu, eps)
    exact = mp_log_delta(mu, eps)
    if bounds is not None and exact is not None:
        assert bounds[0] <= exact <= bounds[1]


def test_bounds_are_narrow_where_nothing_cancels():
    # the point of the float path: it decides the certificate checks without mpmath
    for mu, eps in [(1.0, 4.377178095681225), (0.5, 3.0), (2.0, 10.0), (0.2, 1.0)]:
        lo, hi = gc.log_delta_bounds(mu, eps)
        assert hi - lo < 1e-12


def _mp_at_most(mu: float, eps: float, delta: float) -> bool:
    """Whether the exact curve at (mu, eps) is at most delta (mpmath, 60+ digits)."""
    exact = mp_log_delta(mu, eps)
    return exact is None or exact <= mpmath.log(mpmath.mpf(delta))


@settings(max_examples=60, deadline=None)
@given(
    log_mu=st.floats(min_value=-4.0, max_value=2.5),
    log_delta=st.floats(min_value=-250.0, max_value=-0.4),
)
def test_certified_epsilon_ends_hold_on_the_exact_curve(log_mu, log_delta):
    """The upper end meets delta on the exact curve (at mu itself: the bracket is for
    the real mu a float stands for, whose curve lies between mu (1 -+ 2^-50)), and
    the lower end does not, unless it is 0."""
    mu, delta = 10.0**log_mu, 10.0**log_delta
    lo, hi = certified_gaussian_epsilon(mu, delta)
    assert 0.0 <= lo <= hi
    assert _mp_at_most(mu, hi, delta)
    if lo > 0.0:
        assert not _mp_at_most(mu, math.nextafter(lo, 0.0), delta)


@pytest.mark.parametrize(
    ("mu", "delta"),
    [(1.0, 1e-5), (0.3, 1e-10), (2.0, 1e-100), (1 / 1.1, 0.3), (10.0, 1e-5),
     (math.sqrt(5900) / 50, 1e-5), (0.05, 1.2797679843643717e-13), (1 / 4300, 1e-250),
     (1e-4, 1e-5), (80.0, 1e-5)],
)
def test_certified_epsilon_brackets_the_mpmath_root(mu, delta):
    lo, hi = certified_gaussian_epsilon(mu, delta)
    with mpmath.workdps(60 + max(0, math.ceil(-math.log10(mu)))):
        m, d = mpmath.mpf(mu), mpmath.mpf(delta)

        def f(e):
            return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m) - d

        if f(0) <= 0:
            root = mpmath.mpf(0)
        else:
            root = mpmath.findroot(f, (mpmath.mpf(lo) * (1 - mpmath.mpf(1e-9)),
                                       mpmath.mpf(hi) * (1 + mpmath.mpf(1e-9)) + 1e-300),
                                   solver="anderson")
    assert lo <= root <= hi
    # a few ulps on the float path; the 50-digit fallback (heavy cancellation) stops
    # at 2^-40 relative
    assert hi - lo <= 2e-11 * hi + 1e-300


def test_certified_epsilon_as_tight_as_the_50_digit_bracket():
    """Against the former route (bisection of the float curve, ends checked at 50 digits):
    the upper ends agree to 1e-13 relative on 200 random (mu, delta)."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        mu = float(10 ** rng.uniform(-1.5, 1.5))
        delta = float(10 ** rng.uniform(-30, -1))
        new = certified_gaussian_epsilon(mu, delta)
        lo, hi = invert_decreasing(lambda e, mu=mu: gaussian_delta(mu, e), delta)
        old = certified_gaussian_bracket(mu, delta, lo, hi)
        assert new[1] <= old[1] * (1 + 1e-13)
        assert new[0] <= old[1] and old[0] <= new[1]


def test_certified_delta_is_an_upper_bound_and_tight():
    rng = np.random.default_rng(3)
    for mu, eps in _points(rng, 200):
        if mu > 50:
            continue
        d = float(certified_gaussian_delta(mu, np.array([eps]))[0])
        exact = mp_log_delta(mu * (1 + 2.0**-50), eps)
        if exact is None:
            continue
        with mpmath.workdps(60):
            assert mpmath.log(mpmath.mpf(d)) >= exact or d == math.nextafter(0.0, 1.0)
        if d > 1e-290:
            assert math.log(d) - exact < 1e-11


def test_at_most_agrees_with_the_50_digit_decision():
    rng = np.random.default_rng(5)
    for mu, eps in _points(rng, 300):
        if mu > 50:
            continue
        exact = mp_log_delta(mu, eps)
        if exact is None:
            continue
        for factor in (0.5, 1 - 1e-9, 1 + 1e-9, 2.0):
            delta = float(mpmath.exp(exact)) * factor
            if not 1e-300 < delta < 1:
                continue
            decided = gc.at_most(mu, eps, delta)
            if decided is not None:
                assert decided == (exact <= mpmath.log(delta))
            assert gaussian_delta_at_most_exact(mu, eps, delta) == bool(exact <= mpmath.log(delta))


def test_everyday_gaussian_queries_import_no_mpmath():
    """A composition of Gaussians' epsilon and delta are certified without the 50-digit
    curve (the former route imported mpmath and evaluated it on every query)."""
    code = (
        "import sys\n"
        "from dpacct.accountant import compose\n"
        "from dpacct.mechanisms import GaussianMechanism\n"
        "m = compose([GaussianMechanism(sigma=50.0)], counts=[5900])\n"
        "m.epsilon(1e-5); m.delta(1.0); m.epsilon_bounds(1e-5)\n"
        "print('mpmath' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------- small mu (issue 37)
def _mp_erfcx_drop(s: float, h: float):
    """erfcx(s) - erfcx(s + h) at 50 digits, the floats taken as exact."""
    with mpmath.workdps(50):
        a, b = mpmath.mpf(s), mpmath.mpf(s) + mpmath.mpf(h)
        return mpmath.exp(a * a) * mpmath.erfc(a) - mpmath.exp(b * b) * mpmath.erfc(b)


def test_erfcx_drop_contains_the_50_digit_difference():
    """The quadrature bound on ``erfcx(s) - erfcx(s + h)`` holds at its extremes (the
    largest remainder at ``s = 0, h = 0.5``; the strongest cancellation inside ``g`` at
    ``s = 26``) and on random points, and is narrow where mu is small."""
    rng = np.random.default_rng(37)
    points = [(0.0, 0.5), (26.0, 0.5), (26.0, 1e-10), (0.0, 1e-10), (1e-300, 0.3),
              (3.0, 0.02 / math.sqrt(2)), (3.0, 1e-3 / math.sqrt(2))]
    points += [(float(rng.uniform(0.0, 26.5)), float(10 ** rng.uniform(-10, -0.3)))
               for _ in range(60)]
    for s, h in points:
        bounds = gc._erfcx_drop(s, h)
        assert bounds is not None, (s, h)
        exact = _mp_erfcx_drop(s, h)
        assert bounds[0] <= exact <= bounds[1], (s, h, bounds, exact)
        if h <= 0.05:  # a few hundred u times 2 s^2 (the old difference: 4 s^2 / h)
            assert bounds[1] - bounds[0] <= 1e-12 * (1 + s * s) * float(exact), (s, h)


def test_the_quadrature_constants_are_correctly_rounded():
    """The error bound assumes the Gauss-Legendre nodes and weights, 2/sqrt(pi) and
    1/sqrt(pi) are the floats nearest their real values (40 digits here)."""
    with mpmath.workdps(40):
        r = mpmath.sqrt(mpmath.mpf(6) / 5) * 2 / 7
        xs = [mpmath.sqrt(mpmath.mpf(3) / 7 + r), mpmath.sqrt(mpmath.mpf(3) / 7 - r)]
        ws = [(18 - mpmath.sqrt(30)) / 36, (18 + mpmath.sqrt(30)) / 36]
        want_c = [float(1 - xs[0]), float(1 - xs[1]), float(1 + xs[1]), float(1 + xs[0])]
        pi = mpmath.sqrt(mpmath.pi)
        assert gc._TWO_OVER_SQRT_PI == float(2 / pi) and gc._INV_SQRT_PI == float(1 / pi)
    assert list(gc._GL_WEIGHTS) == [float(ws[0]), float(ws[1]), float(ws[1]), float(ws[0])]
    for got, want in zip(gc._GL_ONE_PLUS, want_c, strict=True):
        assert abs(got - want) <= 2 * U  # 1 + xi rounded from the correctly rounded xi


def test_small_mu_is_certified_without_50_digits(monkeypatch):
    """mu in [1e-3, 0.2] (the NoisyGD trajectory's 0.02 first): the bracket's ends hold
    on the exact curve at 60+ digits, are at most 2e-13 apart (relative), and no
    50-digit evaluation is made."""
    from dpacct.accountant.families import gaussian_dp

    def refuse(mu, eps):
        raise AssertionError(f"50-digit evaluation at mu={mu!r}, eps={eps!r}")

    monkeypatch.setattr(gaussian_dp, "_gaussian_delta_mp", refuse)
    rng = np.random.default_rng(2026)
    cases = [(0.020000000000000035, 1e-5), (1e-3, 1e-12), (0.2, 1e-15), (1e-3, 1e-4)]
    cases += [(float(10 ** rng.uniform(-3, -0.7)), float(10 ** rng.uniform(-15, -4)))
              for _ in range(30)]
    for mu, delta in cases:
        lo, hi = certified_gaussian_epsilon(mu, delta)
        assert 0.0 < lo <= hi <= lo * (1 + 2e-13), (mu, delta, lo, hi)
        assert _mp_at_most(mu, hi, delta), (mu, delta)
        assert not _mp_at_most(mu, math.nextafter(lo, 0.0), delta), (mu, delta)


def test_small_mu_bounds_hold_out_to_huge_epsilons():
    """log_delta_bounds at mu in [1e-3, 0.2] and epsilons out to ``a = -1e4`` (the
    scaled form to ``a = -37``, the log form beyond) contain the exact curve, and the
    certified delta bounds it above."""
    rng = np.random.default_rng(44)
    checked = 0
    for _ in range(50):
        mu = float(10 ** rng.uniform(-3, -0.7))
        z = float(10 ** rng.uniform(0, 4)) if rng.random() < 0.5 else float(rng.uniform(-3, 37))
        eps = mu * (mu / 2 + z)
        exact = mp_log_delta(mu, eps)
        bounds = gc.log_delta_bounds(mu, eps)
        if exact is None or bounds is None:
            continue
        checked += 1
        assert bounds[0] <= exact <= bounds[1], (mu, eps, bounds, exact)
        d = float(certified_gaussian_delta(mu, np.array([eps]))[0])
        with mpmath.workdps(60):
            assert mpmath.log(mpmath.mpf(d)) >= exact or d == math.nextafter(0.0, 1.0)
    assert checked > 25


# ------------------------------------- delta(eps) at small mu in float (issue 37, s22)
def _count_mp(monkeypatch):
    """Wrap the 50-digit curve so that its calls are counted (and still answered)."""
    from dpacct.accountant.families import gaussian_dp

    calls = []
    original = gaussian_dp._gaussian_delta_mp

    def counted(mu, eps):
        calls.append((mu, eps))
        return original(mu, eps)

    monkeypatch.setattr(gaussian_dp, "_gaussian_delta_mp", counted)
    return calls


def test_erfcx_derivative_bound_left_of_zero():
    """The bound on ``|erfcx^(n)|`` at ``x < 0`` holds against mpmath's derivatives (the
    nodes of the quadrature left of 0, epsilon below mu^2 / 2)."""
    for n in (2, 9):
        for x in (-1e-12, -0.01, -0.08, -0.3, -1.0):
            with mpmath.workdps(40):
                exact = abs(mpmath.diff(lambda y: mpmath.exp(y * y) * mpmath.erfc(y),
                                        mpmath.mpf(x), n))
            assert gc._erfcx_derivative_bound(n, x) >= exact, (n, x)


@settings(max_examples=80, deadline=None)
@given(
    log_mu=st.floats(min_value=-289.0, max_value=math.log10(0.21)),
    share=st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=3.0)),
)
def test_small_mu_bounds_hold_below_half_mu_squared(log_mu, share):
    """At small mu and epsilon up to 1.5 mu^2 (``a`` positive: the scaled form's
    integral from a negative ``s``), the float interval and the direct upper bound hold
    on the exact curve (mpmath, 60 digits plus the cancellation's) and are narrow."""
    mu = 10.0**log_mu
    eps = share * mu * mu / 2.0
    exact = mp_log_delta(mu, eps)
    lo, hi = gc.log_delta_bounds(mu, eps)
    assert lo <= exact <= hi, (mu, eps)
    assert hi - lo <= 2.0**-40, (mu, eps, hi - lo)
    direct = gc.delta_upper(mu, eps)
    if direct is not None:
        assert mpmath.exp(exact) <= direct
        if mu <= 0.05:  # near 0.2 the quadrature's remainder widens it (1e-12)
            assert direct <= float(mpmath.exp(exact)) * (1 + 64 * U)


def test_small_mu_delta_is_certified_without_50_digits(monkeypatch):
    """``GaussianMechanism.delta`` at mu in [1e-289, 0.2] and epsilon 0, tiny, and up to
    ``a = -1`` makes no 50-digit evaluation, bounds the exact curve at mu and is within
    1e-14 of it at mu <= 0.05 (main: the 50-digit curve rounded up at most epsilons
    below mu^2 / 2), 2^-40 above (the log form's width, as main)."""
    from dpacct.mechanisms import GaussianMechanism

    calls = _count_mp(monkeypatch)
    rng = np.random.default_rng(22)
    mus = [0.2, 0.1, 0.05, 0.02, 1e-3, 1e-8, 1e-100, 1e-250]
    mus += [float(10 ** rng.uniform(-289, math.log10(0.2))) for _ in range(24)]
    for mu in mus:
        sigma = 1.0 / mu
        for eps in (0.0, 1e-300, mu * mu / 4, mu * mu / 2, mu * (mu / 2 + 0.5)):
            got = GaussianMechanism(sigma=sigma).delta(eps)
            exact = mpmath.exp(mp_log_delta(1.0 / sigma, eps))
            tol = 1e-14 if mu <= 0.05 else 2.0**-40  # the log form's width near 0.2
            assert exact <= got <= float(exact) * (1 + tol), (sigma, eps, got)
    assert calls == []
