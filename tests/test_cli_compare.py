"""``dpacct compare`` (``dpacct._cli_compare``): the curves side by side, the order that
sets epsilon, and the plot's explanation of a steep RDP rise."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from dpacct._cli_compare import best_order, rdp_or_none, tradeoff
from dpacct.cli import main, parse_mechanism_spec
from dpacct.mechanisms import GaussianMechanism


def _sgd_lower_bound(sigma: float, q: float, steps: int, alpha: int) -> float:
    """An independent lower bound on the RDP of ``steps`` Poisson-subsampled Gaussians.

    At integer alpha the Renyi divergence of (1-q) N(0,s^2) + q N(1,s^2) from N(0,s^2) is
    (1/(alpha-1)) log sum_k C(alpha,k) (1-q)^(alpha-k) q^k e^{k(k-1)/(2 s^2)} (Mironov,
    Talwar & Zhang 2019); its k = alpha term alone gives
    alpha/(2 s^2) + alpha log(q)/(alpha-1), and RDP adds up over steps.
    """
    return steps * (alpha / (2 * sigma**2) + alpha * math.log(q) / (alpha - 1))


def test_the_rdp_jump_is_real_and_sits_where_amplification_ends():
    """The ~1e4 rise between orders 12 and 15 is the mechanism's, not a glitch."""
    from dpacct._cli_compare import steep_rise

    sigma, q, steps = 1.1, 0.004, 14_063
    run = parse_mechanism_spec(f"gaussian:sigma={sigma},q={q},steps={steps}")
    for alpha in (16, 20, 64, 256):
        assert run.rdp(alpha) >= _sgd_lower_bound(sigma, q, steps, alpha) * (1 - 1e-9)
    assert _sgd_lower_bound(sigma, q, steps, 16) > 1e4 > 100 * run.rdp(12.0)
    # the k = alpha term overtakes the k = 0 term (= 1) at alpha - 1 = 2 sigma^2 log(1/q)
    crossover = 1 + 2 * sigma**2 * math.log(1 / q)
    alphas = np.geomspace(1.1, 256.0, 240)
    jump = steep_rise(alphas, run.rdp(alphas))
    assert jump is not None and abs(alphas[jump] / crossover - 1) < 0.1
    for spec in ("gaussian:sigma=1", "laplace:b=1", "rr:p=0.75"):
        assert steep_rise(alphas, parse_mechanism_spec(spec).rdp(alphas)) is None, spec


def test_plot_explains_the_rdp_jump():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from dpacct._cli_compare import figure

    specs = ["gaussian:sigma=1", "laplace:b=1", "gaussian:sigma=1.1,q=0.004,steps=14063"]
    fig = figure(specs, [parse_mechanism_spec(s) for s in specs])
    try:
        rdp_ax = fig.axes[1]
        texts = " ".join(t.get_text() for t in rdp_ax.texts)
        assert "not a numerical glitch" in texts and "subsampling stops amplifying" in texts
        assert f"{specs[2]}: the steep rise" in texts  # only the subsampled run rises
        assert f"{specs[0]}: " not in texts and specs[1] not in texts
        assert "order that sets epsilon" in texts
        # the dot of the subsampled run sits left of its rise: those orders set epsilon
        dots = [ln for ln in rdp_ax.lines if ln.get_marker() == "o"]
        assert len(dots) == 3
        assert dots[2].get_xdata()[0] < 1 + 2 * 1.1**2 * math.log(1 / 0.004)
        assert len(fig.axes[2].lines) == 4  # three trade-off curves and the diagonal
    finally:
        plt.close(fig)


def test_plot_without_matplotlib_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    argv = ["compare", "-m", "gaussian:sigma=1", "--plot", str(tmp_path / "c.png")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert 'pip install "dpacct[plot]"' in err and err.startswith("dpacct compare: error:")


def test_best_order_minimises_the_conversion_of_a_gaussian():
    # sigma = 1: RDP alpha / 2; the Canonne-Kamath-Steinke 2020 conversion at one order,
    # written out, is minimised over the grid by hand here
    alphas = np.array([2.0, 4.0, 6.0, 8.0, 16.0, 32.0])
    delta = 1e-5

    def cks(a):
        return a / 2 + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)

    expected = int(np.argmin([cks(a) for a in alphas]))
    assert best_order(alphas, alphas / 2, delta) == expected
    assert best_order(alphas, np.full(len(alphas), np.inf), delta) is None


def test_tradeoff_and_rdp_are_the_library_curves():
    g = GaussianMechanism(sigma=2.0)
    fpr = np.array([0.01, 0.1, 0.5])
    # mu-GDP with mu = 1/2: beta = Phi(Phi^-1(1 - a) - mu) (Dong, Roth & Su 2022, Eq. 6)
    from scipy.stats import norm

    assert tradeoff(g, fpr) == pytest.approx(norm.cdf(norm.isf(fpr) - 0.5), rel=1e-9)
    assert rdp_or_none(g, [2.0, 3.0]) == pytest.approx([2.0 / 8, 3.0 / 8], rel=1e-12)
    # an approximate-DP mechanism without an RDP curve: None, not an error
    from dpacct.accountant import Mechanism

    assert rdp_or_none(Mechanism.from_epsilon_delta(1.0, 1e-6), [2.0]) is None
