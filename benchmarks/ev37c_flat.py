"""Issue 37, session 34: many distinct steps composed flat -- a PROTOTYPE, not certified.

Issue 37 asks for 100 000 distinct phases in under 20 s and 200 MB, and "linear in
phases".  Session 29/30 found the ledger's fold bounded by every pass over a block's
points and named "another representation" as the lever.  This script measures the
representation that composes every step exactly with no blocks and no history:

1. **discretisation**: every distinct step ``(sigma, q)`` by connect-the-dots
   (Doroshenko et al. 2022, Algorithm 1) on one shared loss grid of step ``h / K``,
   fine over the step's bulk and every ``K``-th node over its long tail (the library's
   :func:`dpacct.accountant.pld.split_cells.split_cells`, one vectorised pass over
   all steps' nodes laid end to end, in blocks of bounded size), the tail beyond the
   per-step cut ``tau`` sent to ``+inf``;
2. **transforms**: the steps, a chunk of ``C`` at a time, scattered into a ``C x M``
   table (each step's node ``j`` at column ``j mod M``: a circular grid of ``M`` points
   that covers the composed loss's window) and transformed by one batched real FFT
   (``scipy.fft.rfft``, one thread);
3. **products**: each row's spectrum raised to its step count (repeated squaring) and
   the chunk's rows multiplied into one running spectrum;
4. **inverse**: ONE inverse real FFT of the running spectrum, the composed PMF read
   on its window (node ``i`` at the loss ``(i + M k) h / K`` in the window);
5. **query**: ``epsilon(delta)`` of the composed PMF (remove and add directions, the
   larger).

**UNSOUND as it stands** (an experiment, its answers estimates): no aliasing bound (the
window is the composed mean -10 / +14 standard deviations, the moments by Gauss-Hermite
quadrature of every step), no round-off bound of the transforms and products, negative
entries of the inverse transform clipped to zero.  The discretisation itself is the
library's dominating one.  A certified version would add those three bounds (the
Chernoff bound of the composed discrete loss and Higham's bound of every forward
transform, docs/theory/schedules.md, "The shared-grid composition and its error
terms"); they are not what decides its speed.

The window grows like the composed loss's standard deviation (``~sqrt(T)``) and every
step's transform is as long as the window, so the work is about ``N M log M``: that is
what the table below measures against the ledger.  ``--steps-limit`` composes only the
first steps of a schedule (on the full schedule's window) so that the time of the full
schedule can be extrapolated (a linear scaling, labelled so in the output).

Run from the repository root::

    python -m benchmarks.ev37c_flat --rows "1000 phases x 10" --step 1e-3 --factor 8
    python -m benchmarks.ev37c_flat --rows "100000 phases x 10" --steps-limit 1000

Timings depend on the machine's load: CPU seconds (``time.process_time``) of one process.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from collections.abc import Sequence

import numpy as np
import scipy.fft as sfft

from benchmarks.ledger_phases import ROWS as LEDGER_ROWS
from dpacct.accountant.pld.sgm_cells import _cell_ranges, _loss_of_x
from dpacct.accountant.pld.split_cells import CORE_SHARE, _by_blocks, _core_x, split_cells

__all__ = [
    "FLUSH",
    "GEOMETRIC_RUN",
    "ROWS",
    "callgrind_parts",
    "compose_flat",
    "discretise",
    "epsilon_of_pmf",
    "geometric_nodes",
    "int_power",
    "loss_moments",
    "main",
    "schedule",
    "window",
]

#: rows (:mod:`benchmarks.ledger_phases`' schedules): (kind, a, n), random phases
#: ("phases": n phases x 10, sigma U[0.8, 2], q U[0.001, 0.02], seed 0) or decaying sigma
#: ("decay": a * 0.9999^t, q 0.01, n steps of one); plus the 10 000 decaying steps of
#: sigma 1.5 (README's "schedule decay 10k": the ledger's bracket 0.31 % wide)
ROWS = {
    name: LEDGER_ROWS[name]
    for name in LEDGER_ROWS
    if LEDGER_ROWS[name][0] in ("phases", "decay")
}
ROWS["decaying 1.5, 10000 steps"] = ("decay", 1.5, 10_000)

#: tail nodes a doubling of their spacing (:func:`geometric_nodes`)
GEOMETRIC_RUN = 16

#: entries of the running spectrum below this are set to zero (no subnormal arithmetic)
FLUSH = 1e-200


def schedule(kind: str, a: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sigma, q, counts)`` of a row of :data:`ROWS`.

    Examples
    --------
    >>> s, q, k = schedule("decay", 2.0, 3)
    >>> [round(float(x), 6) for x in s], float(q[0]), int(k.sum())
    ([2.0, 1.9998, 1.9996], 0.01, 3)
    """
    if kind == "phases":
        rng = np.random.default_rng(0)
        s, q = rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n)
        return s, q, np.full(n, 10, dtype=np.int64)
    if kind == "decay":
        s = a * 0.9999 ** np.arange(n)
        return s, np.full(n, 0.01), np.ones(n, dtype=np.int64)
    raise ValueError(f"kind must be 'phases' or 'decay', got {kind!r}")


