"""The optimistic tail products of a two-scale PLD, and the sub-measure helpers they share.

Split out of :mod:`~dpacct.accountant.pld.twoscale` (the library's 800-line limit; issue 37,
session 31), which imports them back.  A two-scale PLD is a finely gridded bulk plus a
coarsely gridded tail, both sub-measures; :func:`_optimistic_tail_product` forms the
tail's products with the other factors for a lower bound (the optimistic side of
``epsilon_bounds``).  The argument in full: docs/theory/pld.md.
"""

from __future__ import annotations

import functools

import numpy as np

from . import pld_fft
from .grid import BOTTOM_CUT_FACTOR, GridPLD, _Bins, _bins_from_grid, _from_bins, _trim
from .pld_fft import _certified_convolve, _tail_cuts

__all__: list[str] = []

#: an optimistic tail product is one plain transform when its round-off bound summed
#: over the entries is below this many tail shares (it then drops at most twice that,
#: besides the cuts' share: :func:`_optimistic_tail_product`; docs/theory/pld.md)
TAIL_ROUNDOFF = 4.0


def _add(a: GridPLD, b: GridPLD) -> GridPLD:
    """Sum of two sub-measures on the same grid."""
    if a.step != b.step:
        raise ValueError("sub-measures must share a grid to be added")
    first = min(a.offset, b.offset)
    last = max(a.offset + a.pmf.size, b.offset + b.pmf.size)
    pmf = np.zeros(last - first)
    pmf[a.offset - first : a.offset - first + a.pmf.size] += a.pmf
    pmf[b.offset - first : b.offset - first + b.pmf.size] += b.pmf
    return GridPLD(a.step, first, pmf, a.inf_mass + b.inf_mass, a.pessimistic)


def _scaled(p: GridPLD, factor: float) -> GridPLD:
    return GridPLD(p.step, p.offset, p.pmf * factor, p.inf_mass * factor, p.pessimistic)


def _plain_within(a: np.ndarray, b: np.ndarray, budget: float) -> float | None:
    """The plain transform's rigorous bound (:func:`~dpacct.accountant.pld.
    pld_fft._fft_roundoff`, every entry) when, summed over ``a * b``'s entries, it is
    below ``budget`` (rounded down by it, the product then drops less than ``budget`` of
    mass), else None.  The plain pass is handed the bound instead of computing it again
    (the same float: the same call on the same arrays; issue 37)."""
    if not pld_fft.CERTIFY_ROUNDOFF:
        return None
    bound = pld_fft._fft_roundoff(a, b)
    return bound if bound * (a.size + b.size) < budget else None  # (size: one more)


def _cut(x: np.ndarray, y: np.ndarray, z: np.ndarray, tail: float) -> tuple[int, int]:
    """Index range ``[lo, hi)`` of ``z = x * y`` kept by the optimistic tail cuts.

    The dropped P-mass (exact sums of non-negative terms,
    :func:`~dpacct.accountant.pld.grid._tail_cuts`)
    is at most ``tail`` at the top and ``BOTTOM_CUT_FACTOR * tail`` at the bottom; an
    optimistic PLD drops it (as :meth:`GridPLD.convolve` does).
    """
    if tail <= 0 or z.size <= 2:
        return 0, z.size
    k_lo, _, k_hi, _ = _tail_cuts(x, y, z, tail, BOTTOM_CUT_FACTOR * tail)
    hi = k_hi if k_lo + 1 < k_hi < z.size else z.size
    lo = k_lo + 1 if 0 <= k_lo and k_lo + 1 < min(k_hi, z.size) else 0
    return lo, hi


