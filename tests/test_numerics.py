"""``dpacct.accountant.numerics``: float limits, ``next_up``, the one curve inversion and
``brentq``, against independent values (IEEE 754 facts, closed forms, mpmath roots)."""

from __future__ import annotations

import math
import sys

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import gaussian_delta_curve, gaussian_epsilon
from scipy.special import logsumexp as scipy_logsumexp

from dpacct.accountant.numerics import (
    EXP_MAX,
    EXP_OVERFLOW,
    SUBNORMAL_FLOOR,
    TINY,
    LazyModule,
    _bar_disabled,
    _log_expm1,
    brentq,
    invert_decreasing,
    logsumexp,
    next_up,
)


def test_float_limits_are_inside_the_double_range():
    # log of the largest double is 709.78...: both exponents stay finite, with room
    assert EXP_OVERFLOW < EXP_MAX < math.log(sys.float_info.max)
    assert math.isfinite(math.exp(EXP_MAX))
    # TINY is a normal double, SUBNORMAL_FLOOR a subnormal one above the smallest (2^-1074)
    assert sys.float_info.min < TINY
    assert 2.0**-1074 < SUBNORMAL_FLOOR < sys.float_info.min


@pytest.mark.parametrize(
    "x, ulps, want",
    [
        (1.0, 1, 1.0 + 2.0**-52),  # the spacing of doubles in [1, 2) is 2^-52
        (1.0, 3, 1.0 + 3 * 2.0**-52),
        (0.0, 1, 2.0**-1074),  # the smallest subnormal
        (-1.0, 1, -1.0 + 2.0**-53),  # below 1 in magnitude the spacing halves
        (2.0**60, 2, 2.0**60 + 2 * 2.0**8),
    ],
)
def test_next_up_moves_by_whole_ulps(x, ulps, want):
    assert next_up(x, ulps) == want


def test_next_up_leaves_non_finite_values_alone():
    assert next_up(math.inf, 5) == math.inf
    assert next_up(-math.inf) == -math.inf
    assert math.isnan(next_up(math.nan))


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-5), (0.5, 1e-9), (3.0, 1e-3)])
def test_invert_decreasing_brackets_the_gaussian_epsilon(sigma, delta):
    lo, hi = invert_decreasing(lambda e: gaussian_delta_curve(e, 1 / sigma), delta)
    want = gaussian_epsilon(1 / sigma, delta)
    assert lo <= want * (1 + 1e-12) and want <= hi * (1 + 1e-12)
    assert hi - lo <= 1e-13 * hi
    # the documented invariant: above the target at lo, at or below it at hi
    assert (
        gaussian_delta_curve(np.array([lo]), 1 / sigma)[0]
        > delta
        >= gaussian_delta_curve(np.array([hi]), 1 / sigma)[0]
    )


def test_invert_decreasing_stops_at_the_pure_epsilon():
    # randomized response with p = 3/4: delta(eps) = max(0, (3 - e^eps) / 4), pure log 3
    def curve(e):
        return np.maximum(0.0, (3.0 - np.exp(e)) / 4.0)

    lo, hi = invert_decreasing(curve, 0.0, ceiling=math.log(3.0))
    assert hi == math.log(3.0)
    assert math.log(3.0) * (1 - 1e-12) <= lo < hi
    # below the curve's value at 0 (1/2) nothing is needed
    assert invert_decreasing(curve, 0.5) == (0.0, 0.0)
    # a target below delta(0) but no ceiling: the closed form log(3 - 4 delta)
    lo, hi = invert_decreasing(curve, 0.1)
    assert lo <= math.log(2.6) <= hi and hi - lo <= 1e-13 * hi


def test_invert_decreasing_gives_up_on_a_curve_that_never_meets_the_target():
    lo, hi = invert_decreasing(lambda e: np.full_like(e, 0.5), 0.1)
    assert hi == math.inf and lo > 2.0**999


