"""Tests for ``dpacct.mechanisms.algorithms.theil_sen``: DP Theil-Sen (Alabi et al. 2020).

References: explicit compositions of exponential mechanisms built by hand; brute-force
pair predictions (double loop over all pairs); ``scipy.stats.theilslopes`` and ordinary
least squares as non-private baselines; the zero line as the trivial baseline.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import theilslopes

from dpacct.accountant import compose
from dpacct.mechanisms.algorithms.theil_sen import (
    DPTheilSen,
    TheilSenFit,
    matching_transformation,
    pair_predictions,
    pairing_stability,
)
from dpacct.mechanisms.primitives.exponential import ExponentialMechanism


def make(eps=1.0, **kw):
    args = dict(epsilon=eps, x_lower=0.0, x_upper=1.0, pred_lower=-10.0, pred_upper=10.0)
    args.update(kw)
    return DPTheilSen(**args)


def line_data(seed, n=1000, slope=2.0, intercept=1.0, noise=0.2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    return x, slope * x + intercept + rng.normal(0.0, noise, n), rng


# ----------------------------------------------------------------------------------
# privacy = explicit composition
# ----------------------------------------------------------------------------------
def test_privacy_is_two_exponential_mechanisms():
    alg = make(eps=1.0, k=7)
    ref = compose([ExponentialMechanism(epsilon=0.5), ExponentialMechanism(epsilon=0.5)])
    for d in (1e-3, 1e-6, 1e-10):
        assert alg.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-12)
    np.testing.assert_allclose(alg.rdp([1.5, 2.0, 16.0]), ref.rdp([1.5, 2.0, 16.0]),
                               rtol=1e-12)
    # k does not change the accounting (the utility sensitivity k is in the exponent)
    assert make(eps=1.0, k=1).epsilon(1e-6) == pytest.approx(alg.epsilon(1e-6), rel=1e-12)


def test_privacy_with_uneven_split():
    alg = make(eps=2.0, split=0.3)
    assert alg.budgets == pytest.approx((0.6, 1.4))
    ref = compose([ExponentialMechanism(epsilon=0.6), ExponentialMechanism(epsilon=1.4)])
    for d in (1e-5, 1e-9):
        assert alg.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-12)
    # total never exceeds the pure-DP budget epsilon
    assert alg.epsilon(1e-9) <= 2.0 + 1e-12


# ----------------------------------------------------------------------------------
# pair predictions
# ----------------------------------------------------------------------------------
def test_pair_predictions_against_brute_force():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, 9)
    y = rng.normal(size=9)
    k = 4
    p1, p2 = pair_predictions(x, y, k, (0.25, 0.75), np.random.default_rng(1))
    assert p1.shape == p2.shape == (k * 4,)   # 4 pairs per matching, one record left out
    # every (p1, p2) is the prediction of the line through some pair of distinct points
    allowed = set()
    for i in range(9):
        for j in range(9):
            if i != j:
                s = (y[j] - y[i]) / (x[j] - x[i])
                allowed.add((round(y[i] + s * (0.25 - x[i]), 9),
                             round(y[i] + s * (0.75 - x[i]), 9)))
    got = {(round(a, 9), round(b, 9)) for a, b in zip(p1, p2, strict=True)}
    assert got <= allowed


def test_pair_predictions_drop_vertical_pairs():
    x = np.array([0.5, 0.5, 0.5, 0.5])
    p1, p2 = pair_predictions(x, np.arange(4.0), 3, (0.25, 0.75), np.random.default_rng(0))
    assert p1.size == 0 and p2.size == 0


# ----------------------------------------------------------------------------------
# utility
# ----------------------------------------------------------------------------------
def test_recovers_line_at_moderate_epsilon():
    slopes, intercepts, ts_slopes = [], [], []
    for s in range(20):
        x, y, rng = line_data(s)
        fit = make(eps=1.0, k=10).fit(x, y, rng=rng)
        assert isinstance(fit, TheilSenFit)
        slopes.append(fit.slope)
        intercepts.append(fit.intercept)
        ts_slopes.append(theilslopes(y, x)[0])
    slopes, intercepts = np.array(slopes), np.array(intercepts)
    assert np.abs(slopes - 2.0).max() < 0.12
    assert np.abs(intercepts - 1.0).max() < 0.07
    # within a small factor of the non-private Theil-Sen error; far from trivial (0, 0)
    ts_err = np.abs(np.array(ts_slopes) - 2.0).mean()
    assert np.abs(slopes - 2.0).mean() < 3 * ts_err + 0.02
    assert np.abs(slopes - 2.0).mean() < 0.05 * 2.0


def test_fit_predicts_cut_points():
    x, y, rng = line_data(3, n=3000)
    fit = make(eps=2.0, cut_points=(0.1, 0.9)).fit(x, y, rng=rng)
    np.testing.assert_allclose(fit.predict([0.1, 0.9]), fit.medians, rtol=1e-12)
    # the medians are private versions of 1.2 and 2.8 on the true line
    np.testing.assert_allclose(fit.medians, [1.2, 2.8], atol=0.05)


def test_error_shrinks_with_epsilon():
    def mean_errors(eps):
        es, ei = [], []
        for s in range(20):
            x, y, rng = line_data(100 + s)
            fit = make(eps=eps).fit(x, y, rng=rng)
            es.append(abs(fit.slope - 2.0))
            ei.append(abs(fit.intercept - 1.0))
        return np.mean(es), np.mean(ei)

    low, mid, high = mean_errors(0.05), mean_errors(0.2), mean_errors(2.0)
    assert low[0] > 3 * mid[0] and mid[0] > 1.5 * high[0]
    assert low[1] > 3 * mid[1] and mid[1] > 1.5 * high[1]


def test_more_matchings_do_not_hurt():
    # k matchings: more pairs, sensitivity k; the relative rank noise is unchanged
    errs = {}
    for k in (1, 20):
        e = []
        for s in range(20):
            x, y, rng = line_data(200 + s, n=400, noise=0.5)
            e.append(abs(make(eps=1.0, k=k).fit(x, y, rng=rng).slope - 2.0))
        errs[k] = np.mean(e)
    assert errs[20] < errs[1]


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
GEN = np.random.default_rng(0)


def test_bad_data():
    alg = make()
    with pytest.raises(ValueError, match="x and y must have the same shape"):
        alg.fit([0.1, 0.2, 0.3], [1.0, 2.0], rng=GEN)
    with pytest.raises(ValueError, match="x must contain at least 2"):
        alg.fit([0.1], [1.0], rng=GEN)
    with pytest.raises(ValueError, match="x must contain at least 2"):
        alg.fit([], [], rng=GEN)
    with pytest.raises(ValueError, match="y must not contain NaN"):
        alg.fit([0.1, 0.2], [1.0, np.nan], rng=GEN)
    with pytest.raises(ValueError, match="y must be finite"):
        alg.fit([0.1, 0.2], [1.0, np.inf], rng=GEN)
    with pytest.raises(ValueError, match=r"x must lie in the declared range \[0.0, 1.0\]"):
        alg.fit([0.1, 1.2], [1.0, 2.0], rng=GEN)
    with pytest.raises(TypeError, match="rng"):
        alg.fit([0.1, 0.2], [1.0, 2.0], rng=42)


def test_bad_parameters():
    with pytest.raises(ValueError, match="pred_lower must be < pred_upper"):
        make(pred_lower=5.0, pred_upper=5.0)
    with pytest.raises(ValueError, match="pred_upper must be a finite"):
        make(pred_upper=np.inf)
    with pytest.raises(ValueError, match="x_lower must be < x_upper"):
        make(x_lower=2.0)
    with pytest.raises(ValueError, match=r"epsilon must lie in \(0, inf\)"):
        make(eps=-1.0)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        make(k=0)
    with pytest.raises(ValueError, match=r"split must lie in \(0, 1\)"):
        make(split=1.0)
    with pytest.raises(ValueError, match="cut_points must satisfy"):
        make(cut_points=(0.5, 1.5))
    with pytest.raises(ValueError, match="cut_points must satisfy"):
        make(cut_points=(0.7, 0.3))
    with pytest.raises(ValueError, match="cut_points must be a pair"):
        make(cut_points=(0.5,))
    assert make().cut_points == (0.25, 0.75)


def test_exponent_carries_sensitivity_k(monkeypatch):
    # white box: each median is Smith's mechanism with coefficient epsilon_j / (2 k),
    # drawn through ExponentialMechanism.release with sensitivity k ...
    from dpacct.mechanisms.primitives.exponential import ExponentialMechanism

    seen = []
    real = ExponentialMechanism.release

    def spy(self, scores, *, sensitivity, rng, edges=None):
        seen.append((self.epsilon0 / (2.0 * sensitivity), edges[0], edges[-1], len(scores)))
        return real(self, scores, sensitivity=sensitivity, rng=rng, edges=edges)

    monkeypatch.setattr(ExponentialMechanism, "release", spy)
    x, y, rng = line_data(0, n=101)
    make(eps=2.0, k=4, split=0.25, pairing="maximal").fit(x, y, rng=rng)
    # 4 matchings of 101 points: 200 predictions, hence 201 pieces
    assert seen == [(0.5 / 8, -10.0, 10.0, 201), (1.5 / 8, -10.0, 10.0, 201)]


def test_more_matchings_do_not_concentrate_the_median():
    # ... black box: at fixed epsilon the relative rank noise does not depend on k, so
    # the spread of the private median must not shrink by anything like a factor k
    def spread(k):
        x, y, rng = line_data(5, n=200)
        alg = make(eps=0.3, k=k)
        return np.std([alg.fit(x, y, rng=rng).medians[0] for _ in range(200)])

    assert spread(20) > 0.5 * spread(1)


def test_out_of_range_clip():
    # x ~ N(0, 1) declared on [-3, 3]: at n = 100 about a quarter of the data sets have a
    # point outside.  The default raises; out_of_range="clip" equals clipping first and
    # recovers the line (slope against numpy's least squares on the same data)
    rng = np.random.default_rng(7)
    x = rng.normal(size=2000)
    x[0] = 4.5
    y = 2.0 * x + 1.0 + rng.normal(0, 0.3, size=2000)
    strict = DPTheilSen(epsilon=2.0, x_lower=-3, x_upper=3, pred_lower=-20, pred_upper=20)
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        strict.fit(x, y, rng=np.random.default_rng(1))
    clip = DPTheilSen(epsilon=2.0, x_lower=-3, x_upper=3, pred_lower=-20, pred_upper=20,
                      out_of_range="clip")
    assert clip.epsilon(1e-6) == strict.epsilon(1e-6)
    got = clip.fit(x, y, rng=np.random.default_rng(1))
    want = strict.fit(np.clip(x, -3, 3), y, rng=np.random.default_rng(1))
    assert (got.slope, got.intercept) == (want.slope, want.intercept)
    ols = np.linalg.lstsq(np.column_stack([x, np.ones_like(x)]), y, rcond=None)[0]
    assert got.slope == pytest.approx(ols[0], abs=0.1)
    assert got.intercept == pytest.approx(ols[1], abs=0.1)
    with pytest.raises(ValueError, match="out_of_range must be 'raise' or 'clip'"):
        DPTheilSen(epsilon=1.0, x_lower=0, x_upper=1, pred_lower=0, pred_upper=1,
                   out_of_range="ignore")


# ----------------------------------------------------------------------------------
# the budget parameter is named epsilon (issue 21); epsilon0= still works, deprecated
# ----------------------------------------------------------------------------------
def test_epsilon0_is_a_deprecated_alias_of_epsilon():
    x, y, _ = line_data(3, n=300)
    new = make(eps=1.5, k=3)
    with pytest.warns(DeprecationWarning, match=r"epsilon0=.*deprecated.*epsilon="):
        old = DPTheilSen(epsilon0=1.5, x_lower=0.0, x_upper=1.0, pred_lower=-10.0,
                         pred_upper=10.0, k=3)
    assert old == new and repr(old) == repr(new)
    assert old.epsilon0 == new.epsilon0 == 1.5  # the stored budget keeps its name
    assert old.budgets == new.budgets == (0.75, 0.75)
    assert old.epsilon(1e-6) == new.epsilon(1e-6)
    f_old = old.fit(x, y, rng=np.random.default_rng(9))
    f_new = new.fit(x, y, rng=np.random.default_rng(9))
    assert (f_old.slope, f_old.intercept) == (f_new.slope, f_new.intercept)
    assert f_old.medians == f_new.medians
    with pytest.raises(TypeError, match="both epsilon and its deprecated name epsilon0"):
        DPTheilSen(epsilon=1.0, epsilon0=1.0, x_lower=0.0, x_upper=1.0, pred_lower=-1.0,
                   pred_upper=1.0)
    bad = pytest.raises(ValueError, match=r"epsilon must lie in \(0, inf\)")
    with bad, pytest.warns(DeprecationWarning):
        DPTheilSen(epsilon0=-1.0, x_lower=0.0, x_upper=1.0, pred_lower=-1.0, pred_upper=1.0)


def test_epsilon_is_positional_and_required():
    assert DPTheilSen(2.0, 0.0, 1.0, -10.0, 10.0) == make(eps=2.0)
    with pytest.raises(TypeError, match=r"missing required argument.*epsilon"):
        DPTheilSen(x_lower=0.0, x_upper=1.0, pred_lower=-1.0, pred_upper=1.0)
    with pytest.raises(TypeError, match=r"missing required argument.*pred_upper"):
        DPTheilSen(1.0, 0.0, 1.0, -1.0)


def test_repr_and_json_use_the_new_name():
    import warnings

    from dpacct.accountant.serialization import from_dict, to_dict

    alg = make(eps=0.7, k=4, split=0.4)
    assert repr(alg).startswith("DPTheilSen(epsilon=0.7, x_lower=0.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither round trip may warn
        assert eval(repr(alg), {"DPTheilSen": DPTheilSen}) == alg
        d = to_dict(alg)
        assert d["params"]["epsilon"] == 0.7 and "epsilon0" not in d["params"]
        assert from_dict(d) == alg
        # a file written before the rename still loads, to the same estimator
        d["params"]["epsilon0"] = d["params"].pop("epsilon")
        assert from_dict(d) == alg


# ----------------------------------------------------------------------------------
# the candidate-grid median
# ----------------------------------------------------------------------------------
def test_grid_median_is_two_permute_and_flips():
    from dpacct.mechanisms.primitives.permute_and_flip import PermuteAndFlip

    a, b = make(eps=1.0, k=3), make(eps=1.0, k=3, median="grid", grid_size=100)
    assert a.pure_epsilon == b.pure_epsilon == pytest.approx(1.0)
    ref = compose([PermuteAndFlip(epsilon=0.5), PermuteAndFlip(epsilon=0.5)])
    for d in (1e-3, 1e-8):
        assert b.epsilon(d) == pytest.approx(ref.epsilon(d), rel=1e-12)
        # the generic pure-DP curves are never below the bounded-range ones
        assert b.epsilon(d) >= a.epsilon(d)


def test_grid_median_outputs_grid_points_and_recovers_the_line():
    x, y, _ = line_data(4, n=2000)
    alg = make(eps=4.0, median="grid", grid_size=201, pred_lower=-10.0, pred_upper=10.0)
    fit = alg.fit(x, y, rng=np.random.default_rng(5))
    grid = np.linspace(-10.0, 10.0, 201)
    assert np.isclose(grid, fit.medians[0]).any() and np.isclose(grid, fit.medians[1]).any()
    assert abs(fit.slope - 2.0) < 0.3 and abs(fit.intercept - 1.0) < 0.2


def test_grid_median_exponent_carries_sensitivity_k(monkeypatch):
    # the grid release sees the utility -|rank - m/2| with the planned sensitivity k
    seen = []
    from dpacct.mechanisms.primitives.permute_and_flip import PermuteAndFlip

    orig = PermuteAndFlip.release

    def spy(self, scores, *, sensitivity, rng):
        seen.append((np.asarray(scores).copy(), sensitivity, None))
        return orig(self, scores, sensitivity=sensitivity, rng=rng)

    monkeypatch.setattr(PermuteAndFlip, "release", spy)
    x = np.array([0.1, 0.2, 0.6, 0.9])
    y = np.array([0.0, 1.0, 2.0, 3.0])
    alg = make(k=2, median="grid", grid_size=5, pred_lower=-2.0, pred_upper=2.0,
               pairing="maximal")
    alg.fit(x, y, rng=np.random.default_rng(0))
    assert len(seen) == 2 and all(s == 2 and e is None for _, s, e in seen)
    p1, _ = pair_predictions(x, y, 2, alg.cut_points, np.random.default_rng(0))
    ranks = np.searchsorted(np.sort(p1), np.linspace(-2, 2, 5), side="left")
    np.testing.assert_array_equal(seen[0][0], -np.abs(ranks - p1.size / 2))


def test_grid_median_bad_parameters():
    with pytest.raises(ValueError, match="median"):
        make(median="histogram")
    with pytest.raises(ValueError, match="grid_size"):
        make(median="grid", grid_size=1)


def test_grid_median_round_trips_through_json():
    from dpacct.accountant.serialization import from_dict, to_dict

    alg = make(eps=2.0, median="grid", grid_size=50)
    back = from_dict(to_dict(alg))
    assert back.median == "grid" and back.grid_size == 50


# ----------------------------------------------------------------------------------
# a declared max_records: slot matchings, half the sensitivity
# ----------------------------------------------------------------------------------
def test_max_records_halves_the_sensitivity(monkeypatch):
    seen = []
    orig = ExponentialMechanism.release

    def spy(self, scores, *, sensitivity, rng, edges=None):
        seen.append(sensitivity)
        return orig(self, scores, sensitivity=sensitivity, rng=rng, edges=edges)

    monkeypatch.setattr(ExponentialMechanism, "release", spy)
    x, y, _ = line_data(1, n=50)
    make(k=4, max_records=60).fit(x, y, rng=np.random.default_rng(0))
    make(k=4, pairing="maximal").fit(x, y, rng=np.random.default_rng(0))
    make(k=4).fit(x, y, rng=np.random.default_rng(0))          # balanced: 4 + 2
    assert seen == [2.0, 2.0, 4.0, 4.0, 3.0, 3.0]
    # the privacy claim is unchanged: the same two exponential mechanisms
    assert make(max_records=60).epsilon(1e-6) == make().epsilon(1e-6)


def test_max_records_refuses_larger_data_and_bad_values():
    x, y, _ = line_data(2, n=51)
    with pytest.raises(ValueError, match="max_records"):
        make(max_records=50).fit(x, y, rng=np.random.default_rng(0))
    make(max_records=51).fit(x, y, rng=np.random.default_rng(0))   # 51 <= 52 slots
    for bad in (1, 0, -3, 2.5):
        with pytest.raises((ValueError, TypeError), match="max_records"):
            make(max_records=bad)


def test_slot_matching_pairs_about_n_squared_over_n_slots():
    x = np.arange(100.0)
    y = x.copy()
    full, _ = pair_predictions(x, y, 200, (0.25, 0.75), np.random.default_rng(0), slots=100)
    assert full.size == 200 * 50                        # N = n: a perfect matching
    loose, _ = pair_predictions(x, y, 200, (0.25, 0.75), np.random.default_rng(0), slots=200)
    expected = 200 * 100 * 99 / (2 * 199)                # n (n - 1) / (2 (N - 1)) pairs
    assert abs(loose.size - expected) < 0.02 * expected


def test_a_table_is_refused_not_read_by_position():
    """DP Theil-Sen regresses on one column: a table (even of one column) raises at fit
    and at predict instead of being read by position (the estimators that take a table
    read it by name: tests/test_regression_data.py::check_reads_table_by_name)."""
    pd = pytest.importorskip("pandas")
    alg = DPTheilSen(epsilon=2.0, x_lower=0, x_upper=1, pred_lower=-5, pred_upper=5)
    table = pd.DataFrame({"x": np.linspace(0, 1, 20), "w": np.zeros(20)})
    with pytest.raises(ValueError, match="x must be a 1-D array"):
        alg.fit(table, np.zeros(20), rng=np.random.default_rng(0))
    fit = alg.fit(table["x"], np.zeros(20), rng=np.random.default_rng(0))  # a Series
    with pytest.raises(ValueError, match="x must be a 1-D array"):
        fit.predict(table[["x"]])


# ----------------------------------------------------------------------------------
# the pairings' stability, by brute force over the implementation's own randomness
# ----------------------------------------------------------------------------------
class _FixedPermutation:
    """Stands in for the generator: ``permuted`` applies one given permutation to every
    row, so enumerating the permutations enumerates the pairing's whole law."""

    def __init__(self, perm):
        self.perm = np.asarray(perm, dtype=int)

    def permuted(self, arr, axis):
        assert axis == 1
        return np.asarray(arr)[:, self.perm]


