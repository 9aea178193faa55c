"""Per-record accounting in a real CPU Opacus run (dpacct/_opacus_per_record.py).

The suite's small model (a two-layer MLP on scikit-learn's breast-cancer data, as in
tests/test_opacus.py) is trained with Opacus 1.6 and dpacct's accountant, its batches
drawn by :class:`PerRecordPoissonSampler`, each record clipped at its own threshold
(refreshed every epoch from the released model), under a per-record budget.  A canary
record with a threshold fixed in advance is planted; its per-record epsilon is checked
against a Clopper-Pearson audit of its mechanism (mechanisms/audit.py), a lower bound.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402

import dpacct.opacus  # noqa: E402,F401  (registers "dpacct")
from dpacct._opacus_per_record import (  # noqa: E402
    PerRecordAccounting,
    PerRecordPoissonSampler,
    PerRecordReport,
)
from dpacct.accountant import compose, poisson_subsample  # noqa: E402
from dpacct.accountant.ledger.per_record import PerRecordFilter  # noqa: E402
from dpacct.accountant.rdp.subsampled_rdp import subsampled_gaussian_rdp  # noqa: E402
from dpacct.mechanisms import GaussianMechanism  # noqa: E402
from dpacct.mechanisms.audit import audit  # noqa: E402

DELTA = 1e-5
BUDGET = 2.5
SIGMA = 1.0
EPOCHS = 8
BATCH = 32
CANARY_RATIO = 0.5

pytestmark = [pytest.mark.filterwarnings("ignore:Full backward hook:UserWarning")]


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


@pytest.fixture(scope="module")
def run(cancer):
    """One private training run with per-record accounting; the canary is the last record."""
    Xtr, _, ytr, _, _, _ = cancer
    rng = np.random.default_rng(0)
    canary = rng.normal(size=(1, Xtr.shape[1]))
    canary /= np.linalg.norm(canary)
    X = np.vstack([Xtr, canary])
    y = np.append(ytr, 1.0 - ytr[0])
    data = torch.utils.data.TensorDataset(
        torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    )
    n = len(data)
    c = n - 1
    torch.manual_seed(0)
    model = _mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    acct = PerRecordAccounting(
        n, sample_rate=BATCH / n, budget_epsilon=BUDGET, budget_delta=DELTA,
        generator=torch.Generator().manual_seed(1),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="dpacct")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=acct.data_loader(data),
            noise_multiplier=SIGMA, max_grad_norm=1.0, poisson_sampling=False,
        )
    acct.attach(optimizer)
    crit = torch.nn.BCEWithLogitsLoss()

    def loss_fn(m, batch):
        return crit(m(batch[0]).squeeze(-1), batch[1])

    batches, dropped_at = [], {}
    for _ in range(EPOCHS):
        acct.refresh(model, data, loss_fn)
        acct.set_ratios([CANARY_RATIO], indices=[c])  # the canary's threshold, fixed in advance
        for xb, yb in loader:
            batches.append(acct.sampler.last_batch.copy())
            optimizer.zero_grad()
            crit(model(xb).squeeze(-1), yb).backward()
            optimizer.step()
        active = acct.filter.state().active
        for i in np.flatnonzero(~active):
            dropped_at.setdefault(int(i), len(batches))
    return SimpleNamespace(
        engine=engine, acct=acct, n=n, canary=c, batches=batches, dropped_at=dropped_at,
        q=BATCH / n,
    )


@pytest.mark.slow
def test_the_run_is_accounted_as_poisson_at_the_samplers_rate(run):
    acct = run.engine.accountant
    path = acct.data_path
    assert path.scheme == "poisson" and path.sampler == "PerRecordPoissonSampler"
    assert path.sample_rate == run.q
    assert len(acct) == len(run.batches) == EPOCHS * len(run.acct.sampler)
    assert acct.history == [(SIGMA, run.q, len(run.batches))]


@pytest.mark.slow
def test_the_largest_per_record_epsilon_is_within_the_runs_certified_one(run):
    """Every record's summed RDP is at most the run's (the worst-case record's) at every
    order, recomputed here from the history; the report never exceeds the certified
    epsilon; the records the filter stopped are within their budget at its order."""
    certified = run.engine.get_epsilon(DELTA)
    rep = run.acct.report(DELTA, certified=certified)
    assert float(rep.epsilon.max()) <= certified
    state = run.acct.filter.state()
    worst = len(run.batches) * subsampled_gaussian_rdp(run.q, SIGMA, state.orders)
    assert np.all(state.rdp <= worst[None, :] * (1 + 1e-9))
    k = int(np.flatnonzero(state.orders == run.acct.filter.order)[0])
    assert np.all(state.rdp[:, k] <= run.acct.filter._limit)
    # the per-record view is informative: most records spent far less than the run
    assert np.median(rep.odometer) < 0.8 * certified
    assert 0 < int((~state.active).sum()) < run.n


@pytest.mark.slow
def test_dropped_records_are_never_drawn_again(run):
    for i, when in run.dropped_at.items():
        assert not any(i in b for b in run.batches[when:])
    steps = run.acct.filter.state().steps
    active = run.acct.filter.state().active
    assert np.all(steps[active] == len(run.batches))
    assert np.all(steps[~active] < len(run.batches))


@pytest.mark.slow
def test_a_planted_canarys_audited_lower_bound_is_below_its_per_record_epsilon(run):
    """A Clopper-Pearson audit (mechanisms/audit.py; our own, not audit_one_run) of the
    canary's mechanism as the run executed it: the steps it was charged, each a Poisson
    inclusion at rate q of its gradient clipped at CANARY_RATIO * C under noise SIGMA * C,
    observed by a white-box adversary with a Dirac canary (the noisy sum's coordinate on
    the canary's direction; the scores are the likelihood-ratio statistic of the steps).
    The audited lower bound must not exceed the canary's per-record epsilon."""
    c = run.canary
    rep = run.acct.report(DELTA, certified=run.engine.get_epsilon(DELTA))
    steps = int(rep.steps[c])
    assert steps == len(run.batches) and rep.ratios[c] == CANARY_RATIO
    q, r, s = run.q, CANARY_RATIO, SIGMA

    def sampler(rng, m):
        def score(z):
            return np.sum(np.log1p(q * np.expm1((2 * z * r - r * r) / (2 * s * s))), axis=1)

        present = rng.random((m, steps)) < q
        on_d = score(present * r + rng.normal(0.0, s, (m, steps)))
        on_d_prime = score(rng.normal(0.0, s, (m, steps)))
        return on_d, on_d_prime

    claim = compose([poisson_subsample(GaussianMechanism(sigma=s / r), q)], counts=[steps])
    result = audit(claim, np.random.default_rng(5), samples=20_000, sampler=sampler)
    lower = result.epsilon_lower_bound(DELTA)
    print(f"canary: audited lower {lower:.4f}, PLD {claim.epsilon(DELTA):.4f}, "
          f"per-record {rep.epsilon[c]:.4f}, odometer {rep.odometer[c]:.4f}, steps {steps}")
    assert result.passed
    assert 0.0 < lower <= rep.epsilon[c] <= rep.odometer[c]
    # the canary's PLD epsilon lies between them (its threshold was fixed in advance)
    assert lower <= claim.epsilon(DELTA) <= rep.odometer[c]


def test_per_record_clipping_in_a_real_dp_optimizer_step():
    """One step of Opacus' DPOptimizer with per-record accounting: the summed gradient it
    accumulates equals sum_i min(1, r_i C / |g_i|) g_i, each g_i computed here by plain
    autograd on record i alone."""
    torch.manual_seed(0)
    n = 8
    X, y = torch.randn(n, 5), torch.randn(n)
    data = torch.utils.data.TensorDataset(X, y)
    model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    ref = [p.detach().clone() for p in model.parameters()]
    acct = PerRecordAccounting(n, sample_rate=1.0, steps=1)
    ratios = np.array([1.0, 0.5, 0.25, 0.125, 2**-0.25, 0.0625, 1.0, 0.5])
    acct.set_ratios(ratios)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="dpacct")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
            data_loader=acct.data_loader(data), noise_multiplier=1.0, max_grad_norm=0.3,
            poisson_sampling=False, loss_reduction="sum",
        )
    acct.attach(optimizer)
    loss = torch.nn.MSELoss(reduction="sum")
    (xb, yb), = list(loader)
    optimizer.zero_grad()
    loss(model(xb).squeeze(-1), yb).backward()
    optimizer.step()
    assert optimizer.max_grad_norm == 0.3
    plain = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    with torch.no_grad():
        for p, r in zip(plain.parameters(), ref, strict=True):
            p.copy_(r)
    want = [torch.zeros_like(r) for r in ref]
    for i in range(n):
        plain.zero_grad()
        loss(plain(X[i : i + 1]).squeeze(-1), y[i : i + 1]).backward()
        g = [p.grad.clone() for p in plain.parameters()]
        norm = torch.sqrt(sum((t**2).sum() for t in g))
        factor = min(1.0, ratios[i] * 0.3 / (float(norm) + 1e-6))
        want = [w + factor * t for w, t in zip(want, g, strict=True)]
    got = [p.summed_grad for p in optimizer.params]
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_refresh_sets_thresholds_from_per_sample_norms_at_the_current_model():
    """refresh: r_i = min(1, norm_i / C) rounded up to the grid, norm_i computed here by
    plain autograd on record i alone; only the chosen records change."""
    torch.manual_seed(1)
    n = 6
    X, y = torch.randn(n, 4), torch.randn(n)
    data = torch.utils.data.TensorDataset(X, y)
    model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    plain = [p.detach().clone() for p in model.parameters()]
    acct = PerRecordAccounting(n, sample_rate=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, _ = PrivacyEngine(accountant="dpacct").make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=acct.data_loader(data), noise_multiplier=1.0, max_grad_norm=5.0,
            poisson_sampling=False, loss_reduction="mean",
        )
    acct.attach(optimizer)
    mse = torch.nn.MSELoss()
    norms = acct.refresh(model, data, lambda m, b: mse(m(b[0]).squeeze(-1), b[1]),
                         batch_size=4, indices=[0, 2, 3, 5])
    ref = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    with torch.no_grad():
        for p, v in zip(ref.parameters(), plain, strict=True):
            p.copy_(v)
    want = np.full(n, np.nan)
    for i in (0, 2, 3, 5):
        ref.zero_grad()
        mse(ref(X[i : i + 1]).squeeze(-1), y[i : i + 1]).backward()
        want[i] = float(torch.sqrt(sum((p.grad**2).sum() for p in ref.parameters())))
    np.testing.assert_allclose(norms, want, rtol=1e-5)
    got = acct.filter.ratios
    done = np.array([0, 2, 3, 5])
    r = np.minimum(1.0, want[done] / 5.0)
    assert np.all(got[done] >= r) and np.all(got[done] < r * 2**0.25 + 1e-12)
    assert got[1] == got[4] == 1.0  # not refreshed
    assert all(getattr(p, "grad_sample", None) is None for p in model.parameters())
    with pytest.raises(ValueError, match="indices"):
        acct.refresh(model, data, lambda m, b: mse(m(b[0]).squeeze(-1), b[1]), indices=[6])


