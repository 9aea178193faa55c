"""DP sum, mean and variance pipelines: dpacct's derived stabilities against OpenDP 0.16.

The same pipeline in both libraries, at the same claimed pure epsilon under add/remove
(OpenDP: symmetric distance 1), the noise scale set by each library's own stability
(dpacct: ``stability / epsilon``; OpenDP: ``map(1)`` of the transformation over
epsilon), the same data, one seed per repetition:

* sum: clamp to ``[L, U]`` -> sum -> Laplace, with bounds of one sign ``[0, 100]`` and
  of mixed sign ``[-50, 100]`` (OpenDP states ``max(U - L, max(|L|, |U|))`` at distance
  1, dpacct ``max(|L|, |U|)``: ``docs/theory/transformations.md``);
* mean and variance: clamp to ``[0, 10]`` -> resize to the public ``n`` -> mean
  (variance, ddof 1) -> Laplace.

The metric is the absolute error of the release against the non-private statistic of
the clamped (and resized) data.  Both libraries add the float round-off of their sums
to the stability (a few parts in 10^9 of it).
"""

from __future__ import annotations

import numpy as np

from benchmarks.algos._common import median_iqr, peer_version

EPSILON = 1.0
N = 1000


def _data(seed: int, n: int = N) -> np.ndarray:
    rng = np.random.default_rng([seed, 38])
    return rng.normal(30.0, 40.0, n)          # spills over every bound used here


def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    return dp


def _pipelines(dp, kind: str, bounds: tuple[float, float]):
    """``(ours, truth, theirs)``: callables ``(data, seed) -> value``."""
    from dpacct.mechanisms import bounded_mean, bounded_sum, bounded_variance, clamp, resize

    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    if kind == "sum":
        t_ours = clamp(*bounds) >> bounded_sum(bounds)
        t_theirs = space >> dp.t.then_clamp(bounds) >> dp.t.then_sum()
    else:
        make = bounded_mean if kind == "mean" else bounded_variance
        t_ours = clamp(*bounds) >> resize(N, float(np.mean(bounds))) >> make(bounds, N)
        stat = dp.t.then_mean() if kind == "mean" else dp.t.then_variance()
        t_theirs = (space >> dp.t.then_clamp(bounds)
                    >> dp.t.then_resize(size=N, constant=float(np.mean(bounds))) >> stat)
    ours = t_ours.then_laplace(scale=t_ours.stability / EPSILON)
    theirs = t_theirs >> dp.m.then_laplace(scale=t_theirs.map(1) / EPSILON)
    assert abs(ours.pure_epsilon - EPSILON) < 1e-9 and abs(theirs.map(1) - EPSILON) < 1e-9

    def truth(x: np.ndarray) -> float:
        c = np.clip(x, *bounds)
        if kind == "sum":
            return float(c.sum())
        return float(c.mean() if kind == "mean" else c.var(ddof=1))

    def run_ours(x, seed):
        return float(ours.release(x, rng=np.random.default_rng([seed, 1])))

    return run_ours, truth, (lambda x, seed: float(theirs(x))), t_ours.stability, \
        t_theirs.map(1)


def rows(seeds: int = 100, quick: bool = False) -> list[dict]:
    """One row per pipeline (quick: the mixed-sign sum only)."""
    dp = _opendp()
    version = peer_version("opendp")
    cases = [("sum", (-50.0, 100.0))] if quick else [
        ("sum", (0.0, 100.0)), ("sum", (-50.0, 100.0)), ("mean", (0.0, 10.0)),
        ("variance", (0.0, 10.0))]
    out = []
    for kind, bounds in cases:
        label = (f"DP {kind}, clamp [{bounds[0]:g}, {bounds[1]:g}]"
                 + (f" -> resize {N}" if kind != "sum" else "") + f" -> Laplace, n = {N}, "
                 f"pure eps {EPSILON:g} under add/remove")
        if dp is None:
            out.append({"workflow": label, "metric": "|release - statistic| (lower is better)",
                        "dpacct": float("nan"), "dpacct_spread": "",
                        "peer": "OpenDP not installed (pip install opendp==0.16.0)",
                        "peer_value": None, "peer_spread": "", "seeds": seeds,
                        "verdict": "n/a", "why": ""})
            continue
        ours, truth, theirs, c_ours, c_theirs = _pipelines(dp, kind, bounds)
        e_ours, e_theirs = [], []
        for s in range(seeds):
            x = _data(s)
            t = truth(x)
            e_ours.append(abs(ours(x, s) - t))
            e_theirs.append(abs(theirs(x, s) - t))
        m_ours, sp_ours = median_iqr(e_ours)
        m_theirs, sp_theirs = median_iqr(e_theirs)
        why = f"stability: dpacct {c_ours:.10g}, OpenDP {c_theirs:.10g}"
        if abs(c_ours - c_theirs) <= 1e-6 * c_theirs:
            # the same Laplace law up to the float term: a difference of the medians is
            # the draws', not the libraries'
            v = "parity"
            why += "; equal noise scale up to the float term (differences are the draws')"
        else:
            # both errors are |Laplace| draws of the scales the stabilities set at equal
            # epsilon; the ratio of scales is exact, the medians estimate it
            v = "better" if c_ours < c_theirs else "worse"
            why += (f"; Laplace scale ratio OpenDP / dpacct {c_theirs / c_ours:.4g} (exact), "
                    f"measured median ratio {m_theirs / m_ours:.3g}: OpenDP's map at "
                    "distance 1 is max(U - L, max(|L|, |U|)), dpacct's max(|L|, |U|)")
        out.append({"workflow": label, "metric": "|release - statistic| (lower is better)",
                    "dpacct": m_ours, "dpacct_spread": sp_ours,
                    "peer": f"OpenDP {version}, same pipeline", "peer_value": m_theirs,
                    "peer_spread": sp_theirs, "seeds": seeds, "verdict": v, "why": why})
    return out