def _row_laws(n, k, *, slots=None, balanced=False):
    """The law of each matching's pair set, read off ``pair_predictions`` itself.

    Record ``i`` is the point ``(i, i^2)`` (no three on a line); with cut points 0 and 1
    a pair ``{a, b}`` predicts ``-a b`` and ``a + b - a b``, from which it is recovered.
    The rows come out in order, row ``j`` with ``n // 2`` pairs (one fewer for a one-short
    row), so every row's pairs are read separately."""
    from collections import Counter
    from itertools import permutations

    x = np.arange(float(n))
    size = n if slots is None else slots + slots % 2
    laws = [Counter() for _ in range(k)]
    perms = list(permutations(range(size)))
    for perm in perms:
        p1, p2 = pair_predictions(x, x ** 2, k, (0.0, 1.0), _FixedPermutation(perm),
                                  slots=slots, balanced=balanced)
        total, prod = np.rint(p2 - p1).astype(int), np.rint(-p1).astype(int)
        disc = np.sqrt(np.maximum(total ** 2 - 4 * prod, 0))
        a, b = np.rint((total - disc) / 2).astype(int), np.rint((total + disc) / 2).astype(int)
        np.testing.assert_allclose(a * b, prod)
        pairs = [frozenset((int(u), int(v))) for u, v in zip(a, b, strict=True)]
        if slots is not None:                  # one row: every recovered pair is row 0's
            rows = [pairs]
        else:
            sizes = [n // 2 - (balanced and j % 2 == 1 and n % 2 == 0 and n >= 2)
                     for j in range(k)]
            cuts = np.cumsum([0, *sizes])
            rows = [pairs[cuts[j]:cuts[j + 1]] for j in range(k)]
            assert cuts[-1] == len(pairs)
        for j, row in enumerate(rows):
            laws[j][frozenset(row)] += 1
    return [{key: v / len(perms) for key, v in law.items()} for law in laws]


