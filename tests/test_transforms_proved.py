"""Tests for ``dpacct.mechanisms.algorithms.transforms_proved``: derived stabilities.

Independent references: a hypothesis search over neighbouring datasets (add/remove and
replace-one, any order of the records, adversarial values at the rounding boundaries)
that evaluates the float implementation and compares the distance of the outputs with
the claimed stability; the same search run against deliberately wrong claims (it must
find a violation); exact rational arithmetic (``fractions``) for the summation error;
and OpenDP 0.16's own stability and privacy maps on the same pipelines.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpacct.accountant import compose
from dpacct.mechanisms import (
    Algorithm,
    DPTheilSen,
    PermuteAndFlip,
    PlannedRelease,
    ProvedTransformation,
    Transformation,
    bounded_mean,
    bounded_sum,
    bounded_variance,
    cast_float,
    clamp,
    count,
    count_by_categories,
    impute_constant,
    matching_transformation,
    pairwise_sum,
    pairwise_sum_error,
    resize,
    select_column,
    select_columns,
)
from dpacct.mechanisms.algorithms.transformations import symmetric_distance

U = 2.0**-53
AR, RO = "add/remove", "replace-one"
#: The budgets.  Each wrong claim below is searched with the budget of the searches it
#: vouches for and must be caught.  Over 20 hypothesis seeds (not derandomised) the
#: unsized ones were first caught within 54 examples (sum 5-54, count 2, the row step
#: 5-35, resize 2, histogram 4-7): 150 examples, down from 400 (about 7 s of CPU).  The
#: mean's float error, on sized replace-one pairs, took 12 to over 1000 (median about
#: 390): the sized searches (mean, variance) keep 400.
SEARCH = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SIZED_SEARCH = settings(SEARCH, max_examples=400)
CATCH = SEARCH
BOUNDS = [(0.0, 1.0), (2.0, 3.0), (-1.0, 1.0), (-5.0, 0.5), (0.0, 100.0), (-1e3, 1e3)]


# ---------------------------------------------------------------- the search
def _values(lo: float, hi: float):
    """Values in ``[lo, hi]``: the bounds, points a rounding away from them and from
    simple fractions (where pairwise sums round up or down), and any float between."""
    w = hi - lo
    special = [lo, hi, lo + w / 3, lo + 2 * w / 3, lo + w / 2, lo + w / 2 + w * U,
               lo + w * (1 - U), lo + w * (1 - 2 * U), lo + w * U, lo + 0.1 * w,
               lo + 0.7 * w, math.nextafter(hi, lo), math.nextafter(lo, hi)]
    special = sorted({min(max(v, lo), hi) for v in special})
    return st.one_of(st.sampled_from(special), st.floats(lo, hi))


@st.composite
def neighbours(draw, values, relation, *, size=None, max_size=10):
    """``(D, D')``: ``D'`` is ``D`` with one record added or removed (add/remove) or
    one record replaced (replace-one), then in any order (a multiset relation)."""
    lo, hi = (0 if relation == AR else 1, max_size) if size is None else (size, size)
    # extreme datasets (every record equal, e.g. all at a bound) are where sensitivities
    # are attained: drawn as often as arbitrary ones
    d = draw(st.one_of(st.lists(values, min_size=lo, max_size=hi),
                       values.flatmap(lambda v: st.lists(st.just(v), min_size=lo,
                                                         max_size=hi))))
    nb = list(d)
    if relation == AR:
        if d and draw(st.booleans()):
            del nb[draw(st.integers(0, len(d) - 1))]
        else:
            nb.insert(draw(st.integers(0, len(d))), draw(values))
    else:
        nb[draw(st.integers(0, len(d) - 1))] = draw(values)
    nb = draw(st.permutations(nb))
    if draw(st.booleans()):
        d, nb = nb, d
    return d, nb


def _distance(a, b, metric: str) -> float:
    diff = np.ravel(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return float(np.abs(diff).sum() if metric == "l1" else np.sqrt((diff**2).sum()))


def _violates(t, pair, claim) -> bool:
    d, nb = pair
    return _distance(t(np.array(d)), t(np.array(nb)), t.metric) > claim


def _search(make, relation, *, sized=False):
    """A hypothesis search for a neighbouring pair on which ``make(bounds, n)``'s output
    moves by more than its claimed stability ``make(...)[1]`` (with the sized budget for
    a fixed number of records ``n``)."""
    budget = SIZED_SEARCH if sized else SEARCH

    @budget
    @given(st.data())
    def run(data):
        lo, hi = data.draw(st.sampled_from(BOUNDS))
        n = data.draw(st.integers(2, 6)) if sized else None
        t, claim = make((lo, hi), n)
        pair = data.draw(neighbours(_values(lo, hi), relation, size=n))
        assert not _violates(t, pair, claim), (pair, claim)
    return run


def _claimed(t):
    return t, t.stability


# ---------------------------------------------------------------- summation error
def test_pairwise_sum_is_the_tree_and_exact_on_small_integers():
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, size=1001).astype(float)
    assert pairwise_sum(x) == float(x.sum())
    assert pairwise_sum([]) == 0.0
    assert pairwise_sum(np.ones((3, 2))).tolist() == [3.0, 3.0]


def test_pairwise_error_bound_holds_against_exact_rational_sums():
    """The computed sum against the exact one (``fractions``) on adversarial data."""
    rng = np.random.default_rng(1)
    for n in (2, 3, 17, 1000, 4097):
        x = np.where(rng.random(n) < 0.5, 1.0, 1.0 - U) * rng.choice([1.0, 0.1, 1 / 3], n)
        exact = sum(Fraction(v) for v in x)
        err = abs(Fraction(pairwise_sum(x)) - exact)
        assert err <= Fraction(pairwise_sum_error(n, 1.0))
    # the bound is gamma_h * N * M with h = ceil(log2 N), rounded up
    g = Fraction(11) * Fraction(1, 2**53) / (1 - Fraction(11) * Fraction(1, 2**53))
    assert Fraction(pairwise_sum_error(1025, 2.0)) >= g * 1025 * 2
    assert pairwise_sum_error(1025, 2.0) == pytest.approx(float(g * 1025 * 2), rel=1e-15)


def test_stability_formulas_against_hand_computation():
    e = float(Fraction(20, 2**53) / (1 - Fraction(20, 2**53)) * 2**20 * 3)
    assert bounded_sum((-3.0, 2.0)).stability == pytest.approx(3.0 + 2 * e, rel=1e-15)
    assert bounded_sum((-3.0, 2.0), relation=RO).stability == pytest.approx(5.0 + 2 * e,
                                                                             rel=1e-15)
    assert bounded_mean((0.0, 10.0), 100).stability == pytest.approx(0.1, rel=1e-12)
    assert bounded_variance((0.0, 10.0), 100).stability == pytest.approx(100 * 99 / 100 / 99,
                                                                         rel=1e-12)
    assert bounded_variance((0.0, 10.0), 100, ddof=0).stability == pytest.approx(
        100 * 99 / 100 / 100, rel=1e-12)
    # the float terms push every claim strictly above the real-number sensitivity
    assert bounded_sum((0.0, 10.0)).stability > 10.0
    assert bounded_mean((0.0, 10.0), 100).stability > 0.1
    assert bounded_variance((0.0, 10.0), 100).stability > 1.0


def test_variance_replace_one_bound_is_attained():
    """``(1 - 1/n) (U - L)^2`` for the sum of squared deviations: others at L, L -> U."""
    n = 5
    v = bounded_variance((0.0, 1.0), n, ddof=0).function
    moved = abs(v(np.r_[np.zeros(n - 1), 1.0]) - v(np.zeros(n)))
    assert moved == pytest.approx((1 - 1 / n) / n, rel=1e-12)


# ---------------------------------------------------------------- property searches
@pytest.mark.parametrize("relation", [AR, RO])
def test_sum_stability_survives_the_search(relation):
    _search(lambda b, n: _claimed(bounded_sum(b, max_records=16, relation=relation)),
            relation)()


def test_count_stability_survives_the_search():
    _search(lambda b, n: _claimed(count()), AR)()


@pytest.mark.parametrize("relation", [AR, RO])
@pytest.mark.parametrize("metric", ["l1", "l2"])
def test_histogram_stability_survives_the_search(relation, metric):
    t = count_by_categories(["a", "b", "c"], metric=metric, relation=relation)

    @SEARCH
    @given(neighbours(st.sampled_from(["a", "b", "c", "z", 1, 2.5]), relation))
    def run(pair):
        d, nb = pair
        assert _distance(t(d), t(nb), t.metric) <= t.stability
        for z in pair:             # typed columns agree with lists
            if z and all(isinstance(v, str) for v in z):
                assert t(np.array(z)).tolist() == t(z).tolist()
    run()


def test_mean_stability_survives_the_search():
    _search(lambda b, n: _claimed(bounded_mean(b, n)), RO, sized=True)()


@pytest.mark.parametrize("ddof", [0, 1])
def test_variance_stability_survives_the_search(ddof):
    _search(lambda b, n: _claimed(bounded_variance(b, n, ddof=ddof)), RO, sized=True)()


ROW_STEPS = [select_columns(["x", "y"]), cast_float(), impute_constant(0.5),
             clamp([-1.0, 0.0], [1.0, 2.0])]


@pytest.mark.parametrize("relation", [AR, RO])
@pytest.mark.parametrize("steps", [1, 2, 3, 4], ids=["select", "cast", "impute", "clamp"])
def test_row_steps_move_one_record(relation, steps):
    """select, then cast, impute, clamp (each step searched as the last of its prefix):
    one changed input record, one changed output record (symmetric distance 1 for
    add/remove; one replaced row, distance 2, for replace-one)."""
    t = ROW_STEPS[0]
    for step in ROW_STEPS[1:steps]:
        t = t >> step
    assert isinstance(t, ProvedTransformation) and t.stability == 1.0 and t.relation is None
    cell = st.one_of(st.sampled_from(["n/a", "", "1e400", "-inf", "nan"]),
                     st.floats(-3, 3).map(repr), st.floats(-3, 3))
    rows = st.tuples(cell, cell)

    def records(out):          # rows as hashable keys; every NaN the same key
        return Counter(tuple(repr(v) for v in row) for row in np.asarray(out).tolist())

    @settings(SEARCH, max_examples=150)
    @given(neighbours(rows, relation))
    def run(pair):
        a, b = (records(t({"x": [r[0] for r in z], "y": [r[1] for r in z]})) if z
                else Counter() for z in pair)
        if steps >= 3:
            assert not any("nan" in key for row in a for key in row)
        assert sum(((a - b) + (b - a)).values()) <= (1 if relation == AR else 2)
    run()


def test_select_keeps_each_value_as_it_is():
    """Found by the search: ``np.asarray`` turned 0.0 into '0.0' when another record of
    the column was a string, so a record's output depended on the other records."""
    alone = select_column("x")({"x": [0.0]})[0]
    beside = select_column("x")({"x": ["n/a", 0.0]})[1]
    assert repr(alone) == repr(beside) == "0.0"


def test_resize_pads_to_a_replacement():
    """``resize`` below its size: an add/remove neighbour becomes one replaced record."""
    t = resize(8, 0.25)

    @SEARCH
    @given(neighbours(_values(0.0, 1.0), AR, max_size=7))
    def run(pair):
        d, nb = pair
        if max(len(d), len(nb)) > 8:
            return
        a, b = (t(np.array(z), np.random.default_rng(0)) for z in (d, nb))
        assert a.shape == b.shape == (8,)
        assert symmetric_distance(a, b) <= 2
    run()


@pytest.mark.parametrize("n,size", [(3, 2), (4, 2), (4, 3), (5, 3)])
def test_resize_subsampling_coupling(n, size):
    """The coupling of the subsampling branch, exactly: ``S'`` uniform over ``size``-subsets
    of ``D' = D + r``; ``S = S'`` if ``r`` is not in it, else ``S' - r`` plus a uniform
    unused record of ``D``.  ``S`` must be uniform over ``size``-subsets of ``D`` and
    differ from ``S'`` by at most one replaced record."""
    r = n                                            # records 0..n-1 are D, n is r
    law: dict[frozenset, Fraction] = {}
    subsets = list(itertools.combinations(range(n + 1), size))
    for s in subsets:
        p = Fraction(1, len(subsets))
        if r not in s:
            law[frozenset(s)] = law.get(frozenset(s), 0) + p
            continue
        rest = [i for i in range(n) if i not in s]
        for extra in rest:
            c = frozenset(set(s) - {r} | {extra})
            assert len(c ^ set(s)) == 2
            law[c] = law.get(c, 0) + p / len(rest)
    target = Fraction(1, math.comb(n, size))
    assert set(law.values()) == {target} and len(law) == math.comb(n, size)


def test_histogram_does_not_coerce_a_record_by_its_neighbours():
    h = count_by_categories(["1", 1])
    assert h(["1", 1, 1.0]).tolist() == [1, 2, 0]       # 1 == 1.0; "1" is its own
    assert h(np.array(["1", "x"])).tolist() == [1, 0, 1]


def test_cast_and_impute_and_clamp_values():
    t = cast_float() >> impute_constant(-1.0) >> clamp(0.0, 10.0)
    out = t(np.array(["3", "x", "12.5", None, "-2"], dtype=object))
    assert out.tolist() == [3.0, 0.0, 10.0, 0.0, 0.0]


# ---------------------------------------------------------------- the search can fail
def _wrong(t, claim):
    return t, claim


def test_search_catches_sum_claimed_at_width_under_add_remove():
    """``U - L`` is the replace-one sensitivity; add/remove needs ``max(|L|, |U|)``."""
    run = _search(lambda b, n: _wrong(bounded_sum(b, max_records=16),
                                      b[1] - b[0]), AR)
    with pytest.raises(AssertionError):
        run()


def test_sum_with_float_error_dropped_is_broken_by_the_searchs_witness():
    """The real-number sensitivity ``max(|L|, |U|)`` is exceeded by the float sum: the
    search found this pair (3 + 2.3333333333333335 rounds up); whether its random walk
    reaches it within the budget depended on which hypothesis tests ran before it in the
    same process, so the witness is asserted directly."""
    t, claim = _wrong(bounded_sum((2.0, 3.0), max_records=16), 3.0)
    pair = ([2.3333333333333335], [3.0, 2.3333333333333335])
    assert _violates(t, pair, claim)
    right = bounded_sum((2.0, 3.0), max_records=16)
    assert not _violates(right, pair, right.stability)


def test_search_catches_mean_with_float_error_dropped():
    """The real-number sensitivity ``(U - L) / n`` is exceeded by the float mean.  The
    sized search reaches such a pair within its budget only by luck (12 to over 1000
    examples over 20 seeds; its derandomised seed follows the source text, so an
    unrelated edit flipped it to a miss in CI), so a witness found by a seeded random
    search over the same value strategy (bounds (-5, 0.5), n 6: six records at 0.5, one
    replaced by -5) is asserted directly, and the claim with the float error counted is
    not broken by it."""
    t, claim = _wrong(bounded_mean((-5.0, 0.5), 6), 5.5 / 6)
    pair = ([0.5] * 6, [0.5, 0.5, 0.5, -5.0, 0.5, 0.5])
    assert _violates(t, pair, claim)
    assert not _violates(t, pair, t.stability)


def test_search_catches_variance_with_float_error_dropped():
    """The real-number sensitivity ``(U - L)^2 (n - 1) / n^2`` is exceeded by the float
    computation: the search found this pair on bounds (0, 1), n = 3; whether its random
    walk reaches it within the budget depended on the tests run before it in the same
    process (it failed in a full-module run, passed alone), so the witness is asserted
    directly, and the claim with the float error counted is not broken by it."""
    t, claim = _wrong(bounded_variance((0.0, 1.0), 3, ddof=0), 1.0 * 2 / 9)
    pair = ([1.0, 1.0, 1.0], [0.0, 1.0, 1.0])
    assert _violates(t, pair, claim)
    assert not _violates(t, pair, t.stability)


def test_search_catches_a_step_that_is_not_row_wise():
    """Imputing the column mean (not a row-wise step) claimed 1-stable like impute_constant:
    one added record moves every imputed value, and the search finds it."""
    def impute_mean(x):
        x = np.asarray(x, dtype=float)
        return np.where(np.isnan(x), np.nanmean(x) if (~np.isnan(x)).any() else 0.0, x)

    @CATCH
    @given(neighbours(st.sampled_from([np.nan, 0.0, 1.0, 2.0]), AR))
    def run(pair):
        a, b = (impute_mean(z) for z in pair)
        assert symmetric_distance(a.tolist(), b.tolist()) <= 1
    with pytest.raises(AssertionError):
        run()


def test_search_catches_count_claimed_below_one():
    run = _search(lambda b, n: _wrong(count(), 0.5), AR)
    with pytest.raises(AssertionError):
        run()


def test_search_catches_resize_claimed_to_keep_add_remove():
    """Padding turns an added record into a *replaced* fill (symmetric distance 2): a
    claim that resize keeps add/remove distance 1 is caught."""
    t = resize(8, 0.25)

    @CATCH
    @given(neighbours(_values(0.0, 1.0), AR, max_size=7))
    def run(pair):
        d, nb = pair
        if max(len(d), len(nb)) > 8:
            return
        a, b = (t(np.array(z), np.random.default_rng(0)) for z in (d, nb))
        assert symmetric_distance(a, b) <= 1
    with pytest.raises(AssertionError):
        run()


def test_search_catches_histogram_claimed_at_one_under_replace_one():
    t = count_by_categories(["a", "b"], relation=RO)

    @CATCH
    @given(neighbours(st.sampled_from(["a", "b", "z"]), RO))
    def run(pair):
        assert not _violates(t, pair, 1.0)
    with pytest.raises(AssertionError):
        run()


# ---------------------------------------------------------------- refusals
def test_refusals_name_the_parameter():
    with pytest.raises(ValueError, match="public"):
        count(relation=RO)
    with pytest.raises(ValueError, match="resize"):
        bounded_mean((0.0, 1.0), 10, relation=AR)
    with pytest.raises(ValueError, match="resize"):
        bounded_variance((0.0, 1.0), 10, relation=AR)
    with pytest.raises(ValueError, match="declared size"):
        bounded_mean((0.0, 1.0), 3)([0.5, 0.5])
    with pytest.raises(ValueError, match="clamp"):
        bounded_sum((0.0, 1.0))([2.0])
    with pytest.raises(ValueError, match="more than"):
        bounded_sum((0.0, 1.0), max_records=2)([0.5] * 3)
    with pytest.raises(ValueError, match="impute"):
        clamp(0.0, 1.0)([np.nan])
    with pytest.raises(ValueError, match="overflow"):
        bounded_sum((0.0, 1e300), max_records=2**40)
    with pytest.raises(ValueError, match="bounds"):
        bounded_sum((1.0, 0.0))
    with pytest.raises(ValueError, match="relation"):
        bounded_sum((0.0, 1.0), relation="swap")
    with pytest.raises(ValueError, match="distinct"):
        count_by_categories(["a", "a"])
    with pytest.raises(ValueError, match="replace-one"):
        resize(4, 0.0) >> count()
    with pytest.raises(ValueError, match="column"):
        select_column("z")({"x": [1]})
    # the bounds an aggregate needs are checked when the chain is built, not on the data
    with pytest.raises(ValueError, match="clamp"):
        cast_float() >> bounded_sum((0.0, 1.0))
    with pytest.raises(ValueError, match="clamp"):
        clamp(0.0, 2.0) >> bounded_sum((0.0, 1.0))
    with pytest.raises(ValueError, match="fill"):
        clamp(0.0, 1.0) >> resize(5, 3.0) >> bounded_mean((0.0, 1.0), 5)
    with pytest.raises(ValueError, match="clamp"):
        clamp([0.0, 0.0], [1.0, 1.0]) >> bounded_sum((0.0, 1.0))
    ok = clamp(0.2, 0.8) >> impute_constant(0.5) >> clamp(0.0, 1.0) >> resize(5, 0.5)
    assert (ok >> bounded_mean((0.0, 1.0), 5)).input_bounds is None


# ---------------------------------------------------------------- chains and privacy
def test_chain_relations_and_privacy():
    sum_ar = clamp(0.0, 4.0) >> bounded_sum((0.0, 4.0))
    m = sum_ar.then_laplace(scale=8.0)
    assert m.neighbouring == AR and m.pure_epsilon == pytest.approx(0.5, rel=1e-8)
    assert m.pure_epsilon >= 0.5
    mean = clamp(0.0, 4.0) >> resize(10, 2.0) >> bounded_mean((0.0, 4.0), 10)
    assert mean.relation == AR and mean.randomized
    mm = mean.then_laplace(scale=0.8)
    assert mm.neighbouring == AR and mm.pure_epsilon == pytest.approx(0.5, rel=1e-12)
    ro = bounded_mean((0.0, 4.0), 10).then_gaussian(scale=0.8)
    assert ro.neighbouring == RO and ro.primitive.sigma == pytest.approx(2.0, rel=1e-12)
    rng = np.random.default_rng(3)
    value = mm.release(np.full(25, 1.0), rng=rng)
    assert np.isfinite(value)
    # a sum and a count released together: pure epsilons add (basic composition)
    both = compose([m, count().then_laplace(scale=4.0)])
    assert both.pure_epsilon == pytest.approx(m.pure_epsilon + 0.25, rel=1e-12)
    assert both.epsilon(1e-6) <= m.pure_epsilon + 0.25 + 1e-9


def _opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    return dp


def test_sum_pipeline_matches_opendp():
    """select -> cast -> impute -> clamp -> sum -> Laplace, in both libraries: the same
    output, and the same epsilon up to the float-error term (dpacct's is half OpenDP's:
    unit round-off 2**-53 against OpenDP's 2**-52)."""
    dp = _opendp()
    bounds, scale = (0.0, 100.0), 50.0
    ages = ["34", "n/a", "51", "200", "-4", "77.5"]
    ours = (select_column("age") >> cast_float() >> impute_constant(40.0)
            >> clamp(*bounds) >> bounded_sum(bounds)).then_laplace(scale)
    theirs_t = (dp.t.make_split_dataframe(",", col_names=["age"])
                >> dp.t.make_select_column(key="age", TOA=str)
                >> dp.t.then_cast(TOA=float)
                >> dp.t.then_impute_constant(40.0)
                >> dp.t.then_clamp(bounds) >> dp.t.then_sum())
    theirs = theirs_t >> dp.m.then_laplace(scale)
    assert ours.transformation({"age": ages}) == theirs_t("\n".join(ages)) == 302.5
    eps_ideal = bounds[1] / scale
    assert eps_ideal < ours.pure_epsilon <= theirs.map(1)
    # bounds of mixed sign: add/remove needs max(|L|, |U|); OpenDP's map at d_in = 1 is
    # max(U - L, max(|L|, |U|)) (sound for any d_in, loose at 1): 1.5x the noise here
    mixed = (-50.0, 100.0)
    ours_mixed = (clamp(*mixed) >> bounded_sum(mixed)).then_laplace(scale)
    theirs_mixed = (dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                    dp.symmetric_distance()) >> dp.t.then_clamp(mixed) >> dp.t.then_sum() \
        >> dp.m.then_laplace(scale)
    assert ours_mixed.pure_epsilon == pytest.approx(100.0 / scale, rel=1e-8)
    assert theirs_mixed.map(1) == pytest.approx(150.0 / scale, rel=1e-8)
    # the float terms: 2 gamma_20 2**20 U (dpacct) and 2 (20 u' / (1 - 20 u')) 2**20 U with
    # u' = 2**-52 (OpenDP): a factor 2 apart at N = 2**20
    assert ours.pure_epsilon - eps_ideal == pytest.approx((theirs.map(1) - eps_ideal) / 2,
                                                          rel=1e-6)
    front = (dp.t.make_split_dataframe(",", col_names=["age"])
             >> dp.t.make_select_column(key="age", TOA=str)
             >> dp.t.then_cast(TOA=float) >> dp.t.then_impute_constant(40.0)
             >> dp.t.then_clamp(bounds))
    assert front.map(1) == 1 == (select_column("age") >> cast_float()
                                 >> impute_constant(40.0) >> clamp(*bounds)).stability


@pytest.mark.parametrize("kind", ["mean", "variance"])
def test_mean_and_variance_pipelines_match_opendp(kind):
    """clamp -> resize -> mean (variance) -> Laplace at the same parameters: epsilon
    agrees with OpenDP's privacy map to the float-error term, both above the ideal."""
    dp = _opendp()
    bounds, n, scale = (0.0, 10.0), 100, 0.5
    make = bounded_mean if kind == "mean" else bounded_variance
    ours = (clamp(*bounds) >> resize(n, 5.0) >> make(bounds, n)).then_laplace(scale)
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    stat = dp.t.then_mean() if kind == "mean" else dp.t.then_variance()
    theirs = (space >> dp.t.then_clamp(bounds) >> dp.t.then_resize(size=n, constant=5.0)
              >> stat >> dp.m.then_laplace(scale))
    ideal = (10.0 / n if kind == "mean" else 100.0 / n) / scale
    assert ideal < ours.pure_epsilon
    assert ideal < theirs.map(1)
    assert ours.pure_epsilon == pytest.approx(theirs.map(1), rel=1e-9)
    rng = np.random.default_rng(5)
    data = rng.uniform(-2, 12, 120)
    est = ours.transformation(data, rng)
    clipped = np.clip(data, *bounds)
    assert min(clipped) <= est <= max(clipped) if kind == "mean" else 0 <= est <= 25.0


# ---------------------------------------------------------------- Theil-Sen pipeline
def _grid_medians_cls():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class GridMedians(Algorithm):
        """Notebook 08's medians: permute-and-flip over a grid, rank utility moves by
        1/2 per added or removed prediction."""

        epsilon_each: float
        lower: float
        upper: float
        size: int = 100

        def planned_releases(self):
            return (PlannedRelease("median", PermuteAndFlip(epsilon=self.epsilon_each), 2,
                                   sensitivity=0.5),)

        def medians(self, predictions, *, rng):
            grid = np.linspace(self.lower, self.upper, self.size)
            session = self.releases(rng)
            out = []
            for column in predictions.T:
                ranks = np.searchsorted(np.sort(column), grid, side="left")
                out.append(grid[session.release("median", -np.abs(ranks - column.size / 2))])
            session.finish()
            return np.array(out)
    return GridMedians


def test_theil_sen_pipeline_with_proved_front_matches_dpacct_and_opendp():
    """The seed's Theil-Sen pipeline from a table of strings: select (x, y) -> cast ->
    impute -> clamp x to [-3, 3] (all 1-stable, derived) -> k random matchings (stability
    2 k) -> two grid medians.  Its epsilon is DPTheilSen's and OpenDP's corrected
    pipeline's; on clean data it releases DPTheilSen's line, draw for draw."""
    from benchmarks.algos._theil_sen_tutorial import Y_BOUNDS, cut_points, tutorial_data

    eps, k = 1.0, 10
    cuts = tuple(cut_points())
    front = (select_columns(["x", "y"]) >> cast_float() >> impute_constant(0.0)
             >> clamp([-3.0, -np.inf], [3.0, np.inf]))
    pairing = front >> matching_transformation(k, cuts, pairing="maximal")
    assert isinstance(pairing, Transformation) and pairing.stability == 2 * k
    medians = _grid_medians_cls()(epsilon_each=eps / 2 / pairing.stability,
                                  lower=Y_BOUNDS[0], upper=Y_BOUNDS[1])
    pipeline = pairing.then(medians, "medians")
    alg = DPTheilSen(epsilon=eps, x_lower=-3, x_upper=3, pred_lower=-10, pred_upper=10,
                     k=k, median="grid", pairing="maximal")
    assert pipeline.pure_epsilon == pytest.approx(alg.pure_epsilon, rel=1e-12)
    assert pipeline.pure_epsilon == pytest.approx(eps, rel=1e-12)

    x, y = tutorial_data(200, np.random.default_rng(11))
    x = np.clip(x, -3.0, 3.0)
    table = {"x": [repr(float(v)) for v in x], "y": [repr(float(v)) for v in y]}
    m1, m2 = pipeline.release(table, rng=np.random.default_rng(7))
    slope = (m2 - m1) / (cuts[1] - cuts[0])
    fit = alg.fit(x, y, rng=np.random.default_rng(7))
    assert slope == pytest.approx(fit.slope, abs=1e-12)
    assert m1 - slope * cuts[0] == pytest.approx(fit.intercept, abs=1e-12)

    dp = pytest.importorskip("opendp.prelude")
    from benchmarks.algos.theil_sen import opendp_measurements

    opendp_measurements(eps, runs=k)     # raises unless OpenDP's map gives eps at 2 k
    dp.enable_features("contrib")
    theirs_front = (dp.t.make_split_dataframe(",", col_names=["x", "y"])
                    >> dp.t.make_select_column(key="x", TOA=str)
                    >> dp.t.then_cast(TOA=float) >> dp.t.then_impute_constant(0.0)
                    >> dp.t.then_clamp((-3.0, 3.0)))
    assert theirs_front.map(1) == front.stability == 1
