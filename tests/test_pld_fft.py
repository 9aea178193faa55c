"""The FFT composition kernel (``accountant/pld/pld_fft.py``) against direct sums.

Independent references: ``numpy.convolve`` (sums of non-negative terms, exact to
rounding) and brute-force cumulative sums for the convolution and its tail cuts;
repeated ``numpy.convolve`` for products of spectra; exact tail masses for the
Chernoff window.  The round-off bound is checked to cover the observed error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import fft as sp_fft

from dpacct.accountant.pld import pld_fft
from dpacct.accountant.pld.pld_fft import _accurate_convolve, _tail_cuts


def test_tail_cuts_match_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = rng.random(rng.integers(1, 40)) ** 6
        b = rng.random(rng.integers(1, 40)) ** 6
        a /= a.sum()
        b /= b.sum()
        c = np.convolve(a, b)
        tail = 10 ** rng.uniform(-6, -0.5)
        # the bottom cut has its own budget (GridPLD.convolve gives it more)
        bottom = tail * 10 ** rng.uniform(-1, 3)
        k_lo, m_lo, k_hi, m_hi = _tail_cuts(a, b, c, tail, bottom)
        top = np.cumsum(c[::-1])[::-1]
        bot = np.cumsum(c)
        if k_hi < c.size:
            assert m_hi == pytest.approx(top[k_hi], rel=1e-12, abs=1e-18)
            assert m_hi <= tail
        if k_lo >= 0:
            assert m_lo == pytest.approx(bot[k_lo], rel=1e-12, abs=1e-18)
            assert m_lo <= bottom


def test_accurate_convolution_keeps_tail_relative_precision():
    x = np.arange(-400, 401) * 0.02
    a = np.exp(-(x**2) / 2)
    a /= a.sum()
    c = _accurate_convolve(a, a, tail=1e-40)
    # exact convolution of two sampled Gaussians, computed in log space at the tail
    want_end = a[-1] * a[-1]
    assert c[-1] == pytest.approx(want_end, rel=1e-6)
    plain = np.convolve(a, a)
    np.testing.assert_allclose(c[700:900], plain[700:900], rtol=1e-9)


def test_tail_cuts_match_brute_force_on_long_arrays():
    """Arrays longer than the 64-entry first chunk (and squaring, b is a): the cut
    found by partial sums is the one full cumulative sums give, its mass exact."""
    rng = np.random.default_rng(7)
    for trial in range(120):
        a = rng.random(int(rng.integers(50, 700))) ** 8
        a /= a.sum()
        b = a if trial % 3 == 0 else rng.random(int(rng.integers(50, 700))) ** 8
        if b is not a:
            b /= b.sum()
        c = np.convolve(a, b)
        tail = 10 ** rng.uniform(-14, -1)
        k_lo, m_lo, k_hi, m_hi = _tail_cuts(a, b, c, tail)
        top = np.cumsum(c[::-1])[::-1]
        bot = np.cumsum(c)
        if k_hi < c.size:
            assert m_hi == pytest.approx(top[k_hi], rel=1e-9, abs=1e-18)
            assert m_hi <= tail
        if k_lo >= 0:
            assert m_lo == pytest.approx(bot[k_lo], rel=1e-9, abs=1e-18)
            assert m_lo <= tail


@pytest.mark.parametrize("side", [1, -1])
@pytest.mark.parametrize("square", [True, False])
def test_accurate_convolution_of_one_sided_tails_matches_direct_sums(side, square):
    """The one-step PLD of a subsampled mechanism: a narrow peak at one end and a long
    one-sided tail falling 40 orders of magnitude.  Every entry matches the direct
    convolution (sums of non-negative terms, exact to rounding) to 1e-8 relative."""
    i = np.arange(3000, dtype=float)
    a = np.exp(-0.5 * ((i - 20) / 4) ** 2) + 1e-3 * np.exp(-i / 80.0)
    b = a if square else np.exp(-0.5 * ((i[:2500] - 35) / 6) ** 2) + 1e-4 * np.exp(-i[:2500] / 60.0)
    if side < 0:
        a = a[::-1].copy()
        b = a if square else b[::-1].copy()
    got = _accurate_convolve(a, b, tail=1e-300)
    want = np.convolve(a, b)
    assert want.min() < 1e-30 * want.max()  # the tails really are deep
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=0)


def _pmf(rng: np.random.Generator, n: int, power: float = 3.0) -> np.ndarray:
    p = rng.random(n) ** power
    return p / p.sum()


@pytest.mark.parametrize("seed", range(4))
def test_fft_convolution_of_small_pmfs_is_numpy_convolve(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        a = _pmf(rng, int(rng.integers(1, 400)))
        b = _pmf(rng, int(rng.integers(1, 400)))
        want = np.convolve(a, b)
        got = pld_fft._fft_convolve(a, b)
        assert got.shape == want.shape
        # FFT round-off: a small multiple of u log2(n) times the largest entry (n < 1024)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * want.max())
        sq = pld_fft._fft_convolve(a, a, square=True)
        np.testing.assert_allclose(sq, np.convolve(a, a), rtol=0, atol=1e-14 * want.max() + 1e-14)


def _two_sided(seed):
    # sampled Gaussians over +-14 standard deviations (tails near 1e-43) with random
    # widths and lengths: the PLD of a Gaussian mechanism is of this shape
    rng = np.random.default_rng(seed)
    x = np.linspace(-14, 14, int(rng.integers(500, 1500)))
    y = np.linspace(-14, 14, int(rng.integers(300, 1500)))
    a = np.exp(-(x**2) / 2) * (1 + 0.1 * rng.random(x.size))
    b = np.exp(-(y**2) / 2 * rng.uniform(0.8, 1.2))
    a, b = a / a.sum(), b / b.sum()
    return _accurate_convolve(a, b, tail=1e-300), np.convolve(a, b)


@pytest.mark.parametrize("seed", range(3))
def test_accurate_convolution_of_two_sided_tails_matches_direct_sums(seed):
    got, want = _two_sided(seed)
    assert want.min() < 1e-40 * want.max()
    # never worse than a plain FFT (absolute), and relative 1e-8 down to 1e-7 of the peak
    assert np.abs(got - want).max() <= 1e-15 * want.max()
    big = want >= 1e-7 * want.max()
    np.testing.assert_allclose(got[big], want[big], rtol=1e-8, atol=0)
    assert np.all(got >= 0)


@pytest.mark.xfail(
    strict=True,
    reason="_accurate_convolve promises relative precision in the tails, but on "
    "two-sided Gaussian tails entries below about 1e-9 of the peak are only as good "
    "as the plain FFT (relative errors up to 1e4 at 1e-80): one tilt per side cannot "
    "lift a super-exponential tail",
)
def test_accurate_convolution_of_two_sided_tails_has_relative_precision_everywhere():
    got, want = _two_sided(2)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=0)


def test_top_and_bottom_index_are_the_brute_force_cuts():
    rng = np.random.default_rng(9)
    for _ in range(200):
        c = rng.random(int(rng.integers(1, 2000))) ** 10
        c[rng.random(c.size) < 0.05] = -1e-17  # round-off below zero counts as 0
        limit = float(10 ** rng.uniform(-8, 0)) * np.maximum(c, 0).sum()
        pos = np.maximum(c, 0.0)
        suffix = np.concatenate([np.cumsum(pos[::-1])[::-1], [0.0]])  # suffix[k] = sum c[k:]
        want_top = min(k for k in range(c.size + 1) if suffix[k] <= limit)
        assert pld_fft._top_index(c, limit) == want_top
        prefix = np.cumsum(pos)  # prefix[k] = sum c[:k+1]
        ok = [k for k in range(c.size) if prefix[k] <= limit]
        assert pld_fft._bottom_index(c, limit) == (max(ok) if ok else -1)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 100, 1023, 1024, 12345])
def test_power_by_squaring_counts_its_products(k):
    rng = np.random.default_rng(k)
    z = np.exp(1j * rng.uniform(0, 2 * np.pi, 50)) * rng.uniform(0.5, 1.0, 50) ** (1 / k)
    got, mults = pld_fft._power(z, k)
    np.testing.assert_allclose(got, z**k, rtol=1e-11)
    # not the floor(log2 k) + popcount(k) - 1 products made: the k - 1 rounded products
    # the result carries (each product adds its operands' counts plus one; review17)
    assert mults == k - 1
    assert math.floor(math.log2(k)) + bin(k).count("1") - 1 <= mults
    assert np.all(pld_fft._power(z, 0)[0] == 1)


def test_spectrum_product_and_its_roundoff_bound_cover_the_observed_error():
    # three cells with counts 2, 3, 5 (two of equal count): composed by spectra on a
    # window long enough that nothing wraps, the inverse transform is the linear
    # convolution power, computed here by repeated numpy.convolve
    rng = np.random.default_rng(2)
    pmfs = [_pmf(rng, 40), _pmf(rng, 25, 6.0), _pmf(rng, 60, 1.0), _pmf(rng, 7)]
    counts = np.array([2, 3, 5, 3])
    want = np.array([1.0])
    for p, k in zip(pmfs, counts, strict=True):
        for _ in range(k):
            want = np.convolve(want, p)
    n = 1024
    assert want.size <= n
    spec, mults = pld_fft._spectrum_product(pmfs, counts, n)
    norms = float(counts @ np.array([pld_fft._l2(p) for p in pmfs]))
    freq_l2, y, inv_l1 = pld_fft._spectral_error(spec, n, mults, norms)
    exact = np.zeros(n)
    exact[: want.size] = want
    err_l1 = float(np.abs(y - exact).sum())
    assert err_l1 <= freq_l2 + inv_l1
    assert freq_l2 + inv_l1 < 1e-11  # and not vacuous
    assert err_l1 > 0  # the check above is on a real round-off


def test_l2_rounds_the_norm_up():
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = rng.normal(size=int(rng.integers(1, 5000)))
        assert pld_fft._l2(x) >= float(np.sqrt(np.sum(np.square(x, dtype=np.longdouble))))
        z = x + 1j * rng.normal(size=x.size)
        assert pld_fft._l2(z) >= math.hypot(
            *[float(np.linalg.norm(part)) for part in (z.real, z.imag)]
        )


# --- rigorous per-entry round-off bounds (the certificate of GridPLD composition) ---


def _adversarial(rng, n, kind):
    """Non-negative test arrays: flat, wide dynamic range, one-sided and two-sided
    (Gaussian) tails, and entries at 1e-300 and 0."""
    i = np.arange(n)
    if kind == 0:
        x = rng.random(n)
    elif kind == 1:  # dynamic range down to e^-700 (1e-304)
        x = np.exp(-rng.random(n) * 700)
    elif kind == 2:  # a subsampled-mechanism shape: narrow peak, long right tail
        x = np.exp(-0.5 * (i / 3.0) ** 2) + 1e-3 * np.exp(-i * rng.uniform(0.05, 0.5))
    elif kind == 3:  # a Gaussian over +-14 sd (tails near 1e-43)
        x = np.exp(-0.5 * ((i - n / 2) / (n / 28 + 1)) ** 2)
    else:  # 1e-300 entries and zeros among others
        x = 10.0 ** (-rng.random(n) * 300)
        x[rng.random(n) < 0.2] = 1e-300
        x[rng.random(n) < 0.1] = 0.0
    return x / x.sum()


def _exact(a, b):
    """The exact convolution of two float arrays, in rationals."""
    fa = [Fraction(float(v)) for v in a]
    fb = [Fraction(float(v)) for v in b]
    out = []
    for k in range(len(fa) + len(fb) - 1):
        lo, hi = max(0, k - len(fb) + 1), min(k, len(fa) - 1)
        out.append(sum((fa[i] * fb[k - i] for i in range(lo, hi + 1)), Fraction(0)))
    return out


@pytest.mark.parametrize("kind", range(5))
def test_bounded_convolve_bounds_every_entry_exactly(kind):
    # sizes on both sides of the direct (64) and tilted-direct (192) thresholds
    rng = np.random.default_rng(100 + kind)
    for na, nb in [(5, 9), (70, 70), (150, 90), (250, 230), (400, 60)]:
        a = _adversarial(rng, na, kind)
        b = a if na == nb else _adversarial(rng, nb, kind)
        est, err = pld_fft._bounded_convolve(a, b)
        assert np.all(err >= 0) and np.all(np.isfinite(err))
        for e, d, x in zip(est, err, _exact(a, b), strict=True):
            assert abs(Fraction(float(e)) - x) <= Fraction(float(d))


@pytest.mark.parametrize("kind", [1, 2, 3, 4])
def test_bounded_convolve_bounds_mid_sizes_against_exact_sums(kind):
    # references by math.fsum of the products (each off by at most u relative)
    rng = np.random.default_rng(200 + kind)
    a = _adversarial(rng, 1100, kind)
    b = _adversarial(rng, 900, kind)
    est, err = pld_fft._bounded_convolve(a, b)
    u = 2.0**-53
    for k in range(est.size):
        lo, hi = max(0, k - b.size + 1), min(k, a.size - 1)
        terms = a[lo : hi + 1] * b[k - hi : k - lo + 1][::-1]
        ref = math.fsum(terms.tolist())
        assert abs(est[k] - ref) <= err[k] + 2 * u * ref + 1e-320


def test_bounded_convolve_takes_the_estimates_of_accurate_convolve_where_it_can():
    # the rigorous bound is no estimate: it may pick other entries, never other values
    # than an FFT, tilted or direct estimate would; both stay close to the exact sums
    rng = np.random.default_rng(7)
    a = _adversarial(rng, 3000, 3)
    est, err = pld_fft._bounded_convolve(a, a)
    want = np.convolve(a, a)
    assert np.all(np.abs(est - want) <= err + 1e-15 * want)
    # relative to each entry's own size, not the peak, in the tilted tails
    big = want > 1e-30
    assert np.all(err[big] <= 1e-6 * want[big])


# --- the plain transform's bound itself (pld_fft._fft_roundoff, pld_fft._pass_model) ---


def _exact_float_convolution(a, b):
    """``a * b`` in extended precision with a rigorous bound on its own error.

    ``numpy.convolve`` in ``longdouble`` (64-bit significand on x86-64): each entry is a
    sum of at most ``m`` products of doubles, so its error is at most ``gamma_{m+1}`` of
    the sum of the products' moduli (Higham 2002, Section 3.1), with ``u = 2^-64``.
    """
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("needs an 80-bit long double")
    la, lb = a.astype(np.longdouble), b.astype(np.longdouble)
    ref = np.convolve(la, lb)
    mags = np.convolve(np.abs(la), np.abs(lb))
    m = min(a.size, b.size) + 1
    u64 = np.longdouble(2.0) ** -64
    slack = mags * (m * u64 / (1 - m * u64)) * 1.01
    return ref, slack


@pytest.mark.parametrize(
    ("na", "nb"),
    [(300, 301), (3281, 3281), (5000, 3101), (1350, 1351), (2048, 2049)],
    ids=["600=2^3*3*5^2", "6561=3^8", "8100=2^2*3^4*5^2", "2700=2^2*3^3*5^2", "4096=2^12"],
)
@pytest.mark.parametrize("kind", ["gauss", "signed", "spiky", "alternating"])
def test_fft_roundoff_bounds_the_plain_convolution_on_mixed_radix_lengths(na, nb, kind):
    """The plain transform's bound covers its error on each radix pocketfft uses (the
    lengths are their own ``next_fast_len``: radices 4, 2, 3 and 5), against an
    extended-precision reference with its own error added.  The bound uses only norms,
    so it also holds for signed inputs, whose error is largest relative to them."""
    rng = np.random.default_rng(na + nb)
    n = na + nb - 1
    assert pld_fft._next_fast_len(n) == n == sp_fft.next_fast_len(n, real=True)
    if kind == "gauss":
        a = np.exp(-0.5 * ((np.arange(na) - na / 2) / (na / 12)) ** 2)
        b = np.exp(-0.5 * ((np.arange(nb) - nb / 3) / (nb / 20)) ** 2)
    elif kind == "signed":
        a, b = rng.normal(size=na), rng.normal(size=nb)
    elif kind == "spiky":
        a, b = rng.random(na) ** 40, rng.random(nb) ** 40
    else:
        a = (-1.0) ** np.arange(na) * (1 + rng.random(na))
        b = (-1.0) ** np.arange(nb) * (1 + rng.random(nb))
    # the kernel's numpy transform is scipy's pocketfft bit for bit (the pass model)
    assert np.array_equal(pld_fft._rfft(a, n), sp_fft.rfft(a, n))
    got = pld_fft._fft_convolve(a, b)
    ref, slack = _exact_float_convolution(a, b)
    err = np.abs(got.astype(np.longdouble) - ref) - slack
    bound = pld_fft._fft_roundoff(a, b)
    assert float(err.max()) <= bound
    sq = pld_fft._fft_convolve(a, a, square=True)
    ref2, slack2 = _exact_float_convolution(a, a)
    assert float((np.abs(sq.astype(np.longdouble) - ref2) - slack2).max()) <= (
        pld_fft._fft_roundoff(a, a)
    )


@pytest.mark.parametrize("width", [20.0, 200.0, 1500.0, 8000.0])
def test_fft_roundoff_is_within_a_few_hundred_estimates_on_gaussian_squares(width):
    """The bound is relative to the product's own scale, ``||a||_2 ||b||_2``, not to
    ``||a||_1 ||b||_2``: on the square of a sampled Gaussian it is at most 300 times the
    ``4u max|c|`` estimate at every width (the normwise bound it replaced was 500 times
    at width 20 and 18 000 times at 8 000, growing like the square root of the width)."""
    n = int(12 * width) + 1
    a = np.exp(-0.5 * ((np.arange(n) - n / 2) / width) ** 2)
    a /= a.sum()
    c = pld_fft._fft_convolve(a, a, square=True)
    estimate = 4 * 2.0**-53 * float(np.abs(c).max())
    assert pld_fft._fft_roundoff(a, a) <= 300 * estimate


def test_pass_model_of_lengths():
    # a power of four: only radix-4 passes, the componentwise constant of the inverse
    # is (1 + eta_4)^t (1 + u)^2 - 1 with eta_4 = (1 + u)^2 (1 + sqrt5 u)(1 + 8u) - 1
    u = 2.0**-53
    eta4 = (1 + u) ** 2 * (1 + math.sqrt(5) * u) * (1 + 8 * u) - 1
    rho, kappa = pld_fft._pass_model(4**8)
    assert kappa == pytest.approx((1 + eta4) ** 8 * (1 + u) ** 2 - 1, rel=1e-6)
    assert rho == pytest.approx((1 + 2 * eta4) ** 8 - 1, rel=1e-6)
    # more passes, larger constants; 3s and 5s cost more than their share of log2 n
    assert pld_fft._pass_model(2**12)[1] < pld_fft._pass_model(2**13)[1]
    assert pld_fft._pass_model(3**8)[1] / math.log2(3**8) > kappa / 16
    with pytest.raises(ValueError, match="5-smooth"):
        pld_fft._pass_model(7 * 64)


def test_tilt_rate_of_a_denormal_end_is_inf_without_an_overflow_warning():
    """A PMF whose last entry is denormal overflows peak / end; the rate is inf (the
    caller caps it) and no RuntimeWarning reaches the user."""
    import warnings

    from dpacct.accountant.pld.pld_fft import _tilt_rate

    p = np.array([1.0, 0.5, 5e-324])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _tilt_rate(p, 1) == np.inf
        assert _tilt_rate(p[::-1].copy(), -1) == np.inf


def test_next_fast_len_is_scipys_without_importing_it():
    """The kernel's own ``next_fast_len`` (it spares the ``scipy.fft`` import) is scipy's
    real one: on every length up to 5 000, around powers of 2, 3 and 5, and beyond its
    table (a Chernoff window test asks for 1.2e11 points before it declines)."""
    ns = list(range(1, 5001)) + [b**k + d for b in (2, 3, 5) for k in range(5, 16)
                                 for d in (-1, 0, 1)]
    ns += [2**34 - 1, 2**34, 2**34 + 1, 122_609_770_777]
    got = [pld_fft._next_fast_len(n) for n in ns]
    assert got == [sp_fft.next_fast_len(n, real=True) for n in ns]


# --- tilt weights with exact exponents (issue 37, session 25) ---


def test_short_theta_keeps_21_bits_toward_zero():
    rng = np.random.default_rng(25)
    for theta in [*(rng.uniform(-1, 1, 40) * 10.0 ** rng.uniform(-12, 2, 40)), 600 / 7]:
        t = pld_fft._short_theta(float(theta))
        assert abs(t) <= abs(theta) and t * theta > 0
        assert abs(theta - t) <= abs(theta) * 2.0**-20
        m, _ = math.frexp(t)  # at most 21 significant bits
        assert math.ldexp(m, 21) == int(math.ldexp(m, 21))
    assert pld_fft._short_theta(1e-250) == 0.0 and pld_fft._short_theta(0.0) == 0.0


@pytest.mark.parametrize("side", [1, -1])
def test_exp_progression_is_within_two_exps_and_a_product_of_mpmath(side):
    """Every entry against mpmath's exp of the exact (rational) exponent, within
    (1 + 4u)^2 (1 + u); with an unshortened rate (full 53-bit theta) the exponents
    are rounded and the far entries miss that bound: the shortening is what holds it."""
    import mpmath

    u = 2.0**-53
    rel = (1 + 4 * u) ** 2 * (1 + u) - 1
    n = 700
    raw = side * 600.0 / n * 0.987654321
    for theta, holds in ((pld_fft._short_theta(raw), True), (raw, False)):
        s = (n - 1) * theta if theta > 0 else 0.0
        worst = 0.0
        for start, step in ((-s, theta), (s - 3 * theta, -theta)):
            got = pld_fft._exp_progression(start, step, n)
            assert got.shape == (n,)
            with mpmath.workdps(40):
                for i in range(0, n, 7):
                    x = Fraction(start) + i * Fraction(step)  # the exact exponent
                    ref = mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
                    worst = max(worst, float(abs(mpmath.mpf(float(got[i])) / ref - 1)))
        assert (worst <= rel) == holds, (theta, worst, rel)


@pytest.mark.parametrize("kind, seed", [(2, 302), (3, 303), (1, 101)])
def test_bounded_convolve_with_exact_tilts_bounds_every_entry_exactly(kind, seed):
    """The pessimistic ladder's kernel (exact-exponent tilts) against exact rationals,
    on sizes that take the tilted paths: one skewed pass (kind 2) and a plain pass with
    both tails recomputed (kind 3); kind 1 on the draws of the plain kernel's
    test is where the exponents' exactness is needed: with the rate left unrounded
    (``_short_theta`` skipped) one entry exceeds its bound (session 25's
    review)."""
    rng = np.random.default_rng(seed)
    a = _adversarial(rng, 250, kind)
    b = _adversarial(rng, 230, kind)
    est, err = pld_fft._bounded_convolve(a, b, exact=True)
    assert np.all(err >= 0) and np.all(np.isfinite(err))
    # both sides of the certificate: the optimistic ladder tilts this way too (session 29)
    low = pld_fft._certified_convolve(a, b, 0.0, False, exact=True)
    high = pld_fft._certified_convolve(a, b, 0.0, True, exact=True)
    for e, d, x, lo, hi in zip(est, err, _exact(a, b), low, high, strict=True):
        assert abs(Fraction(float(e)) - x) <= Fraction(float(d))
        assert Fraction(float(lo)) <= x <= Fraction(float(hi))


def _fallback_pair(decay: float, power: float, mirrored: bool):
    """A coarse tail (peak at index 1, a hole where the bulk was) and a re-gridded bulk
    (a power-law decay): the shape of the optimistic tail products whose skewed pass
    leaves entries unsettled at both ends, so that the plain pass's tail recompute spans
    the whole arrays."""
    i = np.arange(3454.0)
    a = 7.5e-9 * 10 ** (-i / decay)
    a[0] *= 0.5
    a[3290:3452] = 0.0
    a[3452:] = 7.0e-9
    b = 0.32 * (np.arange(627.0) + 1.0) ** -power
    b[0] = 0.013
    return (a[::-1].copy(), b[::-1].copy()) if mirrored else (a, b)


@pytest.mark.parametrize("exact", [False, True])
def test_a_tilted_pass_entry_does_not_depend_on_what_is_kept(exact):
    # the premise of the hand-down below: without exact tilts any kept range is a slice
    # of the whole pass; with them, one starting at a multiple of _EXP_BLOCK (each weight
    # the same product of two exps), and not otherwise (the weights are split differently)
    a, b = _fallback_pair(100, 2.4, False)
    for side in (1, -1):
        whole = pld_fft._tilted_convolve(a, b, False, side, True, (0, None), exact)
        for k0, k1, same in ((0, 3000, True), (192, None, True), (640, 2000, True),
                             (1, None, not exact), (175, None, not exact)):
            part = pld_fft._tilted_convolve(a, b, False, side, True, (k0, k1), exact)
            assert np.array_equal(part[0], whole[0][k0:k1]) is same
            assert np.array_equal(part[1], whole[1][k0:k1]) is same


@pytest.mark.parametrize(
    "decay, power, mirrored, rigorous, exact",
    [(100, 2.4, False, True, False), (100, 4.0, False, False, False),
     (50, 4.0, True, True, False), (100, 4.0, True, False, True)],
)
def test_a_whole_array_tail_pass_is_read_from_the_skewed_pass_bit_for_bit(
    monkeypatch, decay, power, mirrored, rigorous, exact
):
    # issue 37: when the skewed pass leaves entries unsettled at the far end, the plain
    # pass's recompute of its own tail on the whole arrays (the same tilt) is read from
    # the skewed pass instead of made again; every entry and bound must be the one the
    # recompute gives (the reference: the same call with the hand-down cut off)
    a, b = _fallback_pair(decay, power, mirrored)
    tilted = []
    real_tilted = pld_fft._tilted_convolve

    def counting(*args, **kwargs):
        tilted.append(args[5] if len(args) > 5 else kwargs.get("keep"))
        return real_tilted(*args, **kwargs)

    monkeypatch.setattr(pld_fft, "_tilted_convolve", counting)
    got = pld_fft._convolve_choosing(a, b, 0.0, rigorous, exact)
    read = list(tilted)
    tilted.clear()
    plain = pld_fft._plain_first_convolve
    monkeypatch.setattr(pld_fft, "_plain_first_convolve",
                        lambda a, b, t, r, e, whole=None: plain(a, b, t, r, e))
    want = pld_fft._convolve_choosing(a, b, 0.0, rigorous, exact)
    assert read == [None] and len(tilted) == 2  # the hand-down was taken, one pass saved
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # and the bounds hold against direct sums (non-negative terms: exact to rounding)
    if rigorous:
        exact = np.convolve(a, b)
        assert np.all(np.abs(got[0] - exact) <= got[1] + 1e-300)


def test_plain_pass_handed_its_roundoff_bound_is_the_pass_that_computes_it():
    """``_plain_first_convolve(..., roundoff=)`` (the optimistic tail products hand it the
    bound their budget check computed; issue 37, session 34): the same estimate and
    error arrays as computing it, and the handed value is the one used."""
    from dpacct.accountant.pld.pld_fft import _fft_roundoff, _plain_first_convolve

    rng = np.random.default_rng(34)
    a = np.exp(-0.5 * (np.arange(700) / 90.0) ** 2) * rng.uniform(0.5, 1.0, 700)
    b = np.exp(-np.arange(400) / 30.0)
    for tail in (0.0, 1e-30, 1e-3):
        want = _plain_first_convolve(a, b, tail, True)
        got = _plain_first_convolve(a, b, tail, True, roundoff=_fft_roundoff(a, b))
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    big = 1e3 * _fft_roundoff(a, b)
    assert _plain_first_convolve(a, b, 0.0, True, roundoff=big)[1].max() == big


@pytest.mark.parametrize("k", [0, 1, 2, 3, 6, 7, 12])
def test_power_consuming_its_argument_gives_the_same_power(k):
    """``_power(x, k, consume=True)`` may return ``x`` itself changed in place (a fresh
    product or transform): the same values as ``_power(x, k)`` on a copy, which leaves
    ``x`` untouched."""
    from dpacct.accountant.pld.pld_fft import _power

    rng = np.random.default_rng(k)
    x = rng.normal(size=33) + 1j * rng.normal(size=33)
    keep = x.copy()
    want, m = _power(x, k)
    assert np.array_equal(x, keep)
    got, m2 = _power(x.copy(), k, consume=True)
    assert m2 == m and np.array_equal(got.view(float), want.view(float))