def _coupling_reaches(law_a, law_b, d):
    """Whether some coupling of two laws of pair sets keeps them within symmetric
    distance ``d`` with probability one (a transport LP: the largest mass on the pairs
    of outcomes within distance ``d``)."""
    from scipy.optimize import linprog

    a, b = list(law_a), list(law_b)
    edges = [(i, j) for i, sa in enumerate(a) for j, sb in enumerate(b)
             if len(sa ^ sb) <= d]
    if not edges:
        return False
    rows = np.zeros((len(a) + len(b), len(edges)))
    for e, (i, j) in enumerate(edges):
        rows[i, e] = rows[len(a) + j, e] = 1.0
    caps = np.array([law_a[s] for s in a] + [law_b[s] for s in b])
    res = linprog(-np.ones(len(edges)), A_ub=rows, b_ub=caps, bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return -res.fun > 1.0 - 1e-9


def _best_distance(law_a, law_b):
    """The smallest worst-case symmetric distance over all couplings of the two laws."""
    return next(d for d in range(8) if _coupling_reaches(law_a, law_b, d))


def _product(laws):
    """The joint law of independent matchings (pair sets tagged by their row)."""
    joint = {frozenset(): 1.0}
    for j, law in enumerate(laws):
        joint = {key | frozenset((j, pair) for pair in s): p * q
                 for key, p in joint.items() for s, q in law.items()}
    return joint


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_row_laws_are_the_uniform_matchings(n):
    """The enumeration reads the implementation right: the maximal row is uniform over
    the maximal matchings (n! / (2^m m! (n - 2m)!) of them)."""
    from math import factorial

    law = _row_laws(n, 1)[0]
    m = n // 2
    count = factorial(n) // (2 ** m * factorial(m) * factorial(n - 2 * m))
    assert len(law) == count and all(abs(p - 1 / count) < 1e-12 for p in law.values())


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_balanced_rows_replace_pairs_on_opposite_parities(n):
    """The lemma of the balanced pairing: adding a record costs a maximal matching a
    replaced pair (distance 2) exactly when n is even (n >= 2), and a one-short matching
    exactly when n is odd (n >= 3); otherwise distance 1 (0 from the empty set)."""
    before = _row_laws(n, 2, balanced=True)
    after = _row_laws(n + 1, 2, balanced=True)
    found = [_best_distance(before[j], after[j]) for j in range(2)]
    expect_maximal = 0 if n == 0 else 2 if n % 2 == 0 else 1
    expect_short = 0 if n <= 1 else 1 if n % 2 == 0 else 2
    assert found == [expect_maximal, expect_short]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_balanced_pairing_stability_is_exact_and_a_smaller_claim_is_caught(n):
    """Two balanced matchings (one maximal, one one-short): every coupling of the joint
    laws, not only the product of the rows' couplings, needs distance 3 =
    pairing_stability(2, 'balanced'); a claim of 2 (what 'slots' would give, or 'k' for
    the maximal pairing of OpenDP's tutorial) is refused by the LP, and 3 is reached."""
    claim = pairing_stability(2, "balanced")
    joint_d = _product(_row_laws(n, 2, balanced=True))
    joint_d2 = _product(_row_laws(n + 1, 2, balanced=True))
    assert claim == 3
    assert _coupling_reaches(joint_d, joint_d2, claim)
    assert not _coupling_reaches(joint_d, joint_d2, claim - 1)
    # the unbalanced pairing needs 4 at even n: the balance is what saves one
    if n % 2 == 0:
        maximal = _product(_row_laws(n, 2)), _product(_row_laws(n + 1, 2))
        assert not _coupling_reaches(*maximal, 3)
        assert _coupling_reaches(*maximal, pairing_stability(2, "maximal"))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 10, 11])