def test_the_clipping_wrapper_refuses_a_step_it_did_not_charge():
    acct = PerRecordAccounting(6, sample_rate=0.5)
    params = [SimpleNamespace(grad_sample=torch.ones(4, 3))]

    class StandIn:  # the attributes of Opacus' DPOptimizer that the wrapper reads
        max_grad_norm, noise_multiplier = 3.0, 1.0

        @property
        def grad_samples(self):
            return [p.grad_sample for p in params]

        def clip_and_accumulate(self):
            pass

    with pytest.raises(TypeError, match="DPOptimizer"):
        acct.attach(StandIn())
    opt = StandIn()
    acct._wrap(opt)
    with pytest.raises(ValueError, match="without a batch"):
        opt.clip_and_accumulate()
    sampler = acct.sampler

    def drawn(idx):
        sampler.last_batch, sampler.last_sigma, sampler.unstepped = np.array(idx), 1.0, 1
        sampler.last_levels = acct.filter.level[np.array(idx)]

    drawn([0, 1, 2, 3])
    opt.clip_and_accumulate()
    assert opt.max_grad_norm == 3.0
    with pytest.raises(ValueError, match="0 batches were drawn"):
        opt.clip_and_accumulate()  # a second step on the same batch
    drawn([0, 1, 2, 3])
    sampler.unstepped = 2  # a batch drawn ahead (a loader worker) or skipped
    with pytest.raises(ValueError, match="2 batches were drawn"):
        opt.clip_and_accumulate()
    drawn([0, 1, 2, 3])
    opt.noise_multiplier = 0.5  # below what the records were charged for
    with pytest.raises(ValueError, match="noise_multiplier"):
        opt.clip_and_accumulate()
    opt.noise_multiplier = 1.0
    drawn([0, 1, 2, 3])
    opt.max_grad_norm = 2.0
    with pytest.raises(ValueError, match="max_grad_norm"):
        opt.clip_and_accumulate()
    opt.max_grad_norm = 3.0
    drawn([0, 1])  # 4 gradients for 2 records
    with pytest.raises(ValueError, match="accumulation"):
        opt.clip_and_accumulate()
    with pytest.raises(ValueError, match="num_workers"):
        acct.data_loader(torch.utils.data.TensorDataset(torch.zeros(6, 1)), num_workers=2)