def test_brentq_finds_the_dottie_number():
    # the unique real root of cos(x) = x, 0.739085133215160641655312... (OEIS A003957)
    root = brentq(lambda x: math.cos(x) - x, 0.0, 1.0, xtol=1e-15, rtol=1e-15)
    assert root == pytest.approx(0.7390851332151607, abs=4e-16)


def test_brentq_meets_its_tolerance_on_closed_form_roots():
    """Brent's method (pure Python since issue 37) on odd powers and tanh-shifted
    powers with known roots ``c``, random brackets around them: the answer is within
    ``xtol + rtol |c|`` of ``c`` and the evaluations are about those of SciPy's C
    brentq on the same problems (measured 375 058 against 375 104 on 6 000)."""
    rng = np.random.default_rng(37)
    for i in range(300):
        c = float(rng.uniform(-5.0, 5.0))
        k, p = float(rng.uniform(0.1, 10.0)), int(rng.integers(1, 6))
        tanh = i % 3 == 0

        def f(x, c=c, k=k, p=p, tanh=tanh):
            return k * math.copysign(abs(x - c) ** p, x - c) + (math.tanh(x - c) if tanh else 0.0)

        a, b = c - float(rng.uniform(0.01, 10.0)), c + float(rng.uniform(0.01, 10.0))
        for xtol, rtol in ((1e-15, 1e-14), (1e-8, 1e-10), (2e-12, 4 * 2.0**-52)):
            root = brentq(f, a, b, xtol=xtol, rtol=rtol, maxiter=500)
            assert abs(root - c) <= xtol + rtol * abs(c)


def test_brentq_refuses_a_bracket_without_a_sign_change_and_tiny_tolerances():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0, xtol=1e-12, rtol=1e-12)
    with pytest.raises(ValueError, match="rtol"):
        brentq(lambda x: x, -1.0, 1.0, xtol=1e-12, rtol=1e-17)
    assert brentq(lambda x: x - 1.0, 1.0, 3.0, xtol=1e-12, rtol=1e-12) == 1.0  # f(a) == 0


def test_brentq_does_not_import_scipy_optimize():
    """Importing scipy.optimize cost 0.15 s CPU of a cold noise-multiplier calibration
    (issue 37); the root finder no longer needs it (fails on main: it imported it)."""
    import subprocess

    code = (
        "import sys; from dpacct.accountant.numerics import brentq; "
        "brentq(lambda x: x * x - 2.0, 0.0, 2.0, xtol=1e-15, rtol=1e-15); "
        "print('scipy.optimize' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "x", [0.0, 1e-300, 1e-20, 1e-8, 0.5, 1.0, 1.0 + 2**-52, 2.0, 30.0, 31.0, 700.0, 1e5]
)
def test_log_expm1_against_mpmath(x):
    got = float(_log_expm1(x))
    if x == 0.0:
        assert got == -math.inf
        return
    with mp.workdps(50):
        want = float(mp.log(mp.expm1(mp.mpf(x))))
    assert got == pytest.approx(want, rel=4e-16, abs=0)
    assert float(_log_expm1(x, 30.0)) == pytest.approx(want, rel=4e-16, abs=0)


def test_log_expm1_ends_and_arrays():
    out = _log_expm1(np.array([0.0, math.inf, 2.0]))
    assert out[0] == -math.inf and out[1] == math.inf and out.shape == (3,)
    assert math.isnan(float(_log_expm1(-1.0)))  # outside the domain: nan, never a number


def test_progress_bars_follow_tqdm_disable(monkeypatch, capsys):
    """A bar the caller asked for is hidden when TQDM_DISABLE is set (tqdm's own switch,
    which an explicit ``disable=`` would otherwise override): the notebooks and any
    load-independent run rely on it."""
    from dpacct.accountant.transformers import random_allocation_pld as rap

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert _bar_disabled(True) is False and _bar_disabled(False) is True
    monkeypatch.setattr(rap, "PROGRESS_DELAY", 0.0)  # show at once, load or not
    monkeypatch.setattr(rap, "_LAWS", {})
    rap.allocation_sum_law(1.0, 64, progress=True)
    assert "random-allocation law" in capsys.readouterr().err
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert _bar_disabled(True) is True
    monkeypatch.setattr(rap, "_LAWS", {})
    rap.allocation_sum_law(1.0, 64, progress=True)
    assert capsys.readouterr().err == ""


