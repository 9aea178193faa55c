"""Unit tests of :mod:`dpacct.accountant.pld.optimistic_tail` (issue 37, session 31).

The optimistic tail product of a coarse tail ``c`` with coarse-grid factors ``g, c`` must
be entrywise at or below the exact ``c * (g + c)`` (a lower bound may drop mass, never
add it), and may drop at most ``2 TAIL_ROUNDOFF`` shares through its plain pass besides
its cuts.  The exact product is a direct convolution of non-negative arrays (every entry
within ``n u`` relative of the exact sum, Higham 2002, Section 3.1), independent of the
FFT code under test.  Power: rounding the plain pass *up* (``est + err``) instead of down
puts entries above the exact product and fails the first test (checked in session 31).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct.accountant.pld import optimistic_tail as ot
from dpacct.accountant.pld.grid import GridPLD


def _tail_pair(rng: np.random.Generator, n: int, scale: float):
    """A two-sided coarse tail (mass ``scale``) and a concentrated bulk on its grid."""
    x = np.arange(n, dtype=float)
    c = np.exp(-0.5 * ((x - n / 2) / (n / 6)) ** 2) * rng.uniform(0.5, 1.5, n)
    c[n // 3 : 2 * n // 3] = 0.0  # the bulk's window is empty in the tail
    c *= scale / c.sum()
    g = np.exp(-0.5 * ((np.arange(n // 4) - n / 8) / (n / 40)) ** 2)
    g *= 2.0 / g.sum()
    return (GridPLD(0.01, -n // 2, c, 0.0, False),
            GridPLD(0.01, -n // 8 + 3, g, 0.0, False))


@pytest.mark.parametrize("seed, n, scale", [(0, 800, 1e-6), (1, 2000, 3e-4), (2, 500, 1e-5)])
def test_the_tail_product_is_below_the_exact_one_and_drops_little(monkeypatch, seed, n, scale):
    rng = np.random.default_rng(seed)
    c, g = _tail_pair(rng, n, scale)
    tail = 1e-15
    taken = []
    real = ot._plain_within
    monkeypatch.setattr(ot, "_plain_within",
                        lambda a, b, t: taken.append(real(a, b, t)) or taken[-1])
    out = ot._optimistic_tail_product(c, [], [g, c], tail)
    assert taken[0]  # the summed plain pass was taken (what this test guards)
    # the exact measure, on absolute node indices: c * g and c * c
    lo = min(c.offset + g.offset, 2 * c.offset)
    hi = max(c.offset + g.offset + n + g.pmf.size - 1, 2 * c.offset + 2 * n - 1)
    exact = np.zeros(hi - lo)
    cg = np.convolve(c.pmf, g.pmf)
    cc = np.convolve(c.pmf, c.pmf)
    exact[c.offset + g.offset - lo : c.offset + g.offset - lo + cg.size] += cg
    exact[2 * c.offset - lo : 2 * c.offset - lo + cc.size] += cc
    got = np.zeros_like(exact)
    assert out.offset >= lo and out.offset + out.pmf.size <= hi
    got[out.offset - lo : out.offset - lo + out.pmf.size] = out.pmf
    assert np.all(got <= exact * (1 + 4 * n * 2.0**-53))
    share = tail / 2  # two factors: the cuts' share each
    dropped = exact.sum() - got.sum()
    assert dropped <= (2 * ot.TAIL_ROUNDOFF + 1 + 100) * 2 * share + 1e-12 * exact.sum()


def test_plain_within_follows_the_rigorous_bound():
    a = np.full(100, 1e-3)
    b = np.full(50, 2e-2)
    from dpacct.accountant.pld import pld_fft

    bound = pld_fft._fft_roundoff(a, b) * (a.size + b.size)
    assert ot._plain_within(a, b, bound * 1.01) == pld_fft._fft_roundoff(a, b)
    assert ot._plain_within(a, b, bound * 0.99) is None
