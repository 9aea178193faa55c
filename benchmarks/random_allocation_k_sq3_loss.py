"""Issue 39, k = 3: where Proposition 12 loses the sum-of-squares gain (experiments).

    python -m benchmarks.random_allocation_k_sq3_loss SIGMA T VARIANT[,VARIANT...]
        [--delta 1e-6] [--coarse]

Each VARIANT switches one of Proposition 12's roundings off or makes it exact, **most of
them unsound** (they measure what a rounding costs, they are not bounds):

* ``base``: the law as it is; ``prop10``: Proposition 10's law (main's);
* ``own_sq`` (unsound): each coordinate's chord atoms credited their own square (not the
  cell's lower end's);
* ``x3_sq`` (unsound): the shifted other of region 3's ``E_1`` credited ``x_3^2``, not ``a^2``;
* ``band`` (unsound): below Lemma 11's band ``hat G_3`` taken as Maclaurin's (the credit
  ``(n - 2) r (-v) / 2`` dropped);
* ``cuts``: no cut raised (a lattice per cut; sound, costly); ``cutsX``: cuts raised onto
  a log step ``X`` (default 0.1);
* ``g0``: ``g_0`` 1/64 and 8 192 rows (sound, costly); ``rho``: ``rho`` 1.01 (sound);
  ``top``: no rows moved down (top 60 sd; sound); ``cap``: cap 10^4 (sound);
  ``h``: per-coordinate step 0.05 (sound); ``coarse``: the sum's coarse lattice (0.05,
  0.02 sd) (sound);
* ``floor``: every rounding of a sum of squares a floor (session 28's; sound);
* ``a+b``: several at once.

``--coarse``: Proposition 10's cells at ``dl3`` 0.2, ``eta`` 0.01 (both laws), for speed.
Prints epsilon at delta of the remove law's own atoms and CPU seconds (``process_time``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import time

import numpy as np

from dpacct.accountant.transformers import random_allocation_k_law_sq3 as sq3
from dpacct.accountant.transformers.random_allocation_k2_three import _term_shares
from dpacct.accountant.transformers.random_allocation_k_law4 import remove_atoms4

from .random_allocation_k_sq_law import epsilon_at


def _own_sq_term_law(sigma, cut, h, g, cap=sq3._CAP):
    """``pair_term_law`` with each atom credited its own square (unsound)."""
    lower, upper = _term_shares(sigma, math.exp(cut), h, 1 << 62)
    top = lower.size
    a2 = np.minimum((np.arange(top + 1) * h) ** 2, cap)
    j = np.floor(a2 / g * (1 - 1e-12)).astype(np.int64)
    w = np.zeros((int(j.max()) + 1, top + 1))
    np.add.at(w, (j[:-1], np.arange(top)), lower)
    np.add.at(w, (j[1:], np.arange(1, top + 1)), upper)
    return w


@contextlib.contextmanager
def variant(names: set[str]):
    """Patch :mod:`.random_allocation_k_law_sq3` for the variants ``names``."""
    saved = {k: getattr(sq3, k) for k in ("pair_term_law", "pair_power", "hat_elementary",
                                          "_build4", "_G0", "_ROWS", "_H", "_COARSE",
                                          "_S_FLOOR")}
    cap = 1e4 if "cap" in names else sq3._CAP
    try:
        term = _own_sq_term_law if "own_sq" in names else saved["pair_term_law"]
        sq3.pair_term_law = functools.partial(term, cap=cap)
        if "top" in names:
            sq3.pair_power = functools.partial(saved["pair_power"], top_sd=60.0)
        if "floor" in names:
            sq3._S_FLOOR = True
        if "g0" in names:
            sq3._G0, sq3._ROWS = 1.0 / 64, 8192
        if "h" in names:
            sq3._H = 0.05
        if "coarse" in names:
            sq3._COARSE = (0.05, 0.02)
        if "band" in names:
            def hat(total, squares, n, j, _f=saved["hat_elementary"]):
                t = np.asarray(total, float)
                if j == 3:
                    squares = np.maximum(squares, t * t / n)
                return _f(t, squares, n, j)
            sq3.hat_elementary = hat
        if "x3_sq" in names:
            def build(*a, binner, _f=saved["_build4"], **kw):
                def b2(hist, ws, x, x3, coef, k, lat, shift, shift_sq, off):
                    if shift:
                        shift_sq = shift * shift
                    return binner(hist, ws, x, x3, coef, k, lat, shift, shift_sq, off)
                return _f(*a, binner=b2, **kw)
            sq3._build4 = build
        yield
    finally:
        for k, v in saved.items():
            setattr(sq3, k, v)


def run(sigma: float, t: int, name: str, coarse: bool, delta: float):
    """``(epsilon, CPU s)`` of one variant."""
    names = set(name.split("+"))
    kw = {"dl3": 0.2, "eta": 0.01} if coarse else {}
    c0 = time.process_time()
    if names == {"prop10"}:
        v, q, c = remove_atoms4(sigma, t, 3, **kw)
    else:
        extra = {}
        for nm in names:  # "cuts": no cut raised; "cutsX": raised onto a log step X
            if nm.startswith("cuts"):
                extra["cut_step"] = float(nm[4:] or 1e-4)
        if "rho" in names:
            extra["rho"] = 1.01
        with variant(names):
            v, q, c = sq3.remove_atoms_sq3(sigma, t, **kw, **extra)
    return epsilon_at(v, q, c, delta), time.process_time() - c0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sigma", type=float)
    ap.add_argument("t", type=int)
    ap.add_argument("variants")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--coarse", action="store_true")
    a = ap.parse_args(argv)
    for name in a.variants.split(","):
        eps, cpu = run(a.sigma, a.t, name, a.coarse, a.delta)
        print(f"| {a.sigma} | {a.t} | {name} | {eps:.5f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
