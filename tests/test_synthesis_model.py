"""Generation by randomized rounding (FittedSynthesizer.sample(method='round'))."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synthesis import generated

from dpacct.calibrators.synthesis import calibrate_synthesizer
from dpacct.mechanisms.algorithms.synthesis import MarginalSynthesizer, Table
from dpacct.mechanisms.algorithms.synthesis_model import round_counts


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 10.0), min_size=1, max_size=30).filter(lambda w: sum(w) > 0),
    st.integers(0, 10_000),
    st.integers(0, 2**32 - 1),
)
def test_round_counts_are_floor_or_ceiling_and_sum_to_n(weights, n, seed):
    p = np.asarray(weights) / np.sum(weights)
    c = round_counts(p, n, np.random.default_rng(seed))
    expected = n * p
    assert c.dtype.kind == "i" and int(c.sum()) == n
    assert (c >= np.floor(expected) - 1e-9).all() and (c <= np.ceil(expected) + 1e-9).all()


def test_round_counts_are_unbiased():
    # E[count_i] = n p_i exactly (inclusion probability = fractional part); each count
    # is floor or ceiling, so its variance is f (1 - f) <= 1/4 and the mean of 20 000
    # draws lies within 5 standard errors (5 * 0.5 / sqrt(20 000) = 0.018)
    p = np.array([0.137, 0.2, 0.05, 0.313, 0.3])
    n, draws = 7, 20_000
    rng = np.random.default_rng(3)
    mean = np.mean([round_counts(p, n, rng) for _ in range(draws)], axis=0)
    np.testing.assert_allclose(mean, n * p, atol=0.018, rtol=0)


def test_ipf_sample_rounds_every_column_given_the_columns_before_it():
    # chain-rule rounding of the IPF joint: the first column's counts are within one
    # row of n P(x_0); the rows sharing a prefix (x_0 .. x_{j-1}) are split among the
    # values of x_j within one row of (their number) * P(x_j | prefix)
    cols, data = generated(n=3000)
    model = MarginalSynthesizer(cols, "2-way", scale=5.0).fit(
        data, rng=np.random.default_rng(0), generator="ipf"
    )
    t = model.sample(rng=np.random.default_rng(1))
    # the chain runs over the columns with the fewest values first (stable): w, z, x, y
    names = [cols[j].name for j in np.argsort([c.size for c in cols], kind="stable")]
    assert names == ["w", "z", "x", "y"]
    assert np.abs(t.marginal(names[0]) - t.n_rows * model.probability(names[0])).max() < 1.0
    for j in range(1, len(names)):
        counts = t.marginal(names[: j + 1])
        joint = model.probability(names[: j + 1])
        rows = joint.sum(axis=-1, keepdims=True)
        cond = np.divide(joint, rows, out=np.zeros_like(joint), where=rows > 0)
        expected = counts.sum(axis=-1, keepdims=True) * cond
        assert np.abs(counts - expected).max() < 1.0, j
    # iid sampling misses the model's cells by many rows (multinomial error)
    iid = model.sample(rng=np.random.default_rng(1), method="iid")
    assert np.abs(iid.marginal(names) - iid.n_rows * model.probability(names)).max() > 3.0
    # the rows are shuffled, not sorted by prefix
    assert not (np.diff(t.codes[:, 2]) >= 0).all()


def test_tree_sample_rounds_every_parent_group():
    cols, data = generated(n=3000)
    model = MarginalSynthesizer(cols, "2-way", scale=5.0).fit(
        data, rng=np.random.default_rng(0), generator="tree"
    )
    t = model.sample(rng=np.random.default_rng(2))
    names = [c.name for c in cols]
    root = names[model.order[0]]
    assert np.abs(t.marginal(root) - t.n_rows * model.one_way[root]).max() < 1.0
    for child, parent in model.parents.items():
        if parent is None:
            continue
        pair = t.marginal([parent, child])
        cond = model.conditionals[names.index(child)]
        # the rows of each parent value are split among the child values by rounding
        expected = pair.sum(axis=1, keepdims=True) * cond
        assert np.abs(pair - expected).max() < 1.0
    # rows are shuffled, not sorted by cell
    assert not (np.diff(t.codes[:, model.order[0]]) >= 0).all()


def test_rounding_beats_iid_sampling_on_two_way_tvd():
    # measured: the sampled table's 2-way TVD to the real data, median over seeds
    cols, data = generated(n=4000)
    real = Table.from_data(cols, data)
    pairs = list(itertools.combinations([c.name for c in cols], 2))

    def tvd(t: Table) -> float:
        return float(
            np.mean(
                [
                    0.5 * np.abs(t.marginal(m) / t.n_rows - real.marginal(m) / real.n_rows).sum()
                    for m in pairs
                ]
            )
        )

    syn = calibrate_synthesizer(3.0, 0.0, cols, "2-way")
    out = {"round": [], "iid": []}
    for seed in range(8):
        model = syn.fit(data, rng=np.random.default_rng(seed))
        for method in out:
            out[method].append(
                tvd(model.sample(rng=np.random.default_rng(50 + seed), method=method))
            )
    assert np.median(out["round"]) < 0.7 * np.median(out["iid"])


def test_sample_method_is_validated():
    cols, data = generated(n=200)
    model = MarginalSynthesizer(cols, "1-way", scale=1.0).fit(data, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="method must be one of"):
        model.sample(rng=np.random.default_rng(0), method="multinomial")
    assert model.sample(0, rng=np.random.default_rng(0)).n_rows == 0