def _optimistic_tail_product(
    coarse: GridPLD, fines: list[tuple[GridPLD, float]], others: list[GridPLD], tail: float
) -> GridPLD:
    """Optimistic ``coarse * (sum_i w_i fine_i + sum others)`` on the coarse grid.

    The product with a fine factor is *not* formed from the fine factor re-gridded
    onto the coarse grid: for a concentrated bulk (a small sample rate: the bulk spans
    a few coarse steps or less) the optimistic re-grid rounds most of it down by up
    to a step, and every later product inherits the shift (measured: the lower bound
    0.3 % below the upper at q = 4.1e-6, sigma = 0.5, 100 steps, where epsilon is
    about 50 coarse steps).  Instead the P-masses and scaled Q-masses of the exact
    product's coarse bins are computed -- both are linear in the fine factor, so they
    are the coarse factor convolved with the fine factor's own bin masses -- and the
    optimistic construction (:func:`~dpacct.accountant.pld.grid._lower_from_bins`; Doroshenko et
    al. 2022, Section 4; Koskela et al. 2020) is applied to the product, whose bins
    are as smooth as the tail.  The products with ``others`` (coarse-grid factors)
    sit exactly on nodes: one product with their sum (bilinear) when its plain
    transform drops at most ``TAIL_ROUNDOFF`` shares (only lowers delta), else one each.

    The hockey-stick curve of a sum of sub-measures is the sum of their curves, so a
    sum of optimistic discretisations of the parts is one of the whole; every step is
    a post-processing or an optimistic rounding (dropped tail mass) of the exact
    product of the inputs, so the result is dominated by it.
    """
    cstep = coarse.step
    cp = coarse.pmf
    fin_c = float(cp.sum())
    share = tail / max(len(fines) + len(others), 1)  # per factor, summed or not
    plain_ok, plain_bound = None, None  # the summed factor's check, made once (issue 37)
    if len(others) > 1:  # c (2 f + c) as the upper end, if its plain pass is certified
        summed = functools.reduce(_add, others)
        plain_bound = _plain_within(cp, summed.pmf, TAIL_ROUNDOFF * share)
        if plain_bound is not None:
            others = [summed]
            plain_ok = summed
    parts: list[GridPLD] = []
    for f, w in fines:
        fb = _bins_from_grid(f, cstep)  # a GridPLD's bins have no tails
        # P-masses rounded down, scaled Q-masses up (with CERTIFY_ROUNDOFF): every
        # bin's merged atom then has less P-mass at a lower loss than the exact one's
        m = _certified_convolve(cp, fb.m, 0.0, False)
        r = _certified_convolve(cp, fb.r, 0.0, True)
        # the exact product's mass is fin_c * sum(fb.m): scale FFT excess away
        exact_mass, total = fin_c * float(fb.m.sum()), float(m.sum())
        if total > exact_mass > 0:
            m, r = m * (exact_mass / total), r * (exact_mass / total)
        lo, hi = _cut(cp, fb.m, m, share)
        m, r = m[lo:hi], r[lo:hi]
        fin_f = float(f.pmf.sum())
        inf_mass = coarse.inf_mass * (fin_f + f.inf_mass) + f.inf_mass * fin_c
        bins = _Bins(
            step=cstep,
            first=coarse.offset + fb.first + lo,
            m=w * m,
            r=w * np.minimum(r, m),
            bottom=(0.0, 0.0),
            top=(0.0, 0.0),
            inf_mass=min(w * inf_mass, 1.0),
            atoms=None,
        )
        parts.append(_from_bins(bins, False))
    for o in others:
        bound = plain_bound if o is plain_ok else _plain_within(cp, o.pmf, TAIL_ROUNDOFF * share)
        if bound is not None:
            # the plain pass, rounded down by its bound, drops < TAIL_ROUNDOFF shares
            est, err = pld_fft._plain_first_convolve(cp, o.pmf, TAIL_ROUNDOFF * share, True,
                                                     roundoff=bound)
            x = pld_fft._certified_side(est, err, False, inplace=True)
        else:
            x = _certified_convolve(cp, o.pmf, 0.0, False)
        fin_o = float(o.pmf.sum())
        exact_mass, total = fin_c * fin_o, float(x.sum())
        if total > exact_mass > 0:
            x = x * (exact_mass / total)
        lo, hi = _cut(cp, o.pmf, x, share)
        first, pmf = _trim(coarse.offset + o.offset + lo, x[lo:hi])
        inf_mass = coarse.inf_mass * (fin_o + o.inf_mass) + o.inf_mass * fin_c
        parts.append(GridPLD(cstep, first, pmf, min(inf_mass, 1.0), False))
    out = parts[0]
    for p in parts[1:]:
        out = _add(out, p)
    return out
