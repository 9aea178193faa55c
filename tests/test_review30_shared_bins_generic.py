"""Review 30 (issue 37): a Poisson-subsampled Gaussian law's bin masses, end values and tail
quantiles are bit-for-bit those of the generic path through its own public distribution
functions, and a subclass overriding one of its distribution functions is answered with
the override.

ws30-share makes ``PoissonSubsampledLossLaw``'s distribution functions the only copy of the
arithmetic that ``loss_law_sgm.SharedFunctions`` repeated (the shared-tail bin masses of a
Gaussian base) and merges the two lists of methods a law must keep for the fast paths.
Promise: bit-equal.  The reference here is independent of both fast paths:
``PrivacyLossLaw.bin_masses`` / ``_bins_and_ends`` (the base class's generic evaluation
through ``law.cdf_p(e[s])`` ... ``law.sf_q(e[s])``, element-wise, no shared columns) and
a fresh law's scalar ``quantile_bounds`` / ``spread`` (no batch).  Edge sets: a grid
straddling the support's end ``log(1 - q)``, edges with +-inf and duplicates, a grid wholly
outside the support; both directions.  A subclass overriding one private distribution
function (scaled by 1 -+ 1e-3: a different law) must see that override in its masses and
batched quantiles: the gates must send it down its own path.
Power (each on a main e1071f5 snapshot): the shared ``cdf_p`` (remove) computed as
``F - q F + q G`` instead of ``(1 - q) F + q G`` fails the bit-equality (2 cases);
``_sf_q_at`` dropped from the shared path's kept list fails the override case (2);
``_sf_p_at`` dropped from quantile_batch's kept list fails the batched-quantile case (2).
Under 1 CPU s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant.laws.loss_law import (
    GaussianLossLaw,
    PoissonSubsampledLossLaw,
    PrivacyLossLaw,
)
from dpacct.accountant.laws.quantile_batch import prefill_quantiles

LAWS = [(0.01, 1 / 1.1, "remove"), (0.01, 1 / 1.1, "add"), (0.37, 3.0, "remove"),
        (0.37, 3.0, "add"), (1e-6, 0.05, "remove"), (1 - 1e-9, 12.0, "add")]


def _edges(q: float, mu: float, direction: str) -> list[np.ndarray]:
    c = math.log1p(-q) if direction == "remove" else -math.log1p(-q)
    step = 1e-3
    k = round(c / step)
    straddle = np.arange(k - 700, k + 1300) * step
    rng = np.random.Generator(np.random.PCG64(30))
    special = np.sort(np.concatenate([[-np.inf, np.inf, c, c, -c, 0.0],
                                      rng.normal(0.0, 2 * mu + 0.5, 20)]))
    outside = np.sign(c) * (abs(c) + 40 * mu + 1.0 + 0.25 * np.arange(30))
    wide = np.arange(-3000, 3001) * (10 * mu / 3000)
    return [straddle, special, np.sort(outside), wide]


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x, float), np.asarray(y, float), equal_nan=True)
               for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("q, mu, direction", LAWS)
def test_masses_and_ends_equal_the_generic_path(q, mu, direction):
    law = PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, direction)
    for e in _edges(q, mu, direction):
        generic = PrivacyLossLaw.bin_masses(law, e)
        assert _same(law.bin_masses(e), generic), (q, mu, direction, e[:3])
        m, nq, ends = law._bins_and_ends(e)
        m0, nq0, ends0 = PrivacyLossLaw._bins_and_ends(law, e)
        assert _same((m, nq, ends), (m0, nq0, ends0)), (q, mu, direction, e[:3])


def _scaled(name: str, factor: float):
    def method(self, *args, **kwargs):
        return getattr(super(cls, self), name)(*args, **kwargs) * factor
    cls = type(f"Scaled{name}", (PoissonSubsampledLossLaw,), {name: method})
    return cls


@pytest.mark.parametrize("name, factor", [("_sf_q_at", 1 - 1e-3), ("_cdf_q_at", 1 - 1e-3),
                                          ("_sf_p_at", 1 - 1e-3), ("_cdf_p_at", 1 - 1e-3)])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_a_subclass_overriding_a_distribution_function_is_answered_with_it(name, factor, direction):
    q, mu = 0.01, 1 / 1.1
    law = _scaled(name, factor)(GaussianLossLaw(mu=mu), q, direction)
    plain = PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, direction)
    e = _edges(q, mu, direction)[3]
    got = law._bins_and_ends(e)
    assert _same(got, PrivacyLossLaw._bins_and_ends(law, e)), name
    assert not _same(got, plain._bins_and_ends(e)), name  # the override changes the law
    assert _same(law.bin_masses(e), PrivacyLossLaw.bin_masses(law, e)), name


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_batched_quantiles_read_an_overridden_tail(direction):
    q, mu, tails = 0.01, 1 / 1.1, (1e-12, 1e-6)
    cls = _scaled("_sf_p_at", 4.0)  # a heavier upper tail: a different upper quantile
    batch = cls(GaussianLossLaw(mu=mu), q, direction)
    prefill_quantiles([(batch, t) for t in tails], spread=[batch])
    for t in tails:
        alone = cls(GaussianLossLaw(mu=mu), q, direction)
        assert batch.quantile_bounds(t) == alone.quantile_bounds(t), t
        plain = PoissonSubsampledLossLaw(GaussianLossLaw(mu=mu), q, direction)
        assert alone.quantile_bounds(t)[1] != plain.quantile_bounds(t)[1], t
    for law_cls in (PoissonSubsampledLossLaw, cls):
        b = law_cls(GaussianLossLaw(mu=mu), q, direction)
        prefill_quantiles([(b, t) for t in tails], spread=[b])
        a = law_cls(GaussianLossLaw(mu=mu), q, direction)
        assert [b.quantile_bounds(t) for t in tails] == [a.quantile_bounds(t) for t in tails]
        assert b.spread() == a.spread()
