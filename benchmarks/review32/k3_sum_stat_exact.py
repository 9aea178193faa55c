"""Review 32: an independent recompute of the k = 3, sigma 1.5, T 20 lower end (delta 1e-6).

The lower end is the sum statistic ``U = sum_t floor(log(1 + c z_t^a) / h)`` (capped) at
``c = 0.0943453594``, ``a = 1.15`` (the winner of ``sum_statistic_lower_epsilon``'s search,
remove direction). Here the statistic's lattice is taken from its definition only: the per-term
cell masses in mpmath at 40 digits (survival side above the median), the convolution powers by
direct ``np.convolve`` (no FFT, no fold), and epsilon(1e-6) by bisection on
``sum (p - e^eps q)_+`` in mpmath. A certified lower end must not be above this value.

    python benchmarks/review32/k3_sum_stat_exact.py
"""

import itertools
import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40
S, T, K = 1.5, 20, 3
C, PW = 0.09434535936197286, 1.15
LIBRARY = "2.2938441868941615"


def lattice():
    """The statistic's step and cell count (as ``sum_statistic_laws`` defines them)."""
    sd_z = math.exp(PW * (PW - 1.0) / (2.0 * S * S)) * math.sqrt(math.expm1(PW * PW / (S * S)))
    h = min(C * sd_z, PW / S) / 12.0
    z_top = 0.5 / (S * S) + 8.0 / S
    return h, int(math.log1p(C * math.exp(PW * z_top)) / h) + 2


def masses(sign, h, cells):
    """Cell masses of one term: ``log z ~ N(sign / (2 S^2), 1 / S^2)``."""
    mu = mp.mpf(sign) / (2 * S * S)
    sd = 1 / mp.mpf(S)
    inner = [mp.log(mp.expm1(j * mp.mpf(h)) / C) / PW for j in range(1, cells)]
    edges = [mp.ninf, *inner, mp.inf]

    def cdf(e):
        return mp.mpf(0) if e == mp.ninf else mp.mpf(1) if e == mp.inf else mp.ncdf((e - mu) / sd)

    def sf(e):
        return mp.mpf(1) if e == mp.ninf else mp.mpf(0) if e == mp.inf else mp.ncdf(-(e - mu) / sd)

    out = []
    for a, b in itertools.pairwise(edges):
        below = b != mp.inf and (b - mu) / sd <= 0
        out.append(cdf(b) - cdf(a) if below else sf(a) - sf(b))
    return np.array([float(x) for x in out])


def power(x, m):
    out = np.array([1.0])
    for _ in range(m):
        out = np.convolve(out, x)
    return out


def main():
    h, cells = lattice()
    a, b = masses(-1, h, cells), masses(+1, h, cells)
    common = power(a, T - K)
    q, p = np.convolve(common, power(a, K)), np.convolve(common, power(b, K))
    pm = [mp.mpf(float(x)) for x in p]
    qm = [mp.mpf(float(x)) for x in q]

    def delta(eps):
        g = mp.e**eps
        return mp.fsum(max(pi - g * qi, 0) for pi, qi in zip(pm, qm, strict=True))

    lo, hi = mp.mpf(2.2), mp.mpf(2.4)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta(mid) > 1e-6 else (lo, mid)
    print(f"h {h}, cells {cells}, support {q.size}")
    print("independent remove epsilon(1e-6) of the statistic:", mp.nstr(lo, 12))
    print(f"its delta at the library's lower end {LIBRARY}:", mp.nstr(delta(mp.mpf(LIBRARY)), 12))


if __name__ == "__main__":
    main()