def test_nonzero_at_is_flatnonzero():
    """``nonzero_at`` finds exactly ``np.flatnonzero``'s indices: NaN and infinities
    count, ``-0.0`` and subnormal-free zeros do not, on mostly-zero arrays like the
    fine cells and on random signs and shapes (an index set drawn independently)."""
    from dpacct.accountant.numerics import nonzero_at

    rng = np.random.default_rng(33)
    for size in (0, 1, 7, 1000, 40_000):
        x = np.zeros(size)
        picks = rng.random(size) < 0.15
        x[picks] = rng.standard_normal(int(picks.sum()))
        special = rng.integers(0, max(size, 1), size=min(size, 6))
        if size:
            x[special[:2]] = -0.0
            x[special[2:3]] = np.nan
            x[special[3:4]] = -np.inf
            x[special[4:5]] = 5e-324
        expect = [i for i, v in enumerate(x.tolist()) if v != 0 or v != v]
        assert nonzero_at(x).tolist() == expect
        assert np.array_equal(nonzero_at(x), np.flatnonzero(x))
    grid = rng.standard_normal((3, 5)) * (rng.random((3, 5)) < 0.5)
    assert np.array_equal(nonzero_at(grid), np.flatnonzero(grid))


def test_float_crossing_is_the_smallest_float_where_met_holds():
    """Against a brute-force walk over consecutive floats (seeded thresholds, starts
    from far below to far above the crossing)."""
    from dpacct.accountant.numerics import float_crossing

    rng = np.random.default_rng(20261201)
    for _ in range(200):
        t = float(10 ** rng.uniform(-300, 300))
        start = t * float(10 ** rng.uniform(-3, 3)) if rng.random() < 0.5 else t
        lo, hi = float_crossing(lambda x, t=t: x >= t, start)
        assert hi == t and lo == math.nextafter(t, 0.0)
        lo, hi = float_crossing(lambda x, t=t: x > t, start)
        assert lo == t and hi == math.nextafter(t, math.inf)


def test_roll_left_is_np_roll_backwards():
    """``roll_left(y, k)`` is ``np.roll(y, -k)``: shifts of every sign and size, the
    empty and one-entry arrays, signed zeros and NaN kept where they go."""
    from dpacct.accountant.numerics import roll_left

    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 64):
        y = rng.normal(size=n)
        if n > 2:
            y[:3] = (-0.0, np.nan, np.inf)
        for k in (0, 1, -1, 3, n, n + 2, -3 * n - 1, 10**9):
            got, want = roll_left(y, k), np.roll(y, -k)
            assert got.shape == want.shape
            assert np.array_equal(got.view(np.int64), want.view(np.int64))


