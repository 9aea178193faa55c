"""The thinned pairing of DP Theil-Sen: 1-stable under a public bound N, checked by brute
force over the implementation's own randomness, with a deliberately wrong size law
refused by the same check (docs/theory/algorithms.md, 'A pairing that degrades
gracefully with the slack')."""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations, product
from math import factorial

import numpy as np
import pytest
from test_theil_sen import _best_distance, _coupling_reaches, _product, line_data, make

import dpacct.mechanisms.algorithms.theil_sen as ts
from dpacct.mechanisms.algorithms.theil_sen import (
    pair_predictions,
    pairing_stability,
    thinned_sizes,
)

BOUND = 6


class _FixedDraws:
    """Stands in for the generator: ``integers`` returns one given sequence of draws
    (checking the range the code asks for), ``permuted`` applies one given permutation."""

    def __init__(self, draws, perm):
        self.draws, self.perm = list(draws), np.asarray(perm, dtype=int)

    def integers(self, low, high, size):
        high = np.broadcast_to(np.asarray(high), size)
        out = np.array(self.draws[:size[0]], dtype=np.int64).reshape(size)
        del self.draws[:size[0]]
        assert low == 0 and np.all((out >= 0) & (out < high))
        return out

    def permuted(self, arr, axis):
        assert axis == 1
        return np.asarray(arr)[:, self.perm]


def _thinned_law(n, bound=BOUND):
    """The exact law of one thinned matching's pair set, from ``pair_predictions`` run on
    every sequence of the size chain's integer draws (each of probability ``1 / prod (m +
    1)``) and every permutation (``1 / n!``).  Records are the points ``(i, i^2)``; a pair
    ``{a, b}`` predicts ``-a b`` at 0 and ``a + b - a b`` at 1."""
    x = np.arange(float(n))
    ranges = [range(m + 1) for m in range(bound - 1, n - 1, -1)]
    weight = Fraction(1, int(np.prod([len(r) for r in ranges])) * factorial(n))
    law: dict[frozenset, Fraction] = {}
    for draws in product(*ranges):
        for perm in permutations(range(n)):
            p1, p2 = pair_predictions(x, x ** 2, 1, (0.0, 1.0), _FixedDraws(draws, perm),
                                      thinned=bound)
            total, prod_ = np.rint(p2 - p1).astype(int), np.rint(-p1).astype(int)
            disc = np.rint(np.sqrt(np.maximum(total ** 2 - 4 * prod_, 0))).astype(int)
            a, b = (total - disc) // 2, (total + disc) // 2
            key = frozenset(frozenset((int(u), int(v))) for u, v in zip(a, b, strict=True))
            law[key] = law.get(key, 0) + weight
    return {key: float(p) for key, p in law.items()}