def test_balanced_claim_is_the_worst_parity_of_the_row_bounds(k):
    """pairing_stability(k, 'balanced') against the rows' exact distances (from the LP
    above, n = 4 and 5): the maximal rows (even index) and the one-short rows (odd
    index) summed at each parity of n, the worse parity taken."""
    per_row = {}
    for n in (4, 5):
        before = _row_laws(n, 2, balanced=True)
        after = _row_laws(n + 1, 2, balanced=True)
        per_row[n] = [_best_distance(before[j], after[j]) for j in range(2)]
    worst = max(sum(per_row[n][j % 2] for j in range(k)) for n in (4, 5))
    assert pairing_stability(k, "balanced") == worst
    assert pairing_stability(k, "maximal") == 2 * k


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_slot_rows_are_one_stable_up_to_the_bound(n):
    """Slot matchings over N = 6 slots: distance at most 1 for every n + 1 <= N (the
    claim 'slots' = k), read off the implementation's placements."""
    before = _row_laws(n, 1, slots=6)[0]
    after = _row_laws(n + 1, 1, slots=6)[0]
    assert _best_distance(before, after) == (0 if n == 0 else 1)
    assert pairing_stability(1, "slots") == 1


def test_balanced_sensitivity_reaches_the_exponent(monkeypatch):
    seen = []
    orig = ExponentialMechanism.release

    def spy(self, scores, *, sensitivity, rng, edges=None):
        seen.append(sensitivity)
        return orig(self, scores, sensitivity=sensitivity, rng=rng, edges=edges)

    monkeypatch.setattr(ExponentialMechanism, "release", spy)
    x, y, _ = line_data(3, n=50)
    make(k=4, pairing="balanced").fit(x, y, rng=np.random.default_rng(0))
    make(k=5, pairing="balanced").fit(x, y, rng=np.random.default_rng(0))
    make(k=4, pairing="balanced", max_records=60).fit(x, y, rng=np.random.default_rng(0))
    assert seen == [3.0, 3.0, 4.0, 4.0, 3.0, 3.0]
    assert make(pairing="balanced").epsilon(1e-6) == make().epsilon(1e-6)


