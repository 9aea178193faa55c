"""The optimistic construction's faster paths (``accountant/pld/optimistic_bins.py``,
``pld_hull._repair_hull``, ``grid._row_sums``; issue 37, session 32) against
independent references.

* the local hull repair against an O(n^3) brute-force lower hull, on integer points
  (every cross product exact, so the hull with its collinear points is one exact
  set) drawn by Hypothesis as a convex chain with local dents and runs lifted above
  it (what the construction's lowered node values look like);
* the hull of the construction's own points, on Hypothesis-generated bins, against
  the brute-force hull in exact rational arithmetic (``fractions.Fraction`` of the
  floats);
* the top-bins rounding against the loop over all bins (the same arrays, bit for
  bit), on bins that round at the top, below it, and both;
* the row sums against ``numpy.sum`` on the installed numpy.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.pld import optimistic_bins, pld_hull
from dpacct.accountant.pld.grid import _Bins, _row_sums
from dpacct.accountant.pld.optimistic_bins import _lower_from_bins
from dpacct.accountant.pld.pld_hull import _lower_hull, _lower_hull_to_min, _repair_hull


def _brute_hull(x: list, y: list) -> list[int]:
    """Point i is on the lower hull (vertex or on an edge) iff no chord of a point on
    its left and one on its right passes strictly below it (exact for integers and
    Fractions)."""
    n = len(x)
    out = []
    for i in range(n):
        if any(
            (y[i] - y[a]) * (x[c] - x[a]) > (y[c] - y[a]) * (x[i] - x[a])
            for a in range(i)
            for c in range(i + 1, n)
        ):
            continue
        out.append(i)
    return out


def _bad_middles(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    lhs = (y[1:-1] - y[:-2]) * (x[2:] - x[:-2])
    return np.flatnonzero(lhs > (y[2:] - y[:-2]) * (x[1:-1] - x[:-2])) + 1


@st.composite
def _dented_chains(draw):
    """Integer points: a convex chain (increasing integer slopes) with a few points
    pushed down (dents: their neighbours become non-convex, a run may be cut off by
    the tangent) and a few lifted (bumps)."""
    n = draw(st.integers(3, 40))
    steps = draw(st.lists(st.integers(1, 5), min_size=n - 1, max_size=n - 1))
    x = np.concatenate([[0], np.cumsum(steps)]).astype(float)
    slopes = np.sort(draw(st.lists(st.integers(-60, 30), min_size=n - 1, max_size=n - 1)))
    y = np.concatenate([[0.0], np.cumsum(slopes * np.diff(x))]) + 10_000.0
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, n - 1))
        y[i] += draw(st.sampled_from([-1, 1])) * draw(st.integers(1, 400))
    return x, y


@settings(max_examples=300, deadline=None)
@given(_dented_chains())
def test_repair_hull_is_the_brute_force_hull(chain):
    x, y = chain
    bad = _bad_middles(x, y)
    want = _brute_hull(x.tolist(), y.tolist())
    if bad.size:
        got = _repair_hull(x, y, bad)
        assert got.tolist() == want
        # and the strided passes agree (an exact set: integer cross products)
        assert _lower_hull(x, y).tolist() == want
    k = int(np.argmin(y))
    assert _lower_hull_to_min(x, y).tolist() == [i for i in want if i <= k]


@pytest.mark.parametrize("cap", [3, 4096])
def test_repair_hull_long_windows_use_the_passes(monkeypatch, cap):
    # a dent deep enough to cut off a long run: the window widens past the chain
    # length cap and is handed to the vectorised passes; the same hull either way
    monkeypatch.setattr(pld_hull, "_CHAIN_MAX", cap)
    x = np.arange(200, dtype=float)
    y = (x - 150.0) ** 2
    y[120] -= 5000.0
    bad = _bad_middles(x, y)
    assert _repair_hull(x, y, bad).tolist() == _brute_hull(x.tolist(), y.tolist())


@st.composite
def _bins(draw):
    """Bins of a loss measure on a grid: P-masses, scaled Q-masses r <= m (an atom
    somewhere inside the bin: r = m e^{-u step}, u in [0, 1]), atoms on the right
    nodes, some empty runs, some mass at +inf."""
    n = draw(st.integers(2, 60))
    step = draw(st.sampled_from([1e-3, 0.05, 0.4]))
    first = draw(st.integers(-40, 10))
    m = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    holes = draw(st.lists(st.integers(0, n - 1), max_size=n // 2))
    m[holes] = 0.0
    m = m / max(m.sum(), 1e-300) * draw(st.floats(0.2, 1.0))
    u = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    r = m * np.exp(-u * step)
    with_atoms = draw(st.booleans())
    atoms = m * np.array(draw(st.lists(st.floats(0.0, 0.5), min_size=n, max_size=n)))
    inf_mass = draw(st.sampled_from([0.0, 1e-9, 1e-3]))
    return _Bins(
        step=step, first=first, m=m, r=np.minimum(r, m), bottom=(0.0, 0.0),
        top=(0.0, 0.0), inf_mass=inf_mass, atoms=atoms if with_atoms else None,
    )


@settings(max_examples=60, deadline=None)
@given(_bins())
def test_construction_hull_is_the_exact_hull_of_its_points(b):
    seen = []
    orig = optimistic_bins._lower_hull_to_min

    def spy(x, y):
        h = orig(x, y)
        seen.append((x.copy(), y.copy(), h))
        return h

    optimistic_bins._lower_hull_to_min = spy
    try:
        _lower_from_bins(b)
    finally:
        optimistic_bins._lower_hull_to_min = orig
    for x, y, h in seen:
        k = int(np.argmin(y))
        if not np.all(np.diff(x[: k + 1]) > 0):
            continue
        xf = [Fraction(v) for v in x[: k + 1]]
        yf = [Fraction(v) for v in y[: k + 1]]
        exact = _brute_hull(xf, yf)
        # Floating-point predicates of nearly collinear points decide within round-off,
        # in both directions: a kept point off the exact set lies on the exact hull
        # within round-off, and an exact vertex the float hull drops lies on the float
        # hull's chord within round-off (session 34: Hypothesis found a vertex below its
        # kept neighbours' chord by less than one ulp in rationals, 0.0 in floats).
        kept = sorted(set(h.tolist()))
        tol = 1e-12 * max(1.0, abs(y[0]))

        def _above_chord(i, chain, x=x, y=y):
            j = int(np.searchsorted(chain, i))
            a, c = chain[j - 1], chain[j]
            return y[i] - (y[a] + (y[c] - y[a]) * (x[i] - x[a]) / (x[c] - x[a]))

        assert kept[0] == exact[0] and kept[-1] == exact[-1]
        for i in set(kept) - set(exact):
            assert _above_chord(i, np.array(exact)) <= tol
        for i in set(exact) - set(kept):
            assert abs(_above_chord(i, np.array(kept))) <= tol


def _both_paths(b: _Bins, monkeypatch) -> tuple:
    top = _lower_from_bins(b)
    with monkeypatch.context() as mp:
        mp.setattr(optimistic_bins, "_TOP_BINS", 10**9)  # the loop over all bins
        full = _lower_from_bins(b)
    return top, full


def _ladder_bins(n: int, occupied: int, step: float = 0.05) -> _Bins:
    # a smooth bump of mass on the first `occupied` bins, empty bins above: the last
    # occupied bins have almost no room above their next node and round down -- at
    # the top of the grid, or far below it (then the top search must hand over to
    # the loop over all bins)
    j = np.arange(n)
    m = np.where(j < occupied, np.exp(-0.5 * ((j - 0.5 * occupied) / (0.2 * occupied)) ** 2), 0.0)
    m /= m.sum()
    r = m * np.exp(-0.5 * step)
    return _Bins(step=step, first=-n // 2, m=m, r=np.minimum(r, m), bottom=(0.0, 0.0),
                 top=(0.0, 0.0), inf_mass=0.0, atoms=None)


@pytest.mark.parametrize("occupied", [300, 280, 150, 40])
def test_top_rounding_is_the_loop_over_all_bins(monkeypatch, occupied):
    b = _ladder_bins(300, occupied)
    (f1, p1, i1), (f2, p2, i2) = _both_paths(b, monkeypatch)
    assert f1 == f2 and i1 == i2
    assert np.array_equal(p1, p2)


@settings(max_examples=60, deadline=None)
@given(_bins(), st.integers(150, 400))
def test_top_rounding_is_the_loop_over_all_bins_on_random_bins(b, n):
    # the generated bins repeated along a longer grid (past 2 * _TOP_BINS bins)
    reps = -(-n // b.m.size)
    atoms = None if b.atoms is None else np.tile(b.atoms, reps) / reps
    big = _Bins(step=b.step, first=b.first, m=np.tile(b.m, reps) / reps,
                r=np.tile(b.r, reps) / reps, bottom=(0.0, 0.0), top=(0.0, 0.0),
                inf_mass=b.inf_mass, atoms=atoms)
    with pytest.MonkeyPatch.context() as mp:
        (f1, p1, i1), (f2, p2, i2) = _both_paths(big, mp)
    assert f1 == f2 and i1 == i2
    assert np.array_equal(p1, p2)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_row_sums_are_numpys(f, rows, seed):
    rng = np.random.default_rng(seed)
    a = rng.random((rows, f)) * np.exp(rng.normal(0.0, 30.0, (rows, f)))
    assert np.array_equal(_row_sums(a), a.sum(axis=1))


# ---- session 33: a few rounded bins' gaps on Python floats
_FRACS = st.one_of(st.sampled_from([0.0, 1.0, 1.0 - 2.0**-52, 0.5]),
                   st.floats(0.0, 1.0, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.floats(0.0, 1.0, allow_nan=False), _FRACS, _FRACS),
                  min_size=1, max_size=8),
    step=st.sampled_from([2.0**-20, 2.0**-14, 1e-3, 0.5, 3.0, 40.0]),
    with_atoms=st.booleans(),
)
def test_gaps_of_a_few_bins_on_python_floats_are_the_array_gaps(rows, step, with_atoms):
    """``_gaps_few`` (the rounded bins' gaps, Python floats) is ``_gaps`` (numpy) bit for
    bit, with and without atoms, including ``r = m`` and an atom as large as its bin; and
    both are the formula written out (:func:`_gap_formula`)."""
    m = np.array([row[0] for row in rows])
    r = m * np.array([row[1] for row in rows])
    atoms = m * np.array([row[2] for row in rows]) if with_atoms else None
    want = optimistic_bins._gaps(m, r, atoms, step)
    got = optimistic_bins._gaps_few(m.tolist(), r.tolist(),
                                    None if atoms is None else atoms.tolist(), step)
    assert np.array_equal(np.array(got), want)
    assert np.array_equal(want, _gap_formula(m, r, atoms, step))


def _gap_formula(m, r, atoms, step):
    """``_gaps``' formula written out: ``rho = clip(m' / r', 1, e^step)``, set to
    ``e^step`` within ``1e-12`` of it, gap ``(m' - r') (e^step - rho) / (e^step - 1)``
    (session 34 folded the clip's upper end into the threshold)."""
    e = math.exp(step)  # (the library's scalars are libm's)
    mc = m if atoms is None else np.maximum(m - atoms, 0.0)
    rc = r if atoms is None else np.minimum(np.maximum(r - atoms * math.exp(-step), 0.0), mc)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(rc > 0, mc / rc, e)
    rho = np.clip(rho, 1.0, e)
    rho[rho > e * (1.0 - 1e-12)] = e
    return (mc - rc) * (e - rho) / math.expm1(step)


# ---- session 34: the hull abscissae from a table per power-of-two step
@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(-30, 2),
    shapes=st.lists(st.tuples(st.integers(-10**6, 10**6), st.integers(0, 5000)),
                    min_size=1, max_size=6),
)
def test_abscissae_from_the_table_are_the_fresh_exps(k, shapes):
    """``_abscissae`` (a table of ``e^{(k + p / 2) step}`` grown as longer constructions
    come) gives, bit for bit, the exps ``_lower_from_bins`` took of the differences
    ``(first + j) step - a_ref``, whatever the order of the lengths and parities."""
    step = 2.0**k
    for first, n in shapes:
        if n * step > 1200.0:  # (the construction rounds down before reading them)
            continue
        a_ref = (first + 0.5 * n) * step
        want = np.exp((first + np.arange(n + 1)) * step - a_ref)
        got = optimistic_bins._abscissae(step, first, n)
        assert got is not None and np.array_equal(got, want)
        assert not got.flags.writeable
    assert len(optimistic_bins._ABSCISSAE) <= optimistic_bins._ABSCISSA_TABLES


def test_abscissae_only_on_power_of_two_steps():
    """A step that is not a power of two (a lattice or anchored grid) is left to the
    exps (its differences are rounded); so is a construction longer than the cap."""
    assert optimistic_bins._abscissae(1e-3, 5, 100) is None
    assert optimistic_bins._abscissae(3 * 2.0**-12, 5, 100) is None
    assert optimistic_bins._abscissae(2.0**-12, 5, optimistic_bins._ABSCISSA_MAX_N + 1) is None
    assert optimistic_bins._abscissae(2.0**-12, 5, 100) is not None


@settings(max_examples=60, deadline=None)
@given(_bins(), st.sampled_from([2.0**-10, 2.0**-4, 0.5]), st.integers(1, 30))
def test_construction_with_the_table_is_the_construction_with_exps(b, step, reps):
    """The whole construction on a power-of-two step (Hypothesis bins, with empty runs:
    the abscissae of the points the hull sees, a gather from the table) is, bit for
    bit, the one that takes the exps itself."""
    big = _Bins(step=step, first=b.first, m=np.tile(b.m, reps) / reps,
                r=np.tile(b.r, reps) / reps, bottom=(0.0, 0.0), top=(0.0, 0.0),
                inf_mass=b.inf_mass,
                atoms=None if b.atoms is None else np.tile(b.atoms, reps) / reps)
    got = _lower_from_bins(big)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(optimistic_bins, "_abscissae", lambda step, first, n: None)
        want = _lower_from_bins(big)
    assert got[0] == want[0] and got[2] == want[2]
    assert np.array_equal(got[1], want[1])


@pytest.mark.parametrize("step", [2.0**-14, 1e-3, 0.5, 3.0])
def test_gaps_of_bins_within_the_threshold_of_the_upper_node_are_zero(step):
    """A bin whose merged atom sits within ``1e-12`` (relative) of its upper node has no
    gap; just beyond the threshold it has one (the boundary the clip was folded into)."""
    e = math.exp(step)
    ratios = e * (1.0 - np.array([1e-14, 1e-13, 5e-13, 2e-12, 1e-9]))  # m / r
    m = np.ones(ratios.size)
    r = m / ratios
    g = optimistic_bins._gaps(m, r, None, step)
    rho = m / r
    assert np.all(g[rho > e * (1.0 - 1e-12)] == 0.0)
    assert np.all(g[rho <= e * (1.0 - 1e-12)] > 0.0)