# ------------------------------------------------------------------ logsumexp
_ENTRY = st.one_of(
    st.floats(-800.0, 800.0, allow_nan=False),
    st.sampled_from([-np.inf, np.inf, np.nan, 0.0, -745.0, 709.0]),
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 6),
    data=st.data(),
)
def test_logsumexp_is_scipys_to_the_last_bit(rows, cols, data):
    """The RDP series sum with :func:`logsumexp`: the same doubles as SciPy's on every
    real input, infinities, NaNs, ties and all-``-inf`` rows included (an independent
    implementation is the oracle)."""
    vals = data.draw(st.lists(_ENTRY, min_size=rows * cols, max_size=rows * cols))
    a = np.array(vals, dtype=float).reshape(rows, cols)
    if data.draw(st.booleans()):
        a[:, 0] = a[:, -1]  # ties at the maximum
    for axis in (0, 1, None):
        want = np.asarray(scipy_logsumexp(a, axis=axis))
        got = np.asarray(logsumexp(a, axis=axis))
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_logsumexp_edges():
    assert logsumexp([0.0, 0.0]) == math.log(2.0)
    assert logsumexp([-np.inf, -np.inf]) == -math.inf
    assert logsumexp([]) == -math.inf
    assert logsumexp([1000.0, 1000.0]) == 1000.0 + math.log(2.0)  # no overflow
    assert logsumexp([np.inf, 1.0]) == math.inf
    assert math.isnan(logsumexp([np.nan, 1.0]))
    out = logsumexp(np.zeros((0, 3)), axis=0)
    np.testing.assert_array_equal(out, np.full(3, -np.inf))
    # a 3-d reduction over the last axis, as rdp_floor sums its terms
    a = np.random.default_rng(3).normal(size=(4, 5, 7)) * 50.0
    np.testing.assert_array_equal(logsumexp(a, axis=2), scipy_logsumexp(a, axis=2))


def test_lazy_bar_imports_tqdm_only_when_due():
    """The bar is created (and tqdm imported) only at the first update after ``delay``;
    a hidden bar (``progress=False`` or ``TQDM_DISABLE``) never creates it; the real bar
    starts at the count so far.  In a fresh interpreter, so that ``tqdm`` is not yet in
    ``sys.modules`` (the other tests import it)."""
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "os.environ.pop('TQDM_DISABLE', None)\n"
        "from dpacct.accountant.numerics import LazyBar\n"
        "with LazyBar(total=5, desc='x', delay=3600.0, progress=True) as b:\n"
        "    b.update(2)\n"
        "print(b.n, b.shown, 'tqdm' in sys.modules)\n"
        "with LazyBar(total=5, desc='x', delay=0.0, progress=False) as b:\n"
        "    b.update(1)\n"
        "print(b.shown, 'tqdm' in sys.modules)\n"
        "os.environ['TQDM_DISABLE'] = '1'\n"
        "with LazyBar(total=5, desc='x', delay=0.0, progress=True) as b:\n"
        "    b.update(1)\n"
        "print(b.shown, 'tqdm' in sys.modules)\n"
        "del os.environ['TQDM_DISABLE']\n"
        "with LazyBar(total=5, desc='x', delay=0.0, progress=True) as b:\n"
        "    b.update(3)\n"
        "    real = b._bar\n"
        "    b.update(1)\n"
        "    print(b.shown, real.n, real.total, 'tqdm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:4] == ["2 False False", "False False", "False False", "True 4 5 True"]


def test_lazy_bar_checks_its_arguments():
    from dpacct.accountant.numerics import LazyBar

    assert LazyBar(total=1, desc="x", delay=0.0, progress=None).hidden  # as tqdm's disable
    with pytest.raises(ValueError, match="delay"):
        LazyBar(total=1, desc="x", delay=-1.0, progress=True)


def test_lazy_module_imports_at_the_first_name_and_keeps_it():
    """``LazyModule`` imports its module at the first use of a name (not at creation,
    and not when a dunder is probed, as doctest and copy do), then serves the same
    objects as the module, kept on the stand-in."""
    import subprocess

    code = (
        "import sys\n"
        "from dpacct.accountant.numerics import LazyModule, scipy_special\n"
        "assert 'scipy.special' not in sys.modules\n"
        "assert not hasattr(scipy_special, '__wrapped__')\n"
        "assert 'scipy.special' not in sys.modules\n"
        "f = scipy_special.ndtr\n"
        "import scipy.special\n"
        "assert f is scipy.special.ndtr and 'ndtr' in vars(scipy_special)\n"
        "lazy = LazyModule('fractions')\n"
        "assert lazy.Fraction(1, 2) == 0.5 and repr(lazy) == \"<LazyModule 'fractions'>\"\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError):
        LazyModule("math").no_such_name  # noqa: B018