def test_balanced_pairs_about_n_over_two_per_matching():
    x = np.arange(100.0)
    p1, _ = pair_predictions(x, x, 10, (0.25, 0.75), np.random.default_rng(0),
                             balanced=True)
    assert p1.size == 5 * 50 + 5 * 49
    p1, _ = pair_predictions(x[:99], x[:99], 10, (0.25, 0.75), np.random.default_rng(0),
                             balanced=True)
    assert p1.size == 10 * 49


def test_pairing_parameter_is_validated():
    assert make().resolved_pairing == "balanced"
    assert make(max_records=80).resolved_pairing == "thinned"
    assert make(max_records=80, pairing="thinned").sensitivity == 5.0
    assert make(max_records=80, pairing="balanced").sensitivity == 7.5
    for bad in ("random", None, 3, "Balanced"):
        with pytest.raises(ValueError, match="pairing"):
            make(pairing=bad)
    for needs_bound in ("slots", "thinned"):
        with pytest.raises(ValueError, match="max_records"):
            make(pairing=needs_bound)
    with pytest.raises(ValueError, match="pairing"):
        pairing_stability(3, "auto")
    with pytest.raises(ValueError, match="one of slots"):
        pair_predictions(np.arange(4.0), np.arange(4.0), 2, (0.0, 1.0),
                         np.random.default_rng(0), slots=4, balanced=True)
    x, y, _ = line_data(4, n=51)
    with pytest.raises(ValueError, match="max_records"):        # the bound holds for all
        make(max_records=50, pairing="balanced").fit(x, y, rng=np.random.default_rng(0))


