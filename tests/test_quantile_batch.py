"""Batched tail quantiles and spreads of subsampled-Gaussian laws
(:mod:`dpacct.accountant.laws.quantile_batch`, issue 37, session 28): bit-equal to each
law's own search, checked against 40-digit distribution functions, and the work a
schedule's ``delta`` hands to the batch.  Counts of work, never wall time."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.laws import loss_law, quantile_batch
from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
from dpacct.accountant.laws.quantile_batch import prefill_quantiles
from dpacct.accountant.pld import schedule as sched
from dpacct.accountant.transformers import compose
from dpacct.accountant.transformers.subsample import _GridSafeSubsampledLaw


def _laws(rng: np.random.Generator, n: int) -> list[tuple[float, float, str]]:
    sigma = np.exp(rng.uniform(math.log(0.3), math.log(30.0), n))
    q = np.exp(rng.uniform(math.log(1e-9), math.log(0.9), n))
    return [
        (float(s), float(r), str(d))
        for s, r, d in zip(sigma, q, rng.choice(["remove", "add"], n), strict=True)
    ]


def _make(params) -> list[_GridSafeSubsampledLaw]:
    return [_GridSafeSubsampledLaw(GaussianLossLaw(mu=1.0 / s), q, d) for s, q, d in params]


def test_the_batch_fills_every_memo_bit_equal_to_the_laws_own_searches():
    rng = np.random.default_rng(37)
    params = [*_laws(rng, 40), (0.3, 1e-9, "remove"), (30.0, 0.9, "add"), (1.0, 0.5, "remove")]
    tails = [[float(t) for t in 10.0 ** rng.uniform(-20, -3, 3)] for _ in params]
    batched, own = _make(params), _make(params)
    searches = prefill_quantiles(
        [(law, t) for law, ts in zip(batched, tails, strict=True) for t in ts], batched
    )
    assert searches == 2 * 4 * len(params)  # two sides of three tails and the spread
    for b, o, ts in zip(batched, own, tails, strict=True):
        for t in ts:
            assert t in b._quantile_memo  # filled by the batch, not searched again
            assert b.quantile_bounds(t) == o.quantile_bounds(t)
        assert "spread" in b._quantile_memo
        assert PoissonSubsampledLossLaw.spread(b) == PoissonSubsampledLossLaw.spread(o)
    # a second call finds every memo filled
    assert prefill_quantiles([(law, ts[0]) for law, ts in zip(batched, tails, strict=True)]) == 0


def _mp_cdf_p(sigma: float, q: float, direction: str, y: float) -> mp.mpf:
    """``P(L <= y)`` of the subsampled Gaussian pair at 40 digits (Zhu, Dong, Wang 2022,
    Theorem 11): the loss ``log(1 - q + q e^x)`` of the base loss ``x``, and its mirror."""
    with mp.workdps(40):
        mu, q, y = mp.mpf(1) / sigma, mp.mpf(q), mp.mpf(y)

        def phi(x, shift):
            return mp.ncdf((x - shift) / mu)

        if direction == "remove":  # P = (1-q) Q_base + q P_base, L = log(1-q+q e^x)
            inner = (mp.e**y - (1 - q)) / q
            if inner <= 0:
                return mp.mpf(0)
            x = mp.log(inner)
            return (1 - q) * phi(x, -(mu**2) / 2) + q * phi(x, mu**2 / 2)
        # add: L = -log(1-q+q e^{-x}) with x ~ N(mu^2/2, mu^2) under P
        inner = (mp.e ** (-y) - (1 - q)) / q
        if inner <= 0:
            return mp.mpf(1)
        return phi(-mp.log(inner), mu**2 / 2)


@pytest.mark.parametrize(
    "sigma, q, direction, tail",
    [(1.0, 1e-4, "remove", 1e-12), (0.7, 0.02, "add", 1e-9), (3.0, 0.3, "remove", 1e-6)],
)
def test_the_batched_lower_quantile_is_the_40_digit_boundary(sigma, q, direction, tail):
    (law,) = _make([(sigma, q, direction)])
    prefill_quantiles([(law, tail)])
    lo, _ = law._quantile_memo[tail]
    # at most the tail below lo, more than the tail just inside it (the search stops
    # at 1e-10 relative)
    assert _mp_cdf_p(sigma, q, direction, lo) <= tail
    inside = lo + 1e-8 * max(abs(lo), 1e-3)
    assert _mp_cdf_p(sigma, q, direction, inside) > tail


def test_laws_outside_the_family_are_left_to_their_own_search():
    whole = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0), 1.0, "remove")  # q = 1
    plain = GaussianLossLaw(mu=1.0)
    assert prefill_quantiles([(whole, 1e-9), (plain, 1e-9)], [whole, plain]) == 0
    assert "_quantile_memo" not in whole.__dict__ and "_quantile_memo" not in plain.__dict__


def test_a_law_that_overrides_a_loss_method_is_not_batched():
    """The batch reads the families' declarations
    (:func:`~dpacct.accountant.laws.quantile_batch.subsampled_gaussian_law`): a subclass
    of the subsampled law that overrides a distribution function, or a subsampling of a
    Gaussian law's subclass (which does not inherit ``closed_form == "gaussian"``), is
    left to its own search; the declared family and a subclass keeping every searched
    method are batched (issue 37, session 29)."""

    class ShiftedSubsampled(PoissonSubsampledLossLaw):
        def cdf_p(self, x):
            return super().cdf_p(np.asarray(x, dtype=float) - 0.1)

    class WiderGaussian(GaussianLossLaw):
        pass

    kept = _make([(1.1, 1e-3, "remove")])[0]  # _GridSafeSubsampledLaw keeps them all
    plain = PoissonSubsampledLossLaw(GaussianLossLaw(mu=1.0 / 1.1), 1e-3, "add")
    shifted = ShiftedSubsampled(GaussianLossLaw(mu=1.0 / 1.1), 1e-3, "remove")
    wider = PoissonSubsampledLossLaw(WiderGaussian(mu=1.0 / 1.1), 1e-3, "remove")
    assert quantile_batch.subsampled_gaussian_law(plain) == (1e-3, 1.0 / 1.1)
    assert quantile_batch.subsampled_gaussian_law(kept) == (1e-3, 1.0 / 1.1)
    for law in (shifted, wider):
        assert quantile_batch.subsampled_gaussian_law(law) is None
    assert prefill_quantiles([(law, 1e-9) for law in (shifted, wider)], [shifted, wider]) == 0
    assert "_quantile_memo" not in shifted.__dict__ and "_quantile_memo" not in wider.__dict__
    assert prefill_quantiles([(plain, 1e-9), (kept, 1e-9)], [plain, kept]) > 0


def test_a_chunked_schedule_delta_searches_through_the_batch_with_the_same_answer(monkeypatch):
    # 18 distinct small-q steps: two chunks of the schedule engine (CHUNK = 16)
    phases = [(1.000123 + 0.01 * t, 1e-4 * (1 + t % 5), 1) for t in range(18)]
    calls = {"scalar": 0, "batched": 0}
    scalar, batched = loss_law._boundary, quantile_batch._boundaries

    def counted_scalar(pred):
        calls["scalar"] += 1
        return scalar(pred)

    def counted_batched(pred, n):
        calls["batched"] += n
        return batched(pred, n)

    monkeypatch.setattr(loss_law, "_boundary", counted_scalar)
    monkeypatch.setattr(quantile_batch, "_boundaries", counted_batched)
    sched._cell_mechanism.cache_clear()
    first = sched.schedule_mechanism(phases, progress=False).delta(0.5)
    # every search of the pessimistic passes went through the batch: two laws a step,
    # each with two sides of the spread, the range, the bulk and two passes' tails
    assert calls == {"scalar": 0, "batched": 2 * len(phases) * 2 * 5}
    # the same answer, bit for bit, with the batch switched off (each law searches)
    monkeypatch.setattr(sched, "prefill_quantiles", lambda *a, **k: 0)
    monkeypatch.setattr(compose, "prefill_quantiles", lambda *a, **k: 0)
    calls.update(scalar=0, batched=0)
    sched._cell_mechanism.cache_clear()  # fresh parts: fresh laws, nothing memoised
    alone = sched.schedule_mechanism(phases, progress=False).delta(0.5)
    assert calls == {"scalar": 2 * len(phases) * 2 * 5, "batched": 0}
    assert alone == first
