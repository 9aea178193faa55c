"""Issue 37: the least work any FFT-based PLD composition does for a DP-SGD ``epsilon``.

An *experiment*, not an accountant: unsound on purpose.  One direction (remove: ``P`` the
Poisson mixture ``(1 - q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)``), one uniform grid
of step ``h``, one forward ``numpy.fft.rfft`` of length ``n``, one elementwise power to
``T``, one ``numpy.fft.irfft``, no certificate, no ladder, no tails kept apart:

1. the one-step PLD on ``h Z``: the P- and Q-mass of every loss bin from the normal CDF at
   the bin ends (``scipy.special.ndtr`` of the loss's inverse), split between the bin's two
   nodes so that both masses are kept (connect-the-dots, Doroshenko et al. 2022, Section
   3: second-order error in ``h``);
2. tilted by ``e^{theta l}`` with ``theta`` the saddle point at which the ``T``-fold
   tilted mean is the target epsilon (a few Newton steps on the one-step PMF; Koskela et
   al. 2020 tilt their FFT the same way), so that a window of ``n`` points around epsilon
   holds the part of the composed law that ``delta(epsilon)`` reads; the one-step PMF is
   folded modulo ``n`` (a circular convolution only sees it modulo ``n``);
3. ``irfft(rfft(w, n) ** T, n)``, un-tilted in logs, and ``delta(eps) = A_k - e^eps B_k``
   (sums over the nodes above ``eps``) inverted between two nodes.

:func:`search` finds, for each step ``h`` in a list, the smallest length (``2^a 3^b 5^c``)
whose answer lies within the certified bracket's width of dpacct's upper end (and stays
so at every listed length up to 4x: no lucky cancellation of aliasing against the
discretisation's bias); :func:`callgrind_floor` counts the instructions of that
computation in a fresh process (its imports excluded, as for the call it is compared
with), beside dpacct's cold ``epsilon`` and Opacus' RDP accountant
(:func:`benchmarks.dpsgd_floor.callgrind`).

Run from the repository root::

    python -m benchmarks.dpsgd_floor_min                  # search, then callgrind
    python -m benchmarks.dpsgd_floor_min --rows 1e4 --no-callgrind

Measured (session 27; instructions of one cold call under callgrind, load-free; dpacct
at main 26d1223, Opacus 1.6.0's ``RDPAccountant``):

| row | what | answer | instructions |
| --- | --- | --- | --- |
| T 1e4 | floor within the bracket's width (6.2e-5): h 2^-13, n 61 440 | 5.192638531 | **65.3 M** |
| T 1e4 | floor within 2e-6 of dpacct's upper end: h 2^-14, n 122 880 | 5.192597586 | 131.4 M |
| T 1e4 | dpacct ``epsilon`` (certified; bracket from 5.192542999) | 5.192605208 | 185.5 M |
| T 1e4 | Opacus RDP | 5.631992369 | 115.3 M |
| T 1e6 | floor within the width (0.0153): h 2^-12, n 122 880 | 61.853294600 | **104.5 M** |
| T 1e6 | floor within 2e-6 of dpacct's upper end: h 2^-14, n 786 432 | 61.838242618 | 602.8 M |
| T 1e6 | dpacct ``epsilon`` (certified; bracket from 61.822866205) | 61.838125666 | 466.6 M |
| T 1e6 | Opacus RDP | 65.102771222 | 141.5 M |

So the bare FFT is below Opacus' RDP call only at the accuracy of the bracket's width
(0.57x and 0.74x); at the accuracy of dpacct's own upper end it is 1.14x Opacus at T 1e4
and 4.3x at T 1e6, where its transforms alone (231.7 M of pocketfft) exceed Opacus' whole
call and it costs more than dpacct's certified ladder (466.6 M): the ladder's fine early
levels and coarse late ones are cheaper per unit of accuracy than one uniform grid.  The
single power's error is second order in ``h`` (T 1e4: +3.3e-5 at 2^-13, -7.6e-6 at 2^-14
from dpacct's upper end, Richardson limit about 5.192584).

``--certified`` (the same single power with the library's pessimistic discretisation,
Chernoff window and round-off certificate): the window is 2.4x (T 1e4, 291 600 points at
2^-14) to 3.9x (T 1e6, 480 000 at 2^-12) the bare one's, and the round-off certificate,
which grows with the power ``T``, is 5e-10 (T 1e4) and 4.2e-8 (T 1e6): at the library's
limit (10 tail budgets, 1e-11) the single power declines on every grid, and allowed 1e-9 /
1e-7 it answers 5.192611057 (h 2^-14, looser than the ladder's 5.192605208) and 61.852799
(h 2^-12).  This is why the ladder squares to ``2^m`` before its spectral power (the
certificate scales with ``T / 2^m``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from benchmarks.dpsgd_floor import (
    DELTA,
    ROWS,
    _recording,
    callgrind,
    callgrind_script,
    parse_rows,
)

__all__ = ["callgrind_floor", "certified_single_power", "fast_lengths", "floor_epsilon", "main",
           "search"]

#: Newton steps of the saddle point (any tilt near it centres the window well enough)
NEWTON = 4
#: one-step x range in standard deviations of the mixture's components (below 0, above 1)
Z_LO, Z_HI = 12.0, 8.0


def fast_lengths(lo: int, hi: int) -> list[int]:
    """Every ``2^a 3^b 5^c`` in ``[lo, hi]``, ascending (pocketfft's fast lengths)."""
    out = set()
    p2 = 1
    while p2 <= hi:
        p3 = p2
        while p3 <= hi:
            p5 = p3
            while p5 <= hi:
                if p5 >= lo:
                    out.add(p5)
                p5 *= 5
            p3 *= 3
        p2 *= 2
    return sorted(out)


def floor_epsilon(q: float, sigma: float, steps: int, h: float, n: int, target: float,
                  delta: float = DELTA) -> float:
    """epsilon at ``delta`` of ``steps`` compositions of the remove direction, by one
    tilted FFT power on the grid ``h Z`` and ``n`` points (see the module docstring);
    ``target`` centres the tilt and the window (an estimate of the answer)."""
    import numpy as np
    from scipy.special import ndtr

    s2 = sigma * sigma
    xlo, xhi = -Z_LO * sigma, 1.0 + Z_HI * sigma
    llo = math.log1p(q * math.expm1((2 * xlo - 1) / (2 * s2)))
    lhi = math.log1p(q * math.expm1((2 * xhi - 1) / (2 * s2)))
    jlo, jhi = math.floor(llo / h), math.ceil(lhi / h)
    loss = np.arange(jlo, jhi + 1) * h
    with np.errstate(divide="ignore", invalid="ignore"):
        x = s2 * np.log(np.expm1(loss) / q + 1.0) + 0.5  # the loss's inverse
    if q < 1.0:
        x[loss <= math.log1p(-q)] = -np.inf  # below the loss's infimum
    x[-1] = np.inf
    cdf_q = ndtr(x / sigma)
    p_bin = np.diff((1.0 - q) * cdf_q + q * ndtr((x - 1.0) / sigma))
    q_bin = np.diff(cdf_q)
    e = np.exp(-loss)
    upper = np.clip((p_bin * e[:-1] - q_bin) / (e[:-1] - e[1:]), 0.0, p_bin)
    pmf = np.zeros(loss.size)
    pmf[1:] += upper
    pmf[:-1] += p_bin - upper
    # the saddle point: steps * (tilted mean per step) = target
    per = target / steps
    u = loss - per
    # safeguarded Newton on the tilted mean (increasing in theta), kept where exp is finite
    lo, hi = 0.0, 700.0 / max(float(np.abs(u).max()), 1e-300)
    theta = min(1.0, hi / 2)
    for _ in range(NEWTON):
        w = pmf * np.exp(theta * u)
        m0 = w.sum()
        m1, m2 = (w * u).sum() / m0, (w * u * u).sum() / m0
        lo, hi = (theta, hi) if m1 < 0 else (lo, theta)
        theta -= m1 / max(m2 - m1 * m1, 1e-300)
        if not lo < theta < hi:
            theta = 0.5 * (lo + hi)
    w = pmf * np.exp(theta * u)
    mass = w.sum()
    w /= mass
    # fold modulo n, then one transform, the power, one inverse
    pad = (-w.size) % n
    w = np.concatenate([w, np.zeros(pad)]).reshape(-1, n).sum(axis=0)
    y = np.fft.irfft(np.fft.rfft(w) ** steps, n)
    # y[k] holds absolute index steps * jlo + k (mod n): read the window centred on target
    base = round(target / h) - n // 2
    y = np.roll(y, -((base - steps * jlo) % n))
    # only the upper part of the window is read (epsilon lies near its centre): un-tilted
    # without logs (the exponent steps * log(mass) - theta d is the Chernoff one, modest)
    top = n // 2 - n // 8
    d = (base + top + np.arange(n - top)) * h - target
    p = np.maximum(y[top:], 0.0) * np.exp(steps * math.log(mass) - theta * d)
    e = np.exp(-d)
    a = np.cumsum(p[::-1])[::-1]
    b = np.cumsum((p * e)[::-1])[::-1]  # scaled by e^target
    # delta at eps in (node k-1, node k]: a[k] - e^(eps - target) b[k]
    at_nodes = a[1:] - b[1:] / e[:-1]
    k = int(np.flatnonzero(at_nodes <= delta)[0]) + 1
    return target + math.log((a[k] - delta) / b[k])

def _odd(n: int) -> int:
    """``n`` without its factors of two."""
    while n % 2 == 0:
        n //= 2
    return n


def _reference(q: float, sigma: float, steps: int) -> tuple[float, float]:
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    mech = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)],
                   counts=[steps])
    lo, hi = mech.epsilon_bounds(DELTA)
    return float(lo), float(hi)