def loss_moments(sigma: np.ndarray, q: np.ndarray, add: bool, nodes: int = 96):
    """Mean and variance of every step's privacy loss (remove direction: ``L(x)``, ``x``
    from the mixture; add: ``-L(x)``, ``x ~ N(0, sigma^2)``), by Gauss-Hermite
    quadrature with ``nodes`` nodes (an estimate: it only places the window).

    Examples
    --------
    The remove direction's mean is the KL divergence, at ``q = 1`` the Gaussian's
    ``1 / (2 sigma^2)``, its variance ``1 / sigma^2``:

    >>> m, v = loss_moments(np.array([2.0]), np.array([1.0]), False)
    >>> round(float(m[0]), 9), round(float(v[0]), 9)
    (0.125, 0.25)
    """
    t, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    s, qq = sigma[:, None], q[:, None]
    x0 = s * t[None, :]
    if add:
        loss = -_loss_of_x(x0, s, qq)
        m1 = loss @ w
        m2 = (loss**2) @ w
    else:
        l0, l1 = _loss_of_x(x0, s, qq), _loss_of_x(x0 + 1.0, s, qq)
        m1 = (1 - q) * (l0 @ w) + q * (l1 @ w)
        m2 = (1 - q) * ((l0**2) @ w) + q * ((l1**2) @ w)
    return m1, np.maximum(m2 - m1**2, 0.0)


def window(mean: float, var: float, fine: float, left: float = 10.0, right: float = 14.0):
    """``(first node, M)``: the composed loss's window ``mean - left sd .. mean + right
    sd`` on the grid ``fine``, ``M`` a fast real-transform length.

    Examples
    --------
    >>> lo, m = window(0.0, 1.0, 0.5)
    >>> lo, m >= 48
    (-20, True)
    """
    sd = math.sqrt(var)
    lo = math.floor((mean - left * sd) / fine)
    hi = math.ceil((mean + right * sd) / fine)
    return lo, sfft.next_fast_len(hi - lo + 1, real=True)


def int_power(z: np.ndarray, k: int) -> np.ndarray:
    """``z ** k`` for an integer ``k >= 1`` by repeated squaring (complex arrays).

    Examples
    --------
    >>> complex(int_power(np.array([1j]), 10)[0])
    (-1+0j)
    """
    out, base = None, z
    while k:
        if k & 1:
            out = base.copy() if out is None else out * base
        k >>= 1
        if k:
            base = base * base
    return out


