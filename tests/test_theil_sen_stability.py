"""The stability of a random matching under add/remove, settled by brute force.

DP Theil-Sen pairs the records by a random matching.  OpenDP's tutorial declares that
pairing 1-stable (adding a record adds at most one pair); ``DPTheilSen`` accounts 2 (a
replaced pair).  Here, independently of either argument:

* the best coupling of the two matching laws, by a transport linear program over all
  matchings for ``n = 2..6`` (every permutation enumerated): the largest probability
  that a coupling keeps the pair multisets within symmetric distance ``d``;
* the output law of the tutorial's whole pipeline on a small example, enumerated over
  every permutation, against the mixture formula of ``line_counterexample``; and the
  tutorial's claimed epsilon violated on its own data size (``n = 100``);
* the permute-and-flip model of OpenDP's median against OpenDP itself (scores exactly,
  the law by sampling, the claimed epsilon by its privacy map).
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.optimize import linprog

from benchmarks.algos._theil_sen_tutorial import (
    CANDIDATES,
    line_counterexample,
    pf_probabilities,
    quantile_scores,
)


# ----------------------------------------------------------------------------------
# the best coupling, by linear programming over all matchings
# ----------------------------------------------------------------------------------
def matching_law(records: list, positional: bool) -> Counter:
    """Law of the pair multiset: every permutation, paired two by two.

    ``positional``: the tutorial (drop the last record by position, then shuffle);
    otherwise shuffle then drop (a uniformly random maximal matching).
    """
    if positional and len(records) % 2:
        records = records[:-1]
    law: Counter = Counter()
    for perm in itertools.permutations(records):
        m = len(perm) // 2
        pairs = frozenset(frozenset(perm[2 * i: 2 * i + 2]) for i in range(m))
        law[pairs] += 1
    total = sum(law.values())
    return Counter({k: v / total for k, v in law.items()})


def coupled_mass(law_a: Counter, law_b: Counter, d: int) -> float:
    """Largest probability, over couplings, that the pair sets are within distance d."""
    a, b = list(law_a), list(law_b)
    edges = [(i, j) for i, pa in enumerate(a) for j, pb in enumerate(b)
             if len(pa ^ pb) <= d]
    if not edges:
        return 0.0
    rows = np.zeros((len(a) + len(b), len(edges)))
    for e, (i, j) in enumerate(edges):
        rows[i, e] = 1.0
        rows[len(a) + j, e] = 1.0
    caps = np.array([law_a[k] for k in a] + [law_b[k] for k in b])
    res = linprog(-np.ones(len(edges)), A_ub=rows, b_ub=caps, bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_random_maximal_matching_is_two_stable_not_one(n):
    d = list(range(n))
    law_d = matching_law(d, positional=False)
    law_d2 = matching_law([*d, "r"], positional=False)
    within1 = coupled_mass(law_d, law_d2, 1)
    within2 = coupled_mass(law_d, law_d2, 2)
    assert within2 == pytest.approx(1.0, abs=1e-9)          # one replaced pair suffices
    if n % 2:
        assert within1 == pytest.approx(1.0, abs=1e-9)      # odd |D|: one added pair
    else:
        # even |D|: distance <= 1 only when r is the unmatched record of D'
        assert within1 == pytest.approx(1.0 / (n + 1), abs=1e-9)


@pytest.mark.parametrize("n", [3, 5])
def test_positional_truncation_needs_distance_three(n):
    # the tutorial drops the last record of an odd-size dataset; adding r at the end
    # brings it back: one more pair, so an odd distance, 1 only if (w, r) are paired
    d = list(range(n))
    law_d = matching_law(d, positional=True)
    law_d2 = matching_law([*d, "r"], positional=True)
    assert coupled_mass(law_d, law_d2, 2) == pytest.approx(1.0 / n, abs=1e-9)
    assert coupled_mass(law_d, law_d2, 3) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("n", [2, 4])
def test_positional_truncation_even_n_replaces_a_pair(n):
    # r placed first: the last record of D is dropped instead of r (a replacement)
    d = list(range(n))
    law_d = matching_law(d, positional=True)
    law_d2 = matching_law(["r", *d], positional=True)
    assert coupled_mass(law_d, law_d2, 1) == pytest.approx(0.0, abs=1e-9)
    assert coupled_mass(law_d, law_d2, 2) == pytest.approx(1.0, abs=1e-9)


# ----------------------------------------------------------------------------------
# the whole pipeline's output law
# ----------------------------------------------------------------------------------
def brute_force_law(points: np.ndarray, scale: float, positional: bool) -> np.ndarray:
    """Joint law of the two medians, every permutation of the records enumerated."""
    candidates = np.linspace(0.0, 99.0, CANDIDATES)
    cuts = np.array([-1.5, 1.5])
    if positional and len(points) % 2:
        points = points[:-1]
    law = np.zeros((CANDIDATES, CANDIDATES))
    perms = list(itertools.permutations(range(len(points))))
    for perm in perms:
        p = points[list(perm)][: len(points) // 2 * 2]
        p1, p2 = p[0::2], p[1::2]
        slope = (p2[:, 1] - p1[:, 1]) / (p2[:, 0] - p1[:, 0])
        cols = [pf_probabilities(quantile_scores(p1[:, 1] + slope * (c - p1[:, 0]),
                                                 candidates), 2.0 * scale) for c in cuts]
        law += np.outer(*cols)
    return law / len(perms)


@pytest.mark.parametrize("positional", [False, True])
def test_counterexample_formula_against_enumeration(positional):
    n, scale = 4, 1.0
    xs = np.linspace(-3.0, -2.0, n)
    d = np.column_stack([xs, np.zeros(n)])
    r = np.array([[3.0, 12.0]])
    d2 = np.vstack([r, d]) if positional else np.vstack([d, r])
    law_d = brute_force_law(d, scale, positional)
    law_d2 = brute_force_law(d2, scale, positional)
    ratio = np.abs(np.log(law_d) - np.log(law_d2))
    out = line_counterexample(n, scale, positional=positional)
    assert out["joint"] == pytest.approx(float(ratio.max()), rel=1e-9)


@pytest.mark.parametrize("positional", [False, True])
@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_tutorial_claim_is_violated_at_its_own_size(positional, scale):
    # n = 100 as in the tutorial; OpenDP's maps claim 2 / scale for the two medians
    out = line_counterexample(100, scale, positional=positional)
    assert out["claimed"] == pytest.approx(2.0 / scale)
    assert out["joint"] > 1.45 * out["claimed"]
    assert out["marginal"] > 1.45 * out["marginal_claimed"]
    # ... and stays within what stability 2 gives (4 / scale): DPTheilSen's accounting
    assert out["joint"] <= 2.0 * out["claimed"] + 1e-9


def test_counterexample_needs_even_n():
    with pytest.raises(ValueError, match="even"):
        line_counterexample(5)


# ----------------------------------------------------------------------------------
# the permute-and-flip model is OpenDP's median
# ----------------------------------------------------------------------------------
def test_pf_probabilities_against_permutations():
    scores = np.array([3.0, 0.0, 1.0, 2.0, 0.5])
    temp = 0.7
    p = np.exp(-(scores - scores.min()) / temp)
    law = np.zeros(scores.size)
    perms = list(itertools.permutations(range(scores.size)))
    for perm in perms:
        alive = 1.0
        for i in itertools.cycle(perm):           # flip coins in this order until heads
            law[i] += alive * p[i]
            alive *= 1.0 - p[i]
            if alive < 1e-300:
                break
    np.testing.assert_allclose(pf_probabilities(scores, temp), law / len(perms), rtol=1e-9)


def test_scores_and_map_match_opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib", "honest-but-curious")
    rng = np.random.default_rng(3)
    values = np.round(rng.normal(0, 3, 41), 1)
    candidates = np.linspace(-10.0, 10.0, 100)
    dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    t = dp.t.make_quantile_score_candidates(dom, dp.symmetric_distance(), candidates, 0.5)
    np.testing.assert_array_equal(np.asarray(t(values), dtype=float),
                                  quantile_scores(values, candidates))
    from opendp.extras.sklearn.linear_model._make_private_theil_sen import (
        make_private_theil_sen,
    )
    for scale, runs in ((1.0, 1), (2.0, 1), (2.0, 3)):
        meas = make_private_theil_sen(dp.max_divergence(), (-3.0, 3.0), (-10.0, 10.0),
                                      scale=scale, runs=runs)
        assert meas.map(1) == pytest.approx(2.0 * runs / scale)   # stability 1 per run


def test_pf_law_matches_opendp_samples():
    # OpenDP draws from its own (unseeded) generator: a 6-sigma band per candidate
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib", "honest-but-curious")
    dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    candidates = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    scale = 1.0
    m = dp.m.make_private_quantile(dom, dp.symmetric_distance(), dp.max_divergence(),
                                   candidates, 0.5, scale)
    draws = 5_000
    out = np.array([m(data) for _ in range(draws)])
    freq = np.array([(out == c).mean() for c in candidates])
    p = pf_probabilities(quantile_scores(np.array(data), np.array(candidates)), 2 * scale)
    band = 6.0 * np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(freq - p) <= band)


# ----------------------------------------------------------------------------------
# the slot matching (a declared max_records) is 1-stable
# ----------------------------------------------------------------------------------
def slot_law(records: list, slots: int) -> Counter:
    """Law of the pair set of the slot matching: every placement enumerated."""
    law: Counter = Counter()
    for place in itertools.permutations(range(slots), len(records)):
        where = dict(zip(place, records, strict=True))
        pairs = frozenset(frozenset((where[2 * j], where[2 * j + 1]))
                          for j in range(slots // 2)
                          if 2 * j in where and 2 * j + 1 in where)
        law[pairs] += 1
    total = sum(law.values())
    return Counter({k: v / total for k, v in law.items()})


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_slot_matching_is_one_stable(n):
    d = list(range(n))
    law_d, law_d2 = slot_law(d, 6), slot_law([*d, "r"], 6)
    assert coupled_mass(law_d, law_d2, 1) == pytest.approx(1.0, abs=1e-9)


def test_slot_matching_with_n_slots_is_the_maximal_matching():
    for n in (4, 5):
        slots = n + n % 2
        law = slot_law(list(range(n)), slots)
        ref = matching_law(list(range(n)), positional=False)
        assert set(law) == set(ref)
        for k in law:
            assert law[k] == pytest.approx(ref[k], abs=1e-12)