def _size_law(n, bound):
    """The size chain of the theorem, by exact rational dynamic programming (written
    from the theorem, not from the sampler)."""
    law = {bound // 2: Fraction(1)}
    for m in range(bound - 1, n - 1, -1):
        nxt: dict[int, Fraction] = {}
        for j, p in law.items():
            down = Fraction(2 * j, m + 1)
            if down:
                nxt[j - 1] = nxt.get(j - 1, 0) + p * down
            if down < 1:
                up = j + 1 if 2 * j + 2 <= m else j
                nxt[up] = nxt.get(up, 0) + p * (1 - down)
        law = nxt
    return law


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_thinned_rows_are_one_stable_up_to_the_bound(n):
    """Adding a record to n < N = 6 records: some coupling keeps the pair sets within
    distance 1 (one pair added or removed), none within 0 once the laws differ: the
    claim 'thinned' = k, read off the implementation."""
    before, after = _thinned_law(n), _thinned_law(n + 1)
    assert sum(before.values()) == pytest.approx(1.0, abs=1e-12)
    assert _best_distance(before, after) == (0 if n == 0 else 1)
    assert pairing_stability(1, "thinned") == 1


@pytest.mark.parametrize("n", [2, 3, 4])
def test_thinned_joint_claim_is_exact(n):
    """Two independent thinned matchings: every coupling of the joint laws needs 2 =
    pairing_stability(2, 'thinned'); a claim of 1 is refused by the LP."""
    law_n, law_n1 = _thinned_law(n), _thinned_law(n + 1)
    joint, joint1 = _product([law_n, law_n]), _product([law_n1, law_n1])
    assert _coupling_reaches(joint, joint1, pairing_stability(2, "thinned"))
    assert not _coupling_reaches(joint, joint1, pairing_stability(2, "thinned") - 1)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_thinned_law_is_uniform_given_its_size_and_follows_the_chain(n):
    """Given its number of pairs the matching is uniform, and the number of pairs has the
    theorem's law (exact rational DP, independent of the sampler); at n = N it is the
    maximal matching."""
    law = _thinned_law(n)
    sizes = _size_law(n, BOUND)
    for j, p in sizes.items():
        of_size = [q for key, q in law.items() if len(key) == j]
        count = factorial(n) // (2 ** j * factorial(j) * factorial(n - 2 * j))
        assert len(of_size) == count
        assert all(q == pytest.approx(float(p) / count, abs=1e-12) for q in of_size)
    if n == BOUND:
        assert sizes == {n // 2: 1}


@pytest.mark.parametrize("n", [2, 4])
def test_a_wrong_size_law_is_refused(monkeypatch, n):
    """The check can fail: the sizes of the maximal matching (the bound ignored) or a
    chain that loses a pair with half the right probability are not 1-stable -- the LP
    finds no coupling within distance 1 for them."""
    def maximal(n, bound, k, rng):
        return np.full(k, n // 2, dtype=np.int64)

    def half_rate(n, bound, k, rng):
        sizes = [bound // 2] * k
        for m in range(bound - 1, n - 1, -1):
            for i, u in enumerate(rng.integers(0, np.array([[m + 1]]), size=(1, k))[0]):
                j = sizes[i]
                if 2 * u < 2 * j:                 # probability j / (m + 1): wrong
                    sizes[i] = j - 1
                elif 2 * j + 2 <= m:
                    sizes[i] = j + 1
        return np.array(sizes, dtype=np.int64)

    monkeypatch.setattr(ts, "thinned_sizes", maximal)
    assert _best_distance(_thinned_law(n), _thinned_law(n + 1)) == 2
    monkeypatch.setattr(ts, "thinned_sizes", half_rate)
    assert not _coupling_reaches(_thinned_law(n), _thinned_law(n + 1), 1)


def test_thinned_pairs_match_the_theorem_and_beat_slots():
    """E J(n) = n/3 + (N/6) (n)_4 / (N)_4 when the cap floor(n/2) does not bind (the
    theorem's recursion), against the exact chain (float DP) and the sampler; more pairs
    than the slot matchings' n (n - 1) / (2 (N - 1)) at every slack."""
    n, bound = 1000, 2000
    law = np.zeros(bound // 2 + 2)
    law[bound // 2] = 1.0
    j = np.arange(law.size)
    for m in range(bound - 1, n - 1, -1):
        down = 2 * j / (m + 1)
        nxt = np.zeros_like(law)
        nxt[:-1] += (law * down)[1:]
        np.add.at(nxt, np.where(2 * j + 2 <= m, j + 1, j), law * np.clip(1 - down, 0, None))
        law = nxt
    exact = float((j * law).sum())
    falling = np.prod([(n - i) / (bound - i) for i in range(4)])
    assert exact == pytest.approx(n / 3 + bound / 6 * falling, rel=1e-3)
    sampled = thinned_sizes(n, bound, 400, np.random.default_rng(0))
    assert abs(sampled.mean() - exact) < 5 * sampled.std() / 20
    assert exact > 1.3 * n * (n - 1) / (2 * (bound - 1))
    assert thinned_sizes(7, 7, 3, np.random.default_rng(1)).tolist() == [3, 3, 3]
    with pytest.raises(ValueError, match="max_records"):
        thinned_sizes(8, 7, 1, np.random.default_rng(1))


def test_thinned_is_the_default_with_a_bound_and_recovers_the_line():
    x, y, rng = line_data(6, n=400)
    alg = make(eps=2.0, max_records=600)
    assert alg.resolved_pairing == "thinned" and alg.sensitivity == alg.k / 2
    fit = alg.fit(x, y, rng=rng)
    assert abs(fit.slope - 2.0) < 0.1 and abs(fit.intercept - 1.0) < 0.1
    t = ts.matching_transformation(4, (0.25, 0.75), max_records=10)
    assert t.stability == 4
    with pytest.raises(ValueError, match="max_records"):
        t(np.zeros((11, 2)), np.random.default_rng(0))


def test_files_written_before_the_new_defaults_keep_their_pairing():
    """A saved DPTheilSen without a 'pairing' field was fitted with the old 'auto'
    (slots with a bound, maximal without): it loads with that pairing, not the new
    default."""
    from dpacct.accountant.serialization import from_dict, to_dict

    for bound, old in ((None, "maximal"), (500, "slots")):
        d = to_dict(make(max_records=bound))
        assert from_dict(d).resolved_pairing == ("balanced" if bound is None else "thinned")
        del d["params"]["pairing"]
        assert from_dict(d).resolved_pairing == old
