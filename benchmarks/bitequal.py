"""Bit-equality of library changes meant to keep every value: an old checkout against this tree.

Written for session 25's cuts (issue 37); add a family for the next bit-equal change.

Each case is run by two interpreters (``--old`` runs main's code: system ``python``,
whose ``dpacct`` is /work/main; the new side is this process's ``dpacct``) and every
float compared by its ``repr`` (arrays by their bytes' SHA-256).  Cases:

* ``steinke``: ``steinke_p_value`` over a sweep of (m, r, v, epsilon, delta);
* ``bins``: the k = 2 law's binning kernels (``_bin_pairs``, ``_bin_cells``) on seeded
  random inputs, the histogram and the returned charge;
* ``k2``: whole k = 2 laws (``three_atoms`` at one and several epochs, and
  ``k2_remove_atoms``) at a few small settings;
* ``kaff``: the k >= 3 law's ``_bin_affine`` on seeded random inputs;
* ``online``: online loops (every query of a decaying and a constant loop, with and
  without a budget);
* ``sgm``: Poisson-subsampled Gaussian laws (session 30: one copy of their distribution
  functions): the shared-tail bin masses and end values on grids of 3 to 2^16 + 1
  edges (infinite edges too), the four public distribution functions, and the batched
  quantile searches' memos (``prefill_quantiles``) of 200 seeded laws.

Usage::

    python -m benchmarks.bitequal --old python [--only steinke,bins]

Prints one line per case family: the number of values compared and how many differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

FAMILIES = ("steinke", "bins", "kaff", "k2", "online", "sgm")


def _h(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    return f"{a.dtype}{a.shape}:" + hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _steinke() -> list:
    from dpacct.mechanisms.audit_one_run import steinke_p_value

    rng = np.random.default_rng(2511)
    out = []
    for _ in range(400):
        m = int(rng.integers(1, 3000))
        r = int(rng.integers(0, m + 1))
        v = int(rng.integers(0, r + 1))
        eps = float(rng.choice([0.0, rng.uniform(0, 8), rng.uniform(0, 40)]))
        delta = float(rng.choice([0.0, 10 ** rng.uniform(-12, -1)]))
        out.append(repr(steinke_p_value(m, r, v, eps, delta)))
    return out


def _bins() -> list:
    import dpacct.accountant.transformers.random_allocation_k2_three as m3

    rng = np.random.default_rng(2512)
    out = []
    for i in range(300):
        t = int(rng.integers(3, 200))
        nr = int(rng.integers(1, 80))
        r = np.sort(rng.uniform(0, 50, nr))
        r[0] = 0.0 if i % 3 == 0 else r[0]
        law = rng.dirichlet(np.ones(nr)) * (rng.uniform(0, 1e-15, nr) < 5e-16 if i % 4 == 0 else 1)
        nm = int(rng.integers(2, 3000))
        m = np.sort(rng.exponential(3.0, nm))
        w = rng.uniform(0, 1e-3, nm) * (rng.uniform(size=nm) < 0.9)
        off = int(rng.integers(100_000, 400_000))
        nbin = off + 400_000
        hist = np.zeros(nbin)
        hist[rng.integers(0, nbin, 50)] = rng.uniform(0, 1e-6, 50)
        if i % 2:
            j = int(rng.integers(0, nm))
            tail = m3._bin_pairs(0.1, hist, law, r, m, w, j, float(w[j]), float(w[j] ** 2), t,
                                 off, 1e-22, 1e-16, 1e-12, 1e-4)
        else:
            sel = rng.uniform(size=nm) < 0.5
            tail = m3._bin_cells(0.1, hist, law, r, m, w, sel, t, off)
        out += [repr(tail), _h(hist)]
    return out


def _kaff() -> list:
    import dpacct.accountant.transformers.random_allocation_k_law as kl

    rng = np.random.default_rng(2513)
    out = []
    for _ in range(200):
        na, nb = int(rng.integers(1, 300)), int(rng.integers(1, 2000))
        a = rng.uniform(0, 5, na) * (rng.uniform(size=na) < 0.9)
        c = rng.uniform(0, 50, na)
        b = np.sort(rng.exponential(3.0, nb))
        wb = rng.uniform(0, 1e-3, nb)
        pc = rng.dirichlet(np.ones(na))
        off = 300_000
        hist = np.zeros(off + 300_000)
        drop = float(rng.choice([0.0, 1e-12, 1e-9]))
        ch = kl._bin_affine(hist, b, a, c, wb, pc, off, drop)
        out += [repr(ch), _h(hist)]
    return out


def _k2() -> list:
    import dpacct.accountant.transformers.random_allocation_k2 as k2
    import dpacct.accountant.transformers.random_allocation_k2_three as m3

    out = []
    for sigma, t in ((0.9, 5), (1.2, 4), (0.7, 10), (1.0, 20)):
        for several in (False, True):
            kw = {"log_theta": m3.three_settings(sigma, t)["log_theta_epochs"]} if several else {}
            v, q, ch = m3.three_atoms(sigma, t, **kw)
            out += [_h(v), _h(q), repr(ch)]
    for sigma, t in ((0.8, 3), (1.5, 30)):
        res = k2.k2_remove_atoms(sigma, t)
        out += [_h(x) if isinstance(x, np.ndarray) else repr(x) for x in res]
    return out


def _online() -> list:
    from dpacct.accountant import BudgetExceededError, PrivacyAccountant

    out = []
    for sigmas in ((1.2 * 0.999 ** np.arange(400)).tolist(), [0.9] * 400,
                   (2.0 * 0.9999 ** np.arange(1500)).tolist()):
        for budget in (None, 3.0):
            kw = {} if budget is None else {"budget_epsilon": budget, "budget_delta": 1e-5}
            acct = PrivacyAccountant(progress=False, **kw)
            for i, s in enumerate(sigmas):
                try:
                    acct.step(noise_multiplier=s, sample_rate=0.01)
                except BudgetExceededError:
                    out.append(f"refused {i}")
                    break
                if i % 7 == 0:
                    out.append(repr(acct.epsilon(1e-5)))
    return out


def _sgm() -> list:
    from dpacct.accountant.laws.loss_law import GaussianLossLaw, PoissonSubsampledLossLaw
    from dpacct.accountant.laws.quantile_batch import prefill_quantiles

    out = []
    for q in (1e-7, 1e-4, 0.01, 0.2, 0.9):
        for sigma in (0.5, 1.1, 4.0):
            for direction in ("remove", "add"):
                law = PoissonSubsampledLossLaw(GaussianLossLaw(1 / sigma), q, direction)
                lo, hi = law.quantile_bounds(1e-12)
                out.append(repr((lo, hi)))
                for n in (3, 1001, 2**16 + 1):
                    e = np.linspace(lo, hi, n)
                    if n == 1001:
                        e = np.concatenate(([-np.inf, lo - 5.0], e, [hi + 40.0, np.inf]))
                    m, nq, ends = law._bins_and_ends(e)
                    out += [_h(m), _h(nq), repr(ends)]
                    if n == 1001:
                        out += [_h(f(e)) for f in (law.cdf_p, law.sf_p, law.cdf_q, law.sf_q)]
    rng = np.random.default_rng(2514)
    laws = []
    for i in range(200):
        mu, q = float(np.exp(rng.uniform(-3.5, 3.4))), float(np.exp(rng.uniform(-23, -0.01)))
        laws.append(PoissonSubsampledLossLaw(GaussianLossLaw(mu), q, ("remove", "add")[i % 2]))
    prefill_quantiles([(law, t) for law in laws for t in (1e-20, 1e-12, 1e-6)], spread=laws)
    out += [repr(sorted(law.__dict__.get("_quantile_memo", {}).items(), key=repr)) for law in laws]
    return out


def _dump(only: list[str]) -> None:
    fns = {"steinke": _steinke, "bins": _bins, "kaff": _kaff, "k2": _k2, "online": _online,
           "sgm": _sgm}
    print(json.dumps({f: fns[f]() for f in only}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="python", help="the old side's interpreter (main's)")
    ap.add_argument("--only", default=",".join(FAMILIES))
    ap.add_argument("--dump", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = [f for f in args.only.split(",") if f]
    if args.dump:
        _dump(only)
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(here)!r}); "
            "from benchmarks.bitequal import main; "
            f"main(['--dump', '--only', {','.join(only)!r}])")
    # the old side runs this file's cases with main's dpacct (cwd outside any checkout)
    me = os.path.abspath(__file__)
    old_code = ("import importlib.util, sys; "
                f"spec = importlib.util.spec_from_file_location('lb', {me!r}); "
                "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); "
                f"mod.main(['--dump', '--only', {','.join(only)!r}])")
    old = json.loads(subprocess.run([args.old, "-c", old_code], cwd="/tmp", check=True,
                                    capture_output=True, text=True).stdout)
    new = json.loads(subprocess.run([sys.executable, "-c", code], cwd="/tmp", check=True,
                                    capture_output=True, text=True).stdout)
    bad = 0
    for f in only:
        diff = sum(a != b for a, b in zip(old[f], new[f], strict=True))
        bad += diff
        print(f"{f:8s} {len(new[f]):5d} values compared, {diff} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