def search(tag: str, steps_h: list[float] | None = None, within: float | None = None) -> dict:
    """The cheapest (smallest ``n``) step and length whose answer stays within the
    bracket's width (``within``: that relative distance instead) of dpacct's upper end
    at every listed length up to 4x."""
    q, sigma, steps = ROWS[tag]
    lo, hi = _reference(q, sigma, steps)
    width = hi - lo if within is None else within * hi
    tried = []
    best = None
    for h in steps_h or [2.0**-k for k in range(7, 16)]:
        # four lengths an octave (2^a times 1, 3, 5, 15), windows of 1 to 400 loss units
        lengths = [n for n in fast_lengths(1 << 10, 1 << 21)
                   if n // _odd(n) >= 64 and _odd(n) in (1, 3, 5, 15) and 1 <= n * h <= 400]
        got: dict = {}

        def answer(n: int, h: float = h, got: dict = got) -> float:
            if n not in got:
                try:
                    got[n] = floor_epsilon(q, sigma, steps, h, n, hi)
                except (IndexError, ValueError, OverflowError):
                    got[n] = math.nan
            return got[n]

        first = None
        for n in lengths:
            if abs(answer(n) - hi) <= width and all(
                abs(answer(m) - hi) <= width for m in lengths if n < m <= 4 * n
            ):
                first = n
                break
        tried.append({"h": h, "n": first, "eps": None if first is None else got[first]})
        if first is not None and (best is None or first < best["n"]):
            best = {"h": h, "n": first, "eps": got[first]}
    return {"row": tag, "lower": lo, "upper": hi, "width": hi - lo, "within": width,
            "tried": tried,
            "best": best}


def certified_single_power(tag: str, h: float, max_err: float) -> dict | None:
    """The same composition *certified*: the library's pessimistic two-scale
    discretisation of one step on ``h`` and one certified spectral power to ``T``
    (:func:`~dpacct.accountant.pld.twoscale._spectral_top`: the Chernoff window, the
    aliasing and round-off bounds added to the mass at ``+inf``), its certificate allowed
    up to ``max_err`` (the library allows 10 tail budgets, 1e-11 at delta 1e-5) and its
    window up to 2^21 points.  ``{"answer", "certificate", "points", "transforms"}``, or
    None where it declines."""
    import dpacct.accountant.pld.twoscale as ts
    from dpacct.accountant import poisson_subsample
    from dpacct.accountant.pld.pld_settings import LAW_TAIL_FRACTION, PLDSettings
    from dpacct.mechanisms import GaussianMechanism

    q, sigma, steps = ROWS[tag]
    law = poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)._loss_laws()[0]
    tail = PLDSettings(None, DELTA).tail
    kept = ts.SPECTRAL_MAX_N
    ts.SPECTRAL_MAX_N = 1 << 21
    try:
        with _recording([]) as calls:
            split = ts.discretize_split(law, h, pessimistic=True,
                                        tail=tail * LAW_TAIL_FRACTION / steps)
            top = ts._spectral_top(split, None, steps, h, tail, max_err, None)
    finally:
        ts.SPECTRAL_MAX_N = kept
    if top is None:
        return None
    return {"answer": top.epsilon(DELTA), "certificate": top.inf_mass,
            "points": sum(int(n) * (s[0] if len(s) > 1 else 1) for _, n, s in calls),
            "transforms": len(calls)}


