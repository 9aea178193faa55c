"""One source of truth for noise: the releases an algorithm makes are the ones it claims.

Two kinds of test.

* **Recording.**  Every primitive's ``release`` is wrapped (monkeypatched on its class)
  to record ``(mechanism object, sensitivity, size)`` and then delegate.  Each algorithm
  runs on data, and the recorded releases must be exactly its privacy claim: the same
  mechanism *objects* as ``alg.primitives()`` with the same counts, sensitivities equal
  to the values derived here from the algorithm's declared bounds (not read from the
  algorithm), noise scales ``parameter * sensitivity`` equal to the noise the
  algorithm documents, and ``compose`` of what was recorded equal to ``alg.epsilon``.
* **Empirical.**  The primitives' noise against independent values: sample std
  against ``sigma * sensitivity`` (chi-square interval), mean absolute deviation against
  ``b * sensitivity`` (the sum of ``|Lap|`` is a Gamma variable), randomized-response
  keep frequency against ``p`` (exact binomial bounds), exponential-mechanism
  frequencies against the softmax computed here (chi-square), the exact discrete
  samplers against pmfs summed here term by term.  Seeds are fixed; each bound is a
  two-sided test at level 1e-4 or smaller.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from dpacct.accountant import compose
from dpacct.mechanisms import (
    DPSGD,
    SSP,
    AdaSSP,
    CategoricalColumn,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    DPTheilSen,
    ExponentialMechanism,
    ExponentialQuantile,
    GaussianMechanism,
    HistogramQuantiles,
    LaplaceMechanism,
    MarginalSynthesizer,
    NoisyGD,
    RandomizedResponse,
    ReleaseSession,
    TreeQuantiles,
)
from dpacct.mechanisms.algorithms.algorithm import Algorithm
from dpacct.mechanisms.primitives.discrete import _bernoulli_exp

PRIMITIVES = (
    GaussianMechanism,
    LaplaceMechanism,
    DiscreteLaplaceMechanism,
    DiscreteGaussianMechanism,
    RandomizedResponse,
    ExponentialMechanism,
)
DELTA = 1e-6
LEVEL = 1e-4  # two-sided level of every empirical bound


@dataclass
class Record:
    mechanism: object
    sensitivity: float | None
    size: int


@pytest.fixture
def recorder(monkeypatch):
    """Wrap every primitive's release; return the list of records it fills.

    A :meth:`ReleaseSession.release_many` call of ``k`` rows is ``k`` releases: the
    primitive's one call on the stacked rows is recorded as ``k`` records of a row each.
    """
    log: list[Record] = []
    batch: list[int] = []
    for cls in PRIMITIVES:
        real = cls.release

        def spy(self, value, *args, _real=real, **kwargs):
            k = batch[-1] if batch else 1
            size = int(np.size(value)) // k
            log.extend(Record(self, kwargs.get("sensitivity"), size) for _ in range(k))
            return _real(self, value, *args, **kwargs)

        monkeypatch.setattr(cls, "release", spy)
    real_many = ReleaseSession.release_many

    def many_spy(self, label, values):
        batch.append(len(values))
        try:
            return real_many(self, label, values)
        finally:
            batch.pop()

    monkeypatch.setattr(ReleaseSession, "release_many", many_spy)
    return log


def check_claim(alg: Algorithm, log: list[Record], sensitivities: list[float],
                counts: list[int]) -> dict[int, list[Record]]:
    """The recorded releases are exactly ``alg``'s claim; returns them by plan line.

    ``sensitivities`` and ``counts`` (one per line of the claim, in order) are derived
    by the caller from the algorithm's parameters.
    """
    mechanisms, claimed_counts = alg.primitives()
    assert claimed_counts == counts
    by_line: dict[int, list[Record]] = {i: [] for i in range(len(mechanisms))}
    for rec in log:
        # the recorded object is one of the claim's objects (a subsampled line releases
        # through its base), never a copy built elsewhere
        owners = [i for i, m in enumerate(mechanisms)
                  if rec.mechanism is m or rec.mechanism is getattr(m, "base", None)]
        assert len(owners) == 1, f"release by {rec.mechanism!r} is not in the claim"
        by_line[owners[0]].append(rec)
    for i, recs in by_line.items():
        assert len(recs) == counts[i], (i, len(recs), counts[i])
        for rec in recs:
            if sensitivities[i] is None:
                assert rec.sensitivity is None
            else:
                assert rec.sensitivity == pytest.approx(sensitivities[i], rel=1e-12)
    # the privacy of what was released, composed here, is the algorithm's answer
    recorded = Counter(id(r.mechanism) for r in log)
    objects = {id(r.mechanism): r.mechanism for r in log}
    if all(getattr(m, "base", None) is None for m in mechanisms):
        run = compose([objects[k] for k in recorded], counts=list(recorded.values()))
        assert run.epsilon(DELTA) == pytest.approx(alg.epsilon(DELTA), rel=1e-9)
    return by_line


def regression_data(seed: int, n: int = 400, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.linspace(1.0, -1.0, d) + 0.1 * rng.normal(size=n), -1.0, 1.0)
    return X, y


# ----------------------------------------------------------------------------------
# recording: every algorithm
# ----------------------------------------------------------------------------------
def test_noisy_gd_with_clipping(recorder):
    X, y = regression_data(0)
    alg = NoisyGD(sigma=3.0, iterations=7, loss="linear", clip=0.5)
    alg.fit(X, y, rng=np.random.default_rng(1))
    lines = check_claim(alg, recorder, sensitivities=[0.5], counts=[7])
    assert all(r.size == 4 for r in lines[0])  # 3 coefficients and the intercept
    assert lines[0][0].mechanism.sigma * 0.5 == alg.noise_std


def test_noisy_gd_with_declared_bounds(recorder):
    X, y = regression_data(1)
    alg = NoisyGD(sigma=2.0, iterations=5, loss="linear", x_bound=1.0, y_bound=1.0,
                  theta_bound=2.0)
    alg.fit(X, y, rng=np.random.default_rng(2))
    b = math.sqrt(1.0**2 + 1.0)  # rows (x, 1) with ||x|| <= 1
    check_claim(alg, recorder, sensitivities=[b * (2.0 * b + 1.0)], counts=[5])


def test_noisy_gd_logistic(recorder):
    X, y = regression_data(2)
    alg = NoisyGD(sigma=2.0, iterations=4, loss="logistic", x_bound=1.0,
                  fit_intercept=False)
    alg.fit(X, (y > 0).astype(float), rng=np.random.default_rng(3))
    check_claim(alg, recorder, sensitivities=[1.0], counts=[4])


def test_dp_sgd(recorder, monkeypatch):
    masks = []
    real = ReleaseSession.poisson_sample

    def spy(self, label, n):
        out = real(self, label, n)
        masks.append(out)
        return out

    monkeypatch.setattr(ReleaseSession, "poisson_sample", spy)
    X, y = regression_data(3, n=2000)
    alg = DPSGD(sigma=1.5, sample_rate=0.05, steps=40, loss="linear", clip=0.7)
    fit = alg.fit(X, y, rng=np.random.default_rng(4))
    lines = check_claim(alg, recorder, sensitivities=[0.7], counts=[40])
    assert lines[0][0].mechanism == GaussianMechanism(sigma=1.5)
    # every step sampled the records at the claimed rate: 80 000 Bernoulli(0.05) draws
    taken = int(np.sum([m.sum() for m in masks]))
    n_draws = sum(m.size for m in masks)
    assert len(masks) == 40 and n_draws == 80_000
    assert stats.binomtest(taken, n_draws, 0.05).pvalue > LEVEL
    # the ledger holds the claim's own step mechanism, once per step
    assert fit.accountant.entries == ((alg.step_mechanism, 40),)
    assert alg.step_mechanism is alg.primitives()[0][0]


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_ssp(recorder, fit_intercept):
    X, y = regression_data(4)
    alg = SSP(noise_scale=0.3, x_bound=1.0, y_bound=1.0, ratios=(2.0, 1.0),
              fit_intercept=fit_intercept, intercept_scaling=0.5)
    alg.fit(X, y, rng=np.random.default_rng(5))
    b = math.hypot(1.0, 0.5) if fit_intercept else 1.0
    lines = check_claim(alg, recorder, sensitivities=[b * b, b * 1.0], counts=[1, 1])
    d = 3 + fit_intercept
    assert [lines[0][0].size, lines[1][0].size] == [d * (d + 1) // 2, d]
    # noise std = multiplier * sensitivity = ratio * noise_scale (the documented stds)
    for line, std in zip(lines.values(), (0.6, 0.3), strict=True):
        rec = line[0]
        assert rec.mechanism.sigma * rec.sensitivity == pytest.approx(std, rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_adassp(recorder, fit_intercept):
    """The default fits an intercept: the constant column 1 makes every row's norm at most
    sqrt(1^2 + 1^2), so the releases' sensitivities are 2, 2 and 2 sqrt(2) (y_bound 2)
    and the released X^T X has the 4 x 4 upper triangle (10 entries)."""
    X, y = regression_data(5)
    alg = AdaSSP(noise_scale=0.5, x_bound=1.0, y_bound=2.0, fit_intercept=fit_intercept)
    assert AdaSSP(noise_scale=0.5, x_bound=1.0, y_bound=2.0).fit_intercept is True
    alg.fit(X, y, rng=np.random.default_rng(6))
    b2 = 2.0 if fit_intercept else 1.0          # ||(x, 1)||^2 <= 1 + 1
    lines = check_claim(alg, recorder, sensitivities=[b2, b2, 2.0 * math.sqrt(b2)],
                        counts=[1, 1, 1])
    sizes = [1, 10, 4] if fit_intercept else [1, 6, 3]
    assert [lines[i][0].size for i in range(3)] == sizes


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("how", ["fit", "fit_counts"])
def test_marginal_synthesizer(recorder, noise, how):
    cols = [CategoricalColumn("a", [0, 1]), CategoricalColumn("b", [0, 1, 2]),
            CategoricalColumn("c", [0, 1])]
    alg = MarginalSynthesizer(cols, marginals="2-way", noise=noise, scale=4.0,
                              count_scale=9.0)
    rng = np.random.default_rng(7)
    data = {"a": rng.integers(0, 2, 300), "b": rng.integers(0, 3, 300),
            "c": rng.integers(0, 2, 300)}
    if how == "fit":
        alg.fit(data, rng=rng)
    else:
        counts = np.zeros((2, 3, 2))
        np.add.at(counts, (data["a"], data["b"], data["c"]), 1)
        alg.fit_counts(counts, rng=rng)
    lines = check_claim(alg, recorder, sensitivities=[1.0, 1.0], counts=[3, 1])
    assert sorted(r.size for r in lines[0]) == [4, 6, 6]  # ac (2x2), ab and bc (2x3)
    assert lines[1][0].size == 1
    kind = LaplaceMechanism if noise == "laplace" else GaussianMechanism
    assert isinstance(lines[0][0].mechanism, kind)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_histogram_quantiles(recorder, noise):
    alg = HistogramQuantiles(lower=0.0, upper=1.0, bins=32, scale=2.0, noise=noise)
    alg.quantiles(np.random.default_rng(8).uniform(size=500), [0.25, 0.5],
                  rng=np.random.default_rng(9))
    lines = check_claim(alg, recorder, sensitivities=[1.0], counts=[1])
    assert lines[0][0].size == 32


@pytest.mark.parametrize("measure_root", [False, True])
def test_tree_quantiles(recorder, measure_root):
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=27, branching=3, scale=2.0,
                        measure_root=measure_root)
    alg.quantiles(np.random.default_rng(10).uniform(size=500), [0.5],
                  rng=np.random.default_rng(11))
    depth = 4 if measure_root else 3
    lines = check_claim(alg, recorder, sensitivities=[1.0], counts=[depth])
    sizes = [1, 3, 9, 27] if measure_root else [3, 9, 27]
    assert [r.size for r in lines[0]] == sizes


@pytest.mark.parametrize("candidates", ["intervals", "grid"])
def test_exponential_quantile(recorder, candidates):
    alg = ExponentialQuantile(epsilon0=0.8, lower=-5.0, upper=5.0, candidates=candidates,
                              grid_size=64)
    alg.quantile(np.random.default_rng(12).normal(size=101), 0.5,
                 rng=np.random.default_rng(13))
    lines = check_claim(alg, recorder, sensitivities=[1.0], counts=[1])
    assert lines[0][0].size == (102 if candidates == "intervals" else 64)


@pytest.mark.parametrize("split", [0.5, 0.3])
def test_dp_theil_sen(recorder, split):
    rng = np.random.default_rng(14)
    x = rng.uniform(0, 1, 201)
    y = 2 * x + rng.normal(0, 0.1, 201)
    alg = DPTheilSen(epsilon=2.0, x_lower=0, x_upper=1, pred_lower=-5, pred_upper=5, k=6,
                     split=split)
    alg.fit(x, y, rng=rng)
    # the default pairing without a bound is balanced: (k + ceil(k / 2)) / 2 = 4.5
    lines = check_claim(alg, recorder, sensitivities=[4.5, 4.5], counts=[1, 1])
    eps = [r[0].mechanism.epsilon0 for r in lines.values()]
    assert eps == pytest.approx([2.0 * split, 2.0 * (1 - split)], rel=1e-12)


# ----------------------------------------------------------------------------------
# input validation of the releases
# ----------------------------------------------------------------------------------
CONTINUOUS = [GaussianMechanism(sigma=1.0), LaplaceMechanism(b=1.0)]


@pytest.mark.parametrize("mech", CONTINUOUS, ids=repr)
def test_continuous_release_validation(mech):
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        mech.release(1.0, rng=0)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        mech.release(1.0, rng=np.random.RandomState(0))
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="sensitivity must lie in"):
            mech.release(1.0, sensitivity=bad, rng=rng)
    with pytest.raises(TypeError, match="sensitivity must be a real number"):
        mech.release(1.0, sensitivity="1", rng=rng)
    for bad in ([1.0, math.nan], math.inf):
        with pytest.raises(ValueError, match="value must contain only finite numbers"):
            mech.release(bad, rng=rng)
    with pytest.raises(TypeError, match="value must be a real number"):
        mech.release("1.0", rng=rng)
    # shapes and types are kept
    assert isinstance(mech.release(1, rng=rng), float)
    assert mech.release(np.zeros((2, 3), dtype=int), rng=rng).shape == (2, 3)


def test_discrete_release_validation():
    rng = np.random.default_rng(0)
    dlap, dgauss = DiscreteLaplaceMechanism(scale=1.0), DiscreteGaussianMechanism(sigma=1.0)
    for mech in (dlap, dgauss):
        with pytest.raises(ValueError, match=r"value must contain only integers, got 0\.5"):
            mech.release([1, 0.5], rng=rng)
        with pytest.raises(ValueError, match="sensitivity must be a positive integer"):
            mech.release(1, sensitivity=1.5, rng=rng)
        with pytest.raises(ValueError, match="sensitivity must be a positive integer"):
            mech.release(1, sensitivity=0, rng=rng)
        with pytest.raises(TypeError, match="rng"):
            mech.release(1, rng=None)
        assert isinstance(mech.release(3, rng=rng), int)
        assert mech.release(np.arange(6).reshape(2, 3), rng=rng).dtype == np.int64
    with pytest.raises(ValueError, match="sensitivity must be 1 for the discrete Gaussian"):
        dgauss.release(1, sensitivity=2, rng=rng)


def test_randomized_response_release_validation():
    rng = np.random.default_rng(0)
    rr = RandomizedResponse(p=0.6, k=3)
    with pytest.raises(ValueError, match=r"true_category must contain integers in \{0, ..., 2\}"):
        rr.release([0, 3], rng=rng)
    with pytest.raises(ValueError, match="true_category must contain only integers"):
        rr.release(1.5, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        rr.release(1, rng=1)
    assert isinstance(rr.release(2, rng=rng), int)


def test_exponential_release_validation():
    rng = np.random.default_rng(0)
    em = ExponentialMechanism(epsilon=1.0)
    with pytest.raises(ValueError, match="scores must be a non-empty 1-D array"):
        em.release([], sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="scores must contain only finite numbers"):
        em.release([0.0, math.nan], sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="sensitivity must lie in"):
        em.release([0.0], sensitivity=0.0, rng=rng)
    with pytest.raises(ValueError, match="edges must have len"):
        em.release([0.0, 1.0], sensitivity=1.0, rng=rng, edges=[0.0, 1.0])
    with pytest.raises(ValueError, match="non-decreasing"):
        em.release([0.0, 1.0], sensitivity=1.0, rng=rng, edges=[0.0, 2.0, 1.0])
    with pytest.raises(TypeError, match="rng"):
        em.release([0.0], sensitivity=1.0, rng="rng")


# ----------------------------------------------------------------------------------
# empirical checks against independent values
# ----------------------------------------------------------------------------------
def test_gaussian_noise_std_is_sigma_times_sensitivity():
    n, sigma, sens = 200_000, 1.7, 0.6
    noisy = GaussianMechanism(sigma=sigma).release(np.full(n, 5.0), sensitivity=sens,
                                                   rng=np.random.default_rng(20))
    z = noisy - 5.0
    s2 = float(np.sum((z - z.mean()) ** 2))
    target = (sigma * sens) ** 2
    # (n - 1) s^2 / sigma^2 ~ chi^2(n - 1): two-sided interval for the variance
    lo = s2 / stats.chi2.ppf(1 - LEVEL / 2, n - 1)
    hi = s2 / stats.chi2.ppf(LEVEL / 2, n - 1)
    assert lo <= target <= hi
    assert abs(z.mean()) < stats.norm.ppf(1 - LEVEL / 2) * sigma * sens / math.sqrt(n)


def test_laplace_mean_absolute_deviation_is_b_times_sensitivity():
    n, b, sens = 200_000, 2.5, 0.4
    noisy = LaplaceMechanism(b=b).release(np.zeros(n), sensitivity=sens,
                                          rng=np.random.default_rng(21))
    # |Lap(0, s)| is exponential with mean s, so sum |z_i| ~ Gamma(n, scale=s)
    total = float(np.abs(noisy).sum())
    s = b * sens
    assert stats.gamma.ppf(LEVEL / 2, n, scale=s) <= total
    assert total <= stats.gamma.ppf(1 - LEVEL / 2, n, scale=s)
    # symmetric: the signs are fair coins
    assert stats.binomtest(int((noisy > 0).sum()), n, 0.5).pvalue > LEVEL


@pytest.mark.parametrize(("p", "k"), [(0.75, 2), (0.4, 5), (0.9, 3)])
def test_randomized_response_keep_frequency_is_p(p, k):
    n = 100_000
    truth = np.random.default_rng(22).integers(0, k, n)
    answers = RandomizedResponse(p=p, k=k).release(truth, rng=np.random.default_rng(23))
    kept = int((answers == truth).sum())
    assert stats.binomtest(kept, n, p).pvalue > LEVEL
    # a lie is uniform over the k - 1 other values: offset (answer - truth) mod k
    lies = (answers[answers != truth] - truth[answers != truth]) % k
    if k > 2:
        observed = np.bincount(lies, minlength=k)[1:]
        assert stats.chisquare(observed).pvalue > LEVEL
    else:
        assert set(np.unique(lies)) == {1}


def _softmax(x: np.ndarray) -> np.ndarray:
    w = np.exp(x - x.max())
    return w / w.sum()


def test_exponential_mechanism_frequencies_are_the_softmax():
    eps, sens = 1.3, 0.7
    scores = np.array([0.0, 1.0, 2.5, -1.0, 2.0])
    probs = _softmax(eps * scores / (2 * sens))  # McSherry & Talwar's exponent
    em = ExponentialMechanism(epsilon=eps)
    rng = np.random.default_rng(24)
    n = 40_000
    picks = np.array([em.release(scores, sensitivity=sens, rng=rng) for _ in range(n)])
    observed = np.bincount(picks, minlength=scores.size)
    assert stats.chisquare(observed, probs * n).pvalue > LEVEL
    # the plain (pure-DP) analysis accounts the same sampler
    plain = ExponentialMechanism(epsilon=eps, bounded_range=False)
    picks = np.array([plain.release(scores, sensitivity=sens, rng=rng) for _ in range(n)])
    assert stats.chisquare(np.bincount(picks, minlength=5), probs * n).pvalue > LEVEL


def test_exponential_mechanism_is_stable_for_large_scores():
    # exponent eps / (2 Delta) = 1; exp(1e4) overflows, the shifted logits do not
    em = ExponentialMechanism(epsilon=2.0)
    rng = np.random.default_rng(25)
    n = 20_000
    picks = np.array([em.release([1e4, 1e4 + math.log(3.0)], sensitivity=1.0, rng=rng)
                      for _ in range(n)])
    assert stats.binomtest(int(picks.sum()), n, 0.75).pvalue > LEVEL
    assert em.release([-1e300, 0.0], sensitivity=1.0, rng=rng) == 1


def test_continuous_exponential_mechanism_density():
    # pieces [0, 1], [1, 3], [3, 3] (empty), [3, 7]; exponent 1
    em = ExponentialMechanism(epsilon=2.0)
    edges = np.array([0.0, 1.0, 3.0, 3.0, 7.0])
    scores = np.array([0.0, -1.0, 5.0, -2.0])
    lengths = np.diff(edges)
    probs = lengths * np.exp(scores)
    probs /= probs.sum()
    rng = np.random.default_rng(26)
    n = 30_000
    y = np.array([em.release(scores, sensitivity=1.0, rng=rng, edges=edges) for _ in range(n)])
    observed = np.histogram(y, bins=[0.0, 1.0, 3.0, 7.0])[0]
    assert stats.chisquare(observed, probs[[0, 1, 3]] * n).pvalue > LEVEL
    # uniform inside a piece
    inside = y[y > 3.0]
    assert stats.kstest((inside - 3.0) / 4.0, "uniform").pvalue > LEVEL


@pytest.mark.parametrize("gamma", [0.0, 0.3, 1.0, 2.7])
def test_bernoulli_exp_coin(gamma):
    frac = (round(gamma * 10), 10)
    rng = np.random.default_rng(27)
    n = 20_000
    heads = sum(_bernoulli_exp(rng, *frac) for _ in range(n))
    if gamma == 0.0:
        assert heads == n
    else:
        assert stats.binomtest(heads, n, math.exp(-gamma)).pvalue > LEVEL


def _chi_square_pmf(samples: np.ndarray, pmf, cut: int) -> float:
    """p-value of the samples against ``pmf`` on ``-cut..cut`` with pooled tails."""
    xs = np.arange(-cut, cut + 1)
    probs = np.array([pmf(int(x)) for x in xs])
    observed = np.array([(samples == x).sum() for x in xs], dtype=float)
    probs = np.append(probs, 1.0 - probs.sum())
    observed = np.append(observed, (np.abs(samples) > cut).sum())
    return float(stats.chisquare(observed, probs * samples.size).pvalue)


@pytest.mark.parametrize(("scale", "sensitivity"), [(1.5, 1), (0.7, 3)])
def test_discrete_laplace_pmf(scale, sensitivity):
    t = scale * sensitivity
    noisy = DiscreteLaplaceMechanism(scale=scale).release(
        np.zeros(20_000, dtype=int), sensitivity=sensitivity, rng=np.random.default_rng(28))

    def pmf(x: int) -> float:  # normaliser sum_x r^|x| = (1 + r) / (1 - r), r = e^{-1/t}
        r = math.exp(-1.0 / t)
        return (1 - r) / (1 + r) * r ** abs(x)

    assert _chi_square_pmf(noisy, pmf, cut=int(3 * t) + 2) > LEVEL


@pytest.mark.parametrize("sigma", [0.6, 1.3, 4.0])
def test_discrete_gaussian_pmf(sigma):
    noisy = DiscreteGaussianMechanism(sigma=sigma).release(
        np.full(15_000, 7), rng=np.random.default_rng(29)) - 7
    z = math.fsum(math.exp(-x * x / (2 * sigma**2)) for x in range(-200, 201))

    def pmf(x: int) -> float:
        return math.exp(-x * x / (2 * sigma**2)) / z

    assert _chi_square_pmf(noisy, pmf, cut=int(2.5 * sigma) + 1) > LEVEL


@pytest.mark.parametrize("noise", ["laplace", "gaussian", "discrete_laplace"])
def test_tree_quantiles_prefix_budget(recorder, noise):
    # 70 bins, b = 25: height 2, real nodes 1, 3, 70 (555 padding leaves never released)
    alg = TreeQuantiles(lower=0.0, upper=1.0, bins=70, branching=25, scale=3.0,
                        measure_root=True, noise=noise, level_budget="prefix")
    alg.quantiles(np.random.default_rng(12).uniform(size=500), [0.5],
                  rng=np.random.default_rng(13))
    lines = check_claim(alg, recorder, sensitivities=[1.0] * 3, counts=[1, 1, 1])
    assert [lines[i][0].size for i in range(3)] == [1, 3, 70]
    kind, attr = {"laplace": (LaplaceMechanism, "b"), "gaussian": (GaussianMechanism, "sigma"),
                  "discrete_laplace": (DiscreteLaplaceMechanism, "scale")}[noise]
    for i, sc in enumerate(alg.level_scales):
        mech = lines[i][0].mechanism
        assert isinstance(mech, kind)
        assert getattr(mech, attr) == pytest.approx(sc, rel=1e-12)