def test_balanced_round_trips_through_json():
    from dpacct.accountant.serialization import from_dict, to_dict

    alg = make(k=6, pairing="balanced", max_records=500)
    d = to_dict(alg)
    back = from_dict(d)
    assert back.pairing == "balanced" and back.sensitivity == alg.sensitivity == 4.5
    # a file written before the pairing existed loads with the behaviour it had then
    del d["params"]["pairing"]
    assert from_dict(d).resolved_pairing == "slots"


def test_balanced_transformation_and_fit_recover_the_line():
    t = matching_transformation(4, (0.25, 0.75), pairing="balanced")
    assert t.stability == 6
    with pytest.raises(ValueError, match="max_records"):
        matching_transformation(4, (0.25, 0.75), max_records=10)(
            np.zeros((11, 2)), np.random.default_rng(0))
    x, y, rng = line_data(5, n=2000)
    fit = make(eps=2.0, pairing="balanced").fit(x, y, rng=rng)
    assert abs(fit.slope - 2.0) < 0.1 and abs(fit.intercept - 1.0) < 0.1


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 30), k=st.integers(1, 7), seed=st.integers(0, 2 ** 32 - 1))
def test_balanced_rows_are_matchings_of_the_stated_sizes(n, k, seed):
    """Every balanced row is a matching (no record twice) with floor(n/2) pairs (even
    rows) or floor((n-1)/2) pairs (odd rows), read back from the predictions of points
    on a parabola (a pair {a, b} predicts -a b at 0 and a + b - a b at 1)."""
    x = np.arange(float(n))
    p1, p2 = pair_predictions(x, x ** 2, k, (0.0, 1.0), np.random.default_rng(seed),
                              balanced=True)
    total, prod = np.rint(p2 - p1).astype(int), np.rint(-p1).astype(int)
    disc = np.rint(np.sqrt(np.maximum(total ** 2 - 4 * prod, 0))).astype(int)
    a, b = (total - disc) // 2, (total + disc) // 2
    sizes = [n // 2 if j % 2 == 0 else max(n - 1, 0) // 2 for j in range(k)]
    assert p1.size == sum(sizes)
    start = 0
    for size in sizes:
        row = np.concatenate([a[start:start + size], b[start:start + size]])
        assert np.unique(row).size == row.size and np.all((row >= 0) & (row < n))
        start += size