def geometric_nodes(sigma, q, step, factor, tau, add, run=GEOMETRIC_RUN):
    """The node sets of :func:`~dpacct.accountant.pld.split_cells._split_nodes` (fine
    bulk, the same cut, the same range) with the long tail's nodes spaced ``factor *
    2^(j // run)`` fine steps apart (``j`` the gap's rank from the cut) instead of
    ``factor``: a node function for :func:`~dpacct.accountant.pld.split_cells._by_blocks`.
    Connect-the-dots dominates on any node set (docs/theory/schedules.md, "Fine
    groups"), so the PMFs stay dominating; a bin of width ``w`` widens the loss by at
    most ``w^2 / 4`` times its mass, which the tail's small mass keeps small (measured,
    not bounded, here).

    Examples
    --------
    >>> f, c, cell, nodes = geometric_nodes(np.array([1.0]), np.array([0.01]), 1e-3, 8,
    ...                                     1e-15, False, 4)
    >>> d = np.diff(nodes)
    >>> int(d.min()), int(d.max()) > 8, bool(np.all(np.diff(d) >= 0))
    (1, True, True)
    """
    f_first, f_nb = _cell_ranges(sigma, q, step / factor, tau, add)
    f_last = f_first + f_nb
    core_l = _loss_of_x(_core_x(sigma, q, CORE_SHARE / factor**2), sigma, q)
    gaps = factor * 2 ** (np.arange(64 * run) // run)
    reach_at = np.concatenate([[0], np.cumsum(gaps)])  # j-th tail node's offset from the cut
    if not add:
        cut = np.clip(np.ceil(core_l / step).astype(np.int64) * factor, f_first, f_last)
        n_fine = cut - f_first + 1  # f_first .. cut
        t = np.searchsorted(reach_at, f_last - cut)  # cut + reach_at[1..t], the last >= f_last
        count = n_fine + t
        cell = np.repeat(np.arange(sigma.size), count)
        k = np.arange(cell.size) - np.repeat(np.cumsum(count) - count, count)
        nf = n_fine[cell]
        nodes = np.where(k < nf, f_first[cell] + k,
                         cut[cell] + reach_at[np.clip(k - nf + 1, 0, reach_at.size - 1)])
        return f_first, count, cell, nodes
    cut = np.clip(np.floor(-core_l / step).astype(np.int64) * factor, f_first, f_last)
    t = np.searchsorted(reach_at, cut - f_first)  # cut - reach_at[t..1], the first <= f_first
    count = t + (f_last - cut + 1)
    cell = np.repeat(np.arange(sigma.size), count)
    k = np.arange(cell.size) - np.repeat(np.cumsum(count) - count, count)
    tc = t[cell]
    nodes = np.where(k < tc, cut[cell] - reach_at[np.clip(tc - k, 0, reach_at.size - 1)],
                     cut[cell] + (k - tc))
    return cut - reach_at[t], count, cell, nodes


def discretise(sigma, q, step, factor, tau, add, geometric):
    """``(first, pmfs, infs)`` of every step: :func:`~dpacct.accountant.pld.split_cells.
    split_cells`, or on :func:`geometric_nodes` when ``geometric``."""
    if not geometric:
        return split_cells(sigma, q, step, factor, tau, add)
    return _by_blocks(sigma, q, step, factor, tau, add, geometric_nodes)


def _chunk_rows(first, pmfs, lo, m):
    """The flat (row, column, mass) of a chunk's PMFs on the circular grid of ``m``."""
    lengths = np.array([p.size for p in pmfs])
    flat = np.concatenate(pmfs)
    row = np.repeat(np.arange(len(pmfs)), lengths)
    col = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    col = (col + np.repeat(first, lengths) - lo) % m
    nz = flat > 0
    return row[nz], col[nz], flat[nz]


def compose_flat(sigma, q, counts, step, factor, tau, add, chunk, limit=None, sds=(10.0, 14.0),
                 geometric=False):
    """The composed PMF of every step (one direction) on its window, and the CPU by part.

    Returns ``(losses, pmf, inf_mass, parts)``: the composed PMF at the losses
    ``losses`` (the window's nodes), the mass at ``+inf`` (every step's cut tail), and
    the CPU seconds of ``discretise``, ``transforms``, ``products``, ``inverse`` plus
    the window's ``M`` and the number of steps composed.  An estimate (see the module).
    ``sds``: the window's reach below and above the composed mean, in standard
    deviations (a few hundred steps need 30 above: their right tail is one step's; at
    1 000 random phases x 10, 14 / 20 / 30 give the same epsilon to 3e-8).

    Examples
    --------
    Two Gaussian steps (``q = 1``) compose to the Gaussian loss of ``sigma / sqrt(2)``:
    its mean ``1 / sigma^2``.

    >>> s, q, k = np.array([1.0]), np.array([1.0]), np.array([2])
    >>> loss, p, inf, parts = compose_flat(s, q, k, 1e-2, 1, 1e-15, False, 4)
    >>> round(float(np.sum(loss * p)), 3)
    1.0
    """
    fine = step / factor
    mean, var = loss_moments(sigma, q, add)
    lo, m = window(float(counts @ mean), float(counts @ var), fine, *sds)
    n = sigma.size if limit is None else min(limit, sigma.size)
    parts = {"discretise": 0.0, "scatter": 0.0, "transforms": 0.0, "products": 0.0, "inverse": 0.0}
    acc = np.ones(m // 2 + 1, dtype=complex)
    inf_keep = 1.0
    for start in range(0, n, chunk):
        sl = slice(start, min(start + chunk, n))
        t0 = time.process_time()
        first, pmfs, infs = discretise(sigma[sl], q[sl], step, factor, tau, add, geometric)
        parts["nodes"] = parts.get("nodes", 0) + int(np.count_nonzero(np.concatenate(pmfs)))
        t1 = time.process_time()
        row, col, val = _chunk_rows(first, pmfs, lo, m)
        # summed, not assigned: a step's range longer than the window wraps onto itself
        table = np.bincount(row * m + col, weights=val, minlength=len(pmfs) * m)
        table = table.reshape(len(pmfs), m)
        t2 = time.process_time()
        spec = sfft.rfft(table, axis=1, workers=1)
        del table
        t3 = time.process_time()
        kc = counts[sl]
        for k in np.unique(kc):
            acc *= np.prod(int_power(spec[kc == k], int(k)), axis=0)
        # no subnormals in the running product (their arithmetic is ~100x slower); the
        # entries dropped move the composed PMF by at most FLUSH * m in l1 (not charged)
        acc[np.abs(acc) < FLUSH] = 0.0
        inf_keep *= float(np.prod((1.0 - infs) ** kc))
        t4 = time.process_time()
        parts["discretise"] += t1 - t0
        parts["scatter"] += t2 - t1
        parts["transforms"] += t3 - t2
        parts["products"] += t4 - t3
    t0 = time.process_time()
    pmf = np.maximum(sfft.irfft(acc, n=m, workers=1), 0.0)
    # every row was placed at column (node - lo), so the composition's column i is the
    # node i + (steps) * lo modulo m: rotate it into the window lo .. lo + m - 1
    total_lo = int(np.sum(counts[:n])) * lo
    pmf = np.roll(pmf, (total_lo - lo) % m)
    losses = (lo + np.arange(m)) * fine
    parts["inverse"] = time.process_time() - t0
    parts["M"] = m
    parts["steps"] = n
    return losses, pmf, 1.0 - inf_keep, parts


def epsilon_of_pmf(losses: np.ndarray, pmf: np.ndarray, inf_mass: float, delta: float) -> float:
    """Smallest ``epsilon >= 0`` with ``inf_mass + sum_{l > eps} p_l (1 - e^{eps - l})
    <= delta`` (``losses`` increasing), solved exactly inside its bin.

    Examples
    --------
    One atom of mass 1/2 at loss 1 and the rest at 0: ``delta(eps) = (1 - e^{eps - 1})/2``.

    >>> e = epsilon_of_pmf(np.array([0.0, 1.0]), np.array([0.5, 0.5]), 0.0, 0.25)
    >>> round(e, 12) == round(1 + math.log(0.5), 12)
    True
    """
    ref = float(losses[np.argmax(pmf)])
    s1 = np.cumsum(pmf[::-1])[::-1] + inf_mass  # mass at losses >= l_i
    s2 = np.cumsum((pmf * np.exp(ref - losses))[::-1])[::-1]  # sum p e^{ref - l}
    # delta at eps = l_{i-1} (bins above it: i..): s1[i] - e^{l_{i-1} - ref} s2[i]
    d_at = np.append(s1[1:] - np.exp(losses[:-1] - ref) * s2[1:], inf_mass)
    i = int(np.argmax(d_at <= delta))  # first node whose delta is within
    if i == 0 or d_at[i] > delta:
        return max(float(losses[i]), 0.0)
    # inside (l_{i-1}, l_i]: delta(eps) = s1[i] - e^{eps - ref} s2[i]
    eps = ref + math.log((s1[i] - delta) / s2[i])
    return max(min(eps, float(losses[i])), 0.0)


def run_row(name: str, args) -> dict:
    """One row, both directions: the larger epsilon, CPU by part, peak MB."""
    kind, a, n = ROWS[name]
    sigma, q, counts = schedule(kind, a, n)
    out = {"row": name, "step": args.step, "factor": args.factor, "tau": args.tau}
    t0 = time.process_time()
    eps, parts = [], {}
    for add in (False, True)[: 2 if args.both else 1]:
        loss, p, inf, pp = compose_flat(
            sigma, q, counts, args.step, args.factor, args.tau, add, args.chunk,
            args.steps_limit, (10.0, args.right), args.geometric,
        )
        tq = time.process_time()
        eps.append(epsilon_of_pmf(loss, p, inf, args.delta))
        pp["query"] = time.process_time() - tq
        for k, v in pp.items():
            parts[k] = parts.get(k, 0) + v if k not in ("M", "steps") else v
    out["geometric"] = args.geometric
    out["cpu"] = time.process_time() - t0
    out["epsilons"] = eps
    out["epsilon"] = max(eps)
    out["parts"] = parts
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.steps_limit is not None and args.steps_limit < n:
        out["extrapolated_cpu"] = out["cpu"] * n / parts["steps"]
    return out


_CG_CHILD = r"""
import sys, time
import numpy as np
import scipy.fft as sfft
from benchmarks import ev37c_flat as flat
part, n, geometric, m = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
s, q, k = flat.schedule("phases", 2.0, n)
if part == "discretise":
    time.process_time()
    nodes = 0
    for add in (False, True):
        f, p, i = flat.discretise(s, q, 1e-3, 8, 1e-15, add, geometric)
        nodes += sum(int(np.count_nonzero(x)) for x in p)
    time.process_time()  # the counted part ends here (callgrind's second dump)
    print(nodes)
else:  # one chunk of n rows of m points: table, transform, 10th powers, product
    f, p, i = flat.discretise(s, q, 1e-3, 8, 1e-15, False, False)
    acc = np.ones(m // 2 + 1, dtype=complex)
    time.process_time()
    row, col, val = flat._chunk_rows(f, p, 0, m)
    table = np.bincount(row * m + col, weights=val, minlength=n * m).reshape(n, m)
    spec = sfft.rfft(table, axis=1, workers=1)
    acc *= np.prod(flat.int_power(spec, 10), axis=0)
    time.process_time()
    print(n * m)
"""


def callgrind_parts(python: str, n: int, m: int) -> list[dict]:
    """Instructions (valgrind's callgrind, load-independent) of the prototype's parts:
    the discretisation of ``n`` random phases in both directions (split cells and
    geometric tails; per node) and one chunk of ``n`` rows of ``m`` points (the table,
    the transform, the powers and the product; per row point)."""
    from benchmarks.dpsgd_floor import callgrind_script

    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    out = []
    for part, geo in (("discretise", "0"), ("discretise", "1"), ("chunk", "0")):
        rec = callgrind_script(python, _CG_CHILD, [part, str(n), geo, str(m)],
                               prefix="ev37c_cg_", cwd=root)
        units = int(rec["answer"])
        out.append({"part": part + (" geometric" if geo == "1" else ""), "units": units,
                    "instructions": rec["total"], "per_unit": rec["total"] / units})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.ev37c_flat", description=__doc__.split("\n")[0]
    )
    p.add_argument("--rows", nargs="+", default=["1000 phases x 10"], choices=list(ROWS))
    p.add_argument("--step", type=float, default=1e-3, help="the tail nodes' spacing h")
    p.add_argument("--factor", type=int, default=8, help="K: the bulk's step is h / K")
    p.add_argument("--tau", type=float, default=1e-15, help="per-step tail cut")
    p.add_argument("--chunk", type=int, default=0, help="rows a batch (0: from --table-mb)")
    p.add_argument("--table-mb", type=float, default=48.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--right", type=float, default=14.0,
                   help="the window's reach above the composed mean, standard deviations")
    p.add_argument("--steps-limit", type=int, default=None,
                   help="compose only the first distinct steps (the time extrapolated)")
    p.add_argument("--geometric", action="store_true",
                   help="tail nodes at doubling spacings (geometric_nodes)")
    p.add_argument("--remove-only", dest="both", action="store_false")
    p.add_argument("--callgrind", nargs=2, type=int, metavar=("N", "M"),
                   help="instructions of the parts instead: N phases, rows of M points")
    args = p.parse_args(argv)
    if args.callgrind:
        for rec in callgrind_parts(sys.executable, *args.callgrind):
            print(json.dumps(rec), flush=True)
        return 0
    for name in args.rows:
        if not args.chunk:
            kind, a, n = ROWS[name]
            s, q, k = schedule(kind, a, n)
            mean, var = loss_moments(s, q, False)
            fine = args.step / args.factor
            _, m = window(float(k @ mean), float(k @ var), fine, 10.0, args.right)
            args.chunk = max(1, int(args.table_mb * 2**20 // (24 * m)))
        rec = run_row(name, args)
        rec["chunk"] = args.chunk
        print(json.dumps(rec), flush=True)
        args.chunk = 0 if args.chunk == rec["chunk"] else args.chunk
    return 0


if __name__ == "__main__":
    sys.exit(main())