def test_thresholds_raised_between_draw_and_step_are_not_used_unpaid():
    """Records charged at C/16 when the batch was drawn are clipped at C/16, not at C.

    review40: the wrapper read ``filter.level`` at step time, so a ``set_ratios`` (or a
    ``refresh``) between the draw and ``optimizer.step()`` clipped at the new, larger
    threshold while the filter had charged the old one.  The clipped sum Opacus
    accumulates (``summed_grad``) is recomputed here from the per-sample gradients with
    Opacus' clipping factor at the charged thresholds.
    """
    torch.manual_seed(0)
    n, clip, sigma = 4, 1.0, 1.0
    x, y = 10 * torch.randn(n, 5), 10 * torch.randn(n)  # gradient norms far above C
    data = torch.utils.data.TensorDataset(x, y)
    model = torch.nn.Sequential(torch.nn.Linear(5, 1))
    acct = PerRecordAccounting(n, sample_rate=1.0, steps=1)
    acct.set_ratios(np.full(n, 1 / 16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = PrivacyEngine(accountant="dpacct").make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
            data_loader=acct.data_loader(data), noise_multiplier=sigma,
            max_grad_norm=clip, poisson_sampling=False, loss_reduction="sum",
        )
    acct.attach(opt)
    loss = torch.nn.MSELoss(reduction="sum")
    for xb, yb in loader:  # every record charged at ratio 1/16 by the draw
        acct.set_ratios(np.ones(n))  # a refresh inside the loop
        with pytest.raises(ValueError, match="between a batch's draw"):
            acct.load_state_dict(acct.state_dict())  # would drop the draw's charge
        opt.zero_grad()
        loss(model(xb).squeeze(-1), yb).backward()
        opt.step()
    gs = [p.grad_sample.detach().double() for p in opt.params]
    norms = torch.stack([g.reshape(n, -1).norm(dim=1) for g in gs], 1).norm(dim=1)
    charged = clip / 16  # what the draw charged every record for
    factor = torch.clamp(charged / (norms + 1e-6), max=1.0)
    for p, g in zip(opt.params, gs, strict=True):
        expected = torch.einsum("i,i...", factor, g)
        assert torch.allclose(p.summed_grad.double(), expected, rtol=1e-5, atol=1e-7)
    assert acct.filter.state().ratios.tolist() == [1.0] * n  # the new ratios, for later


@pytest.mark.parametrize("q", [1e-6, 0.3, 1.0 - 2.0**-40])
def test_per_record_sampler_inclusion_probability_is_at_most_q(monkeypatch, q):
    """review40: a float32 ``torch.rand`` below ``q`` includes a record with probability
    ``ceil(q 2^24) / 2^24 > q`` (+1.3 % at q = 1e-6), while the filters charge ``q``.

    ``torch.rand`` of a dtype returns multiples of ``2^-bits`` (checked on the real
    generator), each with probability ``2^-bits``; the fake below returns the values of
    that support around ``q``, so the largest included value ``k 2^-bits`` gives the
    sampler's inclusion probability ``(k + 1) 2^-bits``.
    """
    bits = {torch.float32: 24, torch.float64: 53}
    gen = torch.Generator().manual_seed(0)
    for dtype, b in bits.items():
        probe = torch.rand(100_000, dtype=dtype, generator=gen).double()
        assert torch.all(probe * 2.0**b == torch.round(probe * 2.0**b))
    n, asked = 64, []

    def fake_rand(size, *, dtype=torch.float32, generator=None):
        b = bits[dtype]
        k0 = math.floor(q * 2.0**b)
        ks = np.arange(k0 - n // 2, k0 + n // 2, dtype=np.float64)
        ks = np.resize(ks[(ks >= 0) & (ks < 2.0**b)], size)
        asked.append((b, ks))
        return torch.as_tensor(ks * 2.0**-b, dtype=dtype)

    monkeypatch.setattr(torch, "rand", fake_rand)
    sampler = PerRecordPoissonSampler(PerRecordFilter(n), q, steps=1)
    sampler.noise = lambda: 1.0
    batch = sampler.draw()
    b, ks = asked[-1]
    assert batch and max(ks[batch]) < ks.max()  # the support around q, both sides
    k_max = max(ks[batch])
    assert (k_max + 1) * 2.0**-b <= q  # the inclusion probability


@pytest.mark.parametrize("clip", [1.0, 0.7, 3.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_clipping_limits_in_the_gradients_dtype_never_exceed_the_charged_ones(clip, dtype):
    """review40: the float64 thresholds ``LEVELS * C`` cast to float32 to nearest round
    12 of the 49 levels up, so a record was clipped above what it was charged for."""
    from dpacct.accountant.ledger.per_record import LEVELS

    n = len(LEVELS)
    acct = PerRecordAccounting(n, sample_rate=0.5)
    grads = [torch.ones(n, 3, dtype=dtype)]

    class StandIn:  # the attributes of Opacus' DPOptimizer that the wrapper reads
        max_grad_norm, noise_multiplier, grad_samples = clip, 1.0, grads

        def clip_and_accumulate(self):
            pass

    opt = StandIn()
    acct._wrap(opt)
    acct.filter.level[:] = np.arange(n)
    s = acct.sampler
    s.last_batch, s.last_sigma, s.unstepped = np.arange(n), 1.0, 1
    s.last_levels = acct.filter.level.copy()
    limits = acct._limits(opt)
    assert limits.dtype == dtype
    charged = LEVELS * clip
    got = limits.double().numpy()
    assert np.all(got <= charged)  # never above the charged threshold
    assert np.all(got >= charged * (1 - 2.0 * float(torch.finfo(dtype).eps)))  # one step


def test_sampler_draws_only_admitted_records_and_needs_an_optimiser():
    acct = PerRecordAccounting(50, sample_rate=0.5, budget_epsilon=1.0, budget_delta=1e-5,
                               generator=torch.Generator().manual_seed(0))
    with pytest.raises(RuntimeError, match="attach"):
        acct.sampler.draw()
    acct.sampler.noise = lambda: 1.0
    acct.set_ratios(np.r_[np.ones(25), np.full(25, 2.0**-8)])
    seen = np.zeros(50, dtype=int)
    for _ in range(40):
        seen[acct.sampler.draw()] += 1
    st = acct.filter.state()
    assert not st.active[:25].any() and st.active[25:].all()
    assert seen[:25].max() <= st.steps[:25].max() and seen[25:].min() > 0
    assert isinstance(acct.sampler, PerRecordPoissonSampler) and len(acct.sampler) == 2


def test_report_distribution_top_and_summary():
    acct = PerRecordAccounting(5, sample_rate=0.1)
    acct.set_ratios([1.0, 0.5, 0.25, 0.125, 0.0625])
    for _ in range(100):
        acct.filter.begin_step(sigma=1.0, sample_rate=0.1)
    rep = acct.report(DELTA, certified=1.0)
    assert isinstance(rep, PerRecordReport)
    assert [i for i, _ in rep.top(3)] == [0, 1, 2]
    assert rep.epsilon[0] == 1.0 < rep.odometer[0]  # capped by the certified epsilon
    assert np.all(np.diff(rep.quantiles()) >= 0)
    text = rep.summary(2)
    assert "run's certified (worst-case) epsilon: 1" in text and "#0: 1" in text
    with pytest.raises(ValueError, match="delta"):
        acct.report(0.0)


def test_report_plot_draws_a_histogram():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    acct = PerRecordAccounting(20, sample_rate=0.1)
    acct.set_ratios(np.linspace(0.05, 1.0, 20))
    for _ in range(10):
        acct.filter.begin_step(sigma=1.0, sample_rate=0.1)
    ax = acct.report(DELTA, certified=2.0).plot(bins=5)
    assert len(ax.patches) == 5 and math.isclose(ax.lines[0].get_xdata()[0], 2.0)
