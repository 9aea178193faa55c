"""Bin masses of a subsampled Gaussian law with shared normal tails
(:mod:`dpacct.accountant.laws.loss_law_sgm`, issue 37, session 29): bit-equal to the
law's own four distribution functions, checked against 40-digit ``mpmath``, and the work
a grid discretisation does (``ndtr`` points, scalar calls).  Counts, never wall time."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.laws import loss_law, loss_law_sgm
from dpacct.accountant.laws.loss_law import (
    GaussianLossLaw,
    PoissonSubsampledLossLaw,
    PrivacyLossLaw,
)
from dpacct.accountant.numerics import _log_expm1
from dpacct.accountant.pld import grid
from dpacct.accountant.transformers.subsample import _GridSafeSubsampledLaw


def _own(law: PoissonSubsampledLossLaw, e: np.ndarray):
    """The law's own evaluation, one function at a time (the code before the sharing,
    still the path of laws outside the family)."""
    cls = PoissonSubsampledLossLaw
    saved = cls.__dict__["_shared_gaussian"]
    cls._shared_gaussian = lambda self: False
    try:
        m, nq = law.bin_masses(e)
    finally:
        cls._shared_gaussian = saved
    one = lambda f, v: float(f(np.array([v]))[0])  # noqa: E731
    ends = (one(law.cdf_p, e[0]), one(law.cdf_q, e[0]), one(law.sf_p, e[-1]),
            one(law.sf_q, e[-1]))
    return m, nq, ends


def _edges(rng: np.random.Generator, law: PoissonSubsampledLossLaw) -> np.ndarray:
    lo, hi = law.quantile_bounds(float(10.0 ** rng.uniform(-20, -3)))
    step = (hi - lo) / int(rng.integers(3, 1500))
    a = math.floor((lo - rng.uniform(0, 3) * (hi - lo)) / step)
    b = math.ceil((hi + rng.uniform(0, 3) * (hi - lo)) / step)
    return np.arange(a, b + 1, dtype=float) * step


def test_shared_tails_are_bit_equal_to_the_laws_own_functions():
    rng = np.random.default_rng(29)
    cases = 0
    for i in range(40):
        mu = float(np.exp(rng.uniform(math.log(0.05), math.log(20.0))))
        q = float(np.exp(rng.uniform(math.log(1e-9), math.log(0.99))))
        law = _GridSafeSubsampledLaw(GaussianLossLaw(mu), q, ("remove", "add")[i % 2])
        e = _edges(rng, law)
        if i % 5 == 0:  # the infinite edges, and losses beyond log_expm1's switch at 30
            e = np.concatenate(([-np.inf], e, [40.0, 80.0, np.inf]))
        assert law._shared_gaussian()
        m, nq, ends = law._bins_and_ends(e)
        m0, nq0, ends0 = _own(law, e)
        assert m.tobytes() == m0.tobytes() and nq.tobytes() == nq0.tobytes()
        assert np.array(ends).tobytes() == np.array(ends0).tobytes()
        mb, nqb = law.bin_masses(e)
        assert mb.tobytes() == m0.tobytes() and nqb.tobytes() == nq0.tobytes()
        cases += 1
    assert cases == 40


def test_the_preimage_shortcut_is_log_expm1_bit_for_bit():
    d = np.concatenate(([0.0, 1e-300, 1e-12, 0.5, 1.0, 29.999, 30.0], np.geomspace(1e-9, 29, 500)))
    assert loss_law._log_expm1_30(d).tobytes() == _log_expm1(d, 30.0).tobytes()
    d = np.concatenate((d, [30.5, 700.0, np.inf]))  # the other branch taken somewhere
    assert loss_law._log_expm1_30(d).tobytes() == _log_expm1(d, 30.0).tobytes()


def _mp_functions(mu: float, q: float, direction: str):
    """40-digit ``P(L <= y)``, ``P(L > y)``, ``Q(L <= y)``, ``Q(L > y)`` of the subsampled
    Gaussian pair, from the mixture (Mironov, Talwar & Zhang 2019, Sec. 3), not the code:
    remove ``((1-q) N(0,1) + q N(mu,1), N(0,1))``, add the pair swapped, whose loss at an
    output ``t`` is ``log(1 - q + q e^{mu t - mu^2/2})`` resp. its negative."""
    mp.mp.dps = 40
    mu_, q_ = mp.mpf(mu), mp.mpf(q)
    phi = lambda z: mp.ncdf(z)  # noqa: E731

    def threshold(y):  # the output t where the (increasing) remove loss equals y
        v = (mp.exp(y) - (1 - q_)) / q_
        return None if v <= 0 else (mp.log(v) + mu_**2 / 2) / mu_

    def remove(y):
        t = threshold(y)
        if t is None:
            return mp.mpf(0), mp.mpf(1), mp.mpf(0), mp.mpf(1)
        cp = (1 - q_) * phi(t) + q_ * phi(t - mu_)
        sp = (1 - q_) * phi(-t) + q_ * phi(mu_ - t)
        return cp, sp, phi(t), phi(-t)

    def add(y):  # loss -log(1 - q + q e^{mu t - mu^2/2}) decreases in t; P = N(0,1)
        t = threshold(-y)
        if t is None:
            return mp.mpf(1), mp.mpf(0), mp.mpf(1), mp.mpf(0)
        cp, sp = phi(-t), phi(t)
        cq = (1 - q_) * phi(-t) + q_ * phi(mu_ - t)
        sq = (1 - q_) * phi(t) + q_ * phi(t - mu_)
        return cp, sp, cq, sq

    return remove if direction == "remove" else add


@pytest.mark.parametrize(
    "mu, q, direction", [(1.0, 1e-4, "remove"), (0.7, 5e-4, "add"), (3.0, 0.2, "remove")]
)
def test_shared_bin_masses_match_40_digit_mixtures(mu, q, direction):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu), q, direction)
    lo, hi = law.quantile_bounds(1e-12)
    e = np.linspace(lo, hi, 25)
    m, nq, ends = law._bins_and_ends(e)
    f = _mp_functions(mu, q, direction)
    vals = [f(mp.mpf(float(y))) for y in e]
    # the edge y enters as ``y - log(1-q)`` (the law's preimage, unchanged code), which
    # rounds by a few ulps of the larger: the exact functions may move by the density
    # times that much
    shift = [8 * math.ulp(max(abs(float(y)), -math.log1p(-q))) for y in e]
    h = mp.mpf("1e-15")  # central differences: the density to ~1e-10, ample here
    up, down = ([f(mp.mpf(float(y)) + sgn * h) for y in e] for sgn in (1, -1))
    slope = [[abs(a - b) / (2 * h) for a, b in zip(u, d, strict=True)]
             for u, d in zip(up, down, strict=True)]
    for j in range(e.size - 1):
        for got, col in ((m[j], 0), (nq[j], 2)):
            c0, c1 = vals[j][col], vals[j + 1][col]
            s0 = vals[j][col + 1]
            exact = c1 - c0
            # a difference of cdfs (left) or survival functions (right), each to a few
            # ulps of the smaller one, plus the edges' rounding
            moved = slope[j][col] * shift[j] + slope[j + 1][col] * shift[j + 1]
            assert abs(mp.mpf(float(got)) - exact) <= 1e-11 * min(c1, s0) + moved, (j, col)
    cp0, _, cq0, _ = vals[0]
    _, sp1, _, sq1 = vals[-1]
    moved = (slope[0][0] * shift[0], slope[0][2] * shift[0], slope[-1][1] * shift[-1],
             slope[-1][3] * shift[-1])
    for got, exact, mv in zip(ends, (cp0, cq0, sp1, sq1), moved, strict=True):
        assert abs(mp.mpf(got) - exact) <= 1e-12 * exact + mv + 1e-300


def test_a_grid_discretisation_shares_its_normal_tails_and_calls_no_scalar_function(
    monkeypatch,
):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(1.0), 3e-4, "remove")
    lo, hi = law.quantile_bounds(1e-14)
    step = (hi - lo) / 4000
    seen: list[loss_law_sgm._Columns] = []
    scalar_calls = []
    real = loss_law_sgm._Columns.__init__

    def spy(self, x, mu):
        real(self, x, mu)
        seen.append(self)

    monkeypatch.setattr(loss_law_sgm._Columns, "__init__", spy)
    for name in ("cdf_p", "sf_p", "cdf_q", "sf_q"):
        f = getattr(PoissonSubsampledLossLaw, name)
        monkeypatch.setattr(
            PoissonSubsampledLossLaw, name,
            lambda self, y, f=f: scalar_calls.append(1) or f(self, y),
        )
    bins = grid._bins_from_law(law, step, lo, hi)
    n = bins.m.size + 1
    assert len(seen) == 1 and not scalar_calls
    assert set(seen[0].cols) <= {"cdf_p", "cdf_q", "sf_p", "sf_q"}
    monkeypatch.undo()
    # the law's own code on the same edges, its ndtr points counted
    counted = [0]

    class Counting:
        @staticmethod
        def ndtr(z):
            counted[0] += np.size(z)
            return loss_law_sgm.special.ndtr(z)

    monkeypatch.setattr(loss_law, "special", Counting)
    m0, _, ends0 = _own(law, np.arange(bins.first, bins.first + n, dtype=float) * step)
    # the P and Q cdfs share Phi((x+h)/mu): two tails at every edge instead of three
    assert n <= seen[0].evaluated <= 2 * counted[0] // 3 + 8
    assert bins.m.tobytes() == m0.tobytes()
    assert (bins.bottom[0], bins.top[0]) == (ends0[0], ends0[2])


def test_laws_outside_the_family_keep_their_own_evaluation():
    e = np.linspace(-1.0, 1.0, 9)
    assert not PoissonSubsampledLossLaw(GaussianLossLaw(1.0), 1.0, "remove")._shared_gaussian()

    class Shifted(PoissonSubsampledLossLaw):
        def cdf_p(self, y):
            return super().cdf_p(y)

    assert not Shifted(GaussianLossLaw(1.0), 0.1, "remove")._shared_gaussian()
    law = PoissonSubsampledLossLaw(GaussianLossLaw(1.0), 0.1, "add")
    m, nq, ends = PrivacyLossLaw._bins_and_ends(law, e)
    m1, nq1, ends1 = law._bins_and_ends(e)
    assert m.tobytes() == m1.tobytes() and nq.tobytes() == nq1.tobytes() and ends == ends1


def test_the_shared_columns_are_the_gaussian_base_laws_own_functions():
    # the premise of the shared path: each column entry is the base law's own value
    rng = np.random.default_rng(30)
    for mu in (0.07, 1.0, 9.0):
        x = np.concatenate(([-np.inf, -1e300, 0.0, 1e300, np.inf], rng.normal(0, 3 * mu, 300)))
        c, base = loss_law_sgm._Columns(x, mu), GaussianLossLaw(mu)
        for name in ("cdf_p", "sf_p", "cdf_q", "sf_q"):
            got = np.concatenate([c.get(name, slice(0, 100)), c.get(name, slice(100, None))])
            assert got.tobytes() == getattr(base, name)(x).tobytes()


@pytest.mark.parametrize("name", loss_law_sgm.KEPT)
def test_one_kept_list_gates_both_the_shared_bins_and_the_batched_searches(name):
    """Overriding any method of ``KEPT`` (even with the same behaviour) takes a law off
    both subsampled-Gaussian paths; ``_GridSafeSubsampledLaw`` (``spread`` only) keeps both."""
    from dpacct.accountant.laws.quantile_batch import subsampled_gaussian_law

    def same(self, *args, **kwargs):
        return getattr(super(type(self), self), name)(*args, **kwargs)

    cls = type("Overrides", (PoissonSubsampledLossLaw,), {name: same})
    law = cls(GaussianLossLaw(1.0), 0.01, "remove")
    assert not law._shared_gaussian() and subsampled_gaussian_law(law) is None
    kept = _GridSafeSubsampledLaw(GaussianLossLaw(1.0), 0.01, "remove")
    assert kept._shared_gaussian() and subsampled_gaussian_law(kept) == (0.01, 1.0)
    # the law's own (unshared) path gives what the shared path gives
    e = np.linspace(*kept.quantile_bounds(1e-9), 50)
    m, nq, ends = law._bins_and_ends(e)
    m1, nq1, ends1 = kept._bins_and_ends(e)
    assert m.tobytes() == m1.tobytes() and nq.tobytes() == nq1.tobytes() and ends == ends1