_FLOOR_CHILD = """
import sys, time
import numpy as np
import scipy.special
from benchmarks.dpsgd_floor_min import floor_epsilon
q, s, t, h, n, target = (float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]),
                         float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
time.process_time()
r = floor_epsilon(q, s, t, h, n, target)
time.process_time()
print(repr(r))
"""


def callgrind_floor(python: str, tag: str, h: float, n: int, target: float) -> dict:
    """Instructions of one cold :func:`floor_epsilon` in a fresh ``python`` process
    (numpy and scipy.special imported first, not counted; pocketfft's plan for ``n`` is
    built inside, as in the call it is compared with)."""
    q, sigma, steps = ROWS[tag]
    root = str(Path(__file__).resolve().parents[1])
    return callgrind_script(python, _FLOOR_CHILD,
                            [str(q), str(sigma), str(steps), repr(h), str(n), repr(target)],
                            prefix="dpsgd_floor_min_", cwd=root)


def main(argv: list[str] | None = None) -> int:
    import sys

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4,1e6", help="comma-separated: 1e4, 1e6")
    ap.add_argument("--no-callgrind", action="store_true", help="the search only")
    ap.add_argument("--certified", action="store_true",
                    help="instead: the single power certified (the library's discretisation "
                         "and spectral power) at the steps of the floor, certificate limits "
                         "1e-11 to 1e-4")
    ap.add_argument("--floor-only", action="store_true",
                    help="callgrind the floor alone (not dpacct's call nor Opacus')")
    ap.add_argument("--within", type=float, default=None,
                    help="relative distance to dpacct's upper end the floor must reach "
                         "(default: the certified bracket's width)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter of dpacct's call under callgrind (default: this one)")
    args = ap.parse_args(argv)
    rows = parse_rows(args.rows)
    if args.certified:
        print("| row | h | certificate limit | answer | certificate (mass at +inf) | points "
              "(transforms) |")
        print("| --- | --- | --- | --- | --- | --- |")
        for tag in rows:
            for k in (12, 13, 14):
                for limit in (1e-11, 1e-9, 1e-7, 1e-4):
                    got = certified_single_power(tag, 2.0**-k, limit)
                    if got is None:
                        print(f"| T {tag} | 2^-{k} | {limit:g} | declines | | |")
                        continue
                    print(f"| T {tag} | 2^-{k} | {limit:g} | {got['answer']:.9f} | "
                          f"{got['certificate']:.3g} | {got['points']} ({got['transforms']}) |",
                          flush=True)
                    break
        return 0
    if args.within is not None and not 0 < args.within < 1:
        raise ValueError(f"within must be in (0, 1), got {args.within}")
    found = [search(tag, within=args.within) for tag in rows]
    print("| row | h | smallest n within the width | its answer |")
    print("| --- | --- | --- | --- |")
    for f in found:
        for t in f["tried"]:
            n = "-" if t["n"] is None else str(t["n"])
            e = "-" if t["eps"] is None else f"{t['eps']:.9f}"
            print(f"| T {f['row']} | 2^{round(math.log2(t['h']))} | {n} | {e} |")
        print(f"| T {f['row']} | dpacct bracket | | [{f['lower']:.9f}, {f['upper']:.9f}] "
              f"(width {f['width']:.3g}; asked within {f['within']:.3g}) |")
    if args.no_callgrind:
        return 0
    print()
    print("| row | what | answer | instructions (M) | by category (M) |")
    print("| --- | --- | --- | --- | --- |")
    for f in found:
        b = f["best"]
        sides = []
        if b is not None:
            got = callgrind_floor(sys.executable, f["row"], b["h"], b["n"], f["upper"])
            sides.append((f"floor: h 2^{round(math.log2(b['h']))}, n {b['n']}", got))
        if not args.floor_only:
            sides.append(("dpacct epsilon", callgrind(args.python, f["row"], "epsilon")))
            sides.append(("Opacus RDP", callgrind(args.python, f["row"], "opacus")))
        for what, got in sides:
            cats = ", ".join(f"{k} {v / 1e6:.1f}" for k, v in got["categories"].items())
            print(f"| T {f['row']} | {what} | {got['answer']} | {got['total'] / 1e6:.1f} | "
                  f"{cats} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
