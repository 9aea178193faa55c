"""Quantiles: dpacct's histogram and b-ary tree against OpenDP's quantile tutorial.

OpenDP's tutorial "Aggregation: Quantile" (docs.opendp.org, user guide, quantiles via a
histogram and via a b-ary tree) releases the quartiles of 1 000 draws of
Exponential(scale 20) with declared bounds [0, 100], at pure epsilon = 1 with one
contribution per person (``max_contributions = 1``, symmetric distance 1 = add or
remove one record), ``num_bins = 500`` by default and 70 ... 3 000 in its error plot:

* histogram: ``then_find_bin(edges) >> then_index >> then_count_by_categories >>
  then_laplace(scale) >> make_quantiles_from_counts(edges, alphas)``;
* tree: the same counts ``>> then_b_ary_tree(leaf_count=bins, branching_factor=25)
  >> then_laplace(scale) >> make_consistent_b_ary_tree(25) >> make_quantiles_from_counts``
  (``b = choose_branching_factor(size_guess=1500) = 25``; every layer of the tree,
  root included, is measured with the same scale);

``scale`` found by ``binary_search_chain`` so that the chain is 1-DP.  Here the chains
are built with OpenDP 0.16 itself and run on the same data sets as dpacct.

Equal guarantee.  Both sides use add/remove-one neighbours (OpenDP: symmetric distance
1; dpacct's ``HistogramQuantiles`` / ``TreeQuantiles`` are stated for add/remove), a
count vector of L1 sensitivity 1 per histogram or tree level, and pure epsilon = 1:
OpenDP's tree multiplies the L1 sensitivity by its number of layers ``L`` and searches
``scale`` (found ``L`` up to the search's tolerance, reported in each row); dpacct's tree
composes ``L`` Laplace releases whose ``1 / scale_l`` add up to 1 (``alg.delta(1.0) ==
0`` is checked).  OpenDP adds discrete Laplace noise to integer counts (variance
``2 e^{-1/s} / (1 - e^{-1/s})^2``, 0.5 % below the continuous ``2 s^2`` at ``s = 4``,
8 % at ``s = 1``); dpacct adds its default continuous Laplace here, which is a few
times (70 bins) to about 70 times (5 000 bins) faster than OpenDP's chain (the time per
release is in the spread columns) and gives the peer that slight edge;
``noise="discrete_laplace"`` adds OpenDP's integer noise (notebook 06 uses it) by an exact
sampler, 1.2 to 2 times slower than OpenDP's chain.  dpacct's trees:
"equal split" spends the budget as OpenDP does (every level at scale ``L``), measures only
the real nodes and reads them by least squares with the padding fixed at zero (OpenDP's
tree leaves out the padding leaves but keeps the padding's inner nodes: 1 651 nodes at
1 000 bins), then reads the CDF through an isotonic fit instead of OpenDP's first
crossing of the raw one;
"prefix split" is ``level_budget="prefix"``: the same total epsilon, levels weighted by
how many of their nodes a prefix count uses (fewer for the root and the 2-node level
below it), which is what puts dpacct below OpenDP.

Exponential quantiles.  The same quartile task released by three exponential mechanisms,
one per quartile at pure epsilon 1/3 each (1 in all by basic composition; dpacct's
``compose`` of the three reports ``pure_epsilon == 1``), on ``bins + 1`` equally spaced
candidates of [0, 100] (500, 1 000, 2 000 bins; quick: 500): OpenDP 0.16's
``make_private_quantile(candidates, alpha, scale)`` (its score ``|(1 - alpha) #{x < c} -
alpha #{x > c}|``, report-noisy-max with exponential noise, i.e. permute-and-flip;
``scale`` from ``binary_search_param`` for ``d_out = 1/3`` at symmetric distance 1: its
privacy map is ``2 max(alpha, 1 - alpha) / scale``) against dpacct's
``ExponentialQuantile(epsilon0=1/3, candidates="grid", grid_size=bins + 1)`` (Smith's
utility divided by its sensitivity ``max(q, 1 - q)``, Gumbel-max), the same with
``selection="permute_and_flip"`` (OpenDP's selection rule), and dpacct's default
``candidates="intervals"`` (Smith's continuous mechanism, no grid).  Before the
sensitivity ``max(q, 1 - q)`` dpacct scored with sensitivity 1 and OpenDP was 1.6-1.7x
more accurate at every bin count.

One more row keeps the evidence for the histogram's read-out: the same noisy counts
(1 000 bins) read through the isotonic fit (dpacct) and clipped at zero (the former
read-out, numpy here).

OpenDP peers.  The tutorial's binning is off by one: ``find_bin(edges)`` gives index
``i`` to ``[edges[i-1], edges[i])`` (index 0 below the range), ``then_index(bin_names,
"0")`` then names it bin ``i`` -- whose edges in ``make_quantiles_from_counts`` are
``[edges[i], edges[i+1])`` -- and sends the last bin and everything above 100 to bin
"0".  Every answer moves up by one bin width (1.4 at 70 bins), so the verbatim pipeline
is reported at the tutorial's own 500 bins only; the peer of every other row is the same
pipeline with the binning corrected (``find_bin(edges[1:-1])``, values outside the range
clamped into the end bins, like dpacct's ``out_of_range="clip"``).

Rows: error = mean over Q1, Q2, Q3 of ``|released - np.quantile(data)|`` on one data set
(the spread column also gives each quartile's median error); median and IQR over
``seeds`` data sets; the verdict compares the medians by a paired bootstrap over data
sets: "better" / "worse" when the two-sided ``1 - 0.05 / m`` interval of the difference
excludes 0, else "parity", where ``m`` is the number of rows of this module (Bonferroni:
the chance that any row's verdict is a fluke of the seeds stays below 5 %; OpenDP's
noise is drawn from the operating system, so the two sides share the data sets, not the
noise).
"""

from __future__ import annotations

import time

import numpy as np

QUARTILES = np.array([0.25, 0.5, 0.75])
BOUNDS = (0.0, 100.0)
EPSILON = 1.0
BRANCHING = 25
N = 1000
BINS = (70, 250, 500, 1000, 5000)
TUTORIAL_BINS = 500
#: bin counts of the exponential-quantile rows (candidates: the bins + 1 edges)
EXP_BINS = (500, 1000, 2000)
MIN_SEEDS_FOR_VERDICT = 20
#: dpacct's noise in every row: its default, continuous Laplace (see the module docstring)
NOISE = "laplace"
READOUT_BINS = 1000


def _data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).exponential(20.0, size=N)


def _opendp():
    try:
        from importlib.metadata import version

        import opendp.prelude as dp
    except ImportError:
        return None, None
    dp.enable_features("contrib")
    return dp, f"OpenDP {version('opendp')}"


def opendp_quartiles(dp, bins: int, tree: bool, verbatim: bool = False):
    """The tutorial's chain at ``bins`` (binning corrected unless ``verbatim``).

    Returns ``(measurement, scale, layers)``.
    """
    edges = np.linspace(*BOUNDS, num=bins + 1)
    names = [str(i) for i in range(bins)]
    space = dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance()
    find = edges if verbatim else edges[1:-1]

    def make(scale):
        chain = (space >> dp.t.then_find_bin(edges=find) >> dp.t.then_index(names, "0")
                 >> dp.t.then_count_by_categories(categories=names, null_category=False))
        if tree:
            chain = (chain >> dp.t.then_b_ary_tree(leaf_count=bins, branching_factor=BRANCHING)
                     >> dp.m.then_laplace(scale)
                     >> dp.t.make_consistent_b_ary_tree(branching_factor=BRANCHING))
        else:
            chain = (chain >> dp.m.then_laplace(scale)
                     >> dp.t.make_cast_default(dp.vector_domain(dp.atom_domain(T=int)),
                                               dp.symmetric_distance(), TOA=float))
        return chain >> dp.t.make_quantiles_from_counts(edges, alphas=QUARTILES.tolist())

    scale = dp.binary_search_param(make, d_in=1, d_out=EPSILON)
    meas = make(scale)
    if not meas.map(1) <= EPSILON:
        raise RuntimeError(f"OpenDP chain at scale {scale} is not {EPSILON}-DP")
    layers = 1
    if tree:
        layers, cap = 1, 1
        while cap < bins:
            cap *= BRANCHING
            layers += 1
    return meas, float(scale), layers


def _dpacct(bins: int, kind: str):
    from dpacct.mechanisms import HistogramQuantiles, TreeQuantiles

    if kind == "histogram":
        alg = HistogramQuantiles(lower=BOUNDS[0], upper=BOUNDS[1], bins=bins,
                                 scale=1.0 / EPSILON, out_of_range="clip", noise=NOISE)
    else:
        kw = dict(lower=BOUNDS[0], upper=BOUNDS[1], bins=bins, branching=BRANCHING,
                  measure_root=True, out_of_range="clip", noise=NOISE,
                  level_budget="prefix" if kind == "tree, prefix split" else "uniform")
        depth = TreeQuantiles(**kw, scale=1.0).depth
        alg = TreeQuantiles(**kw, scale=depth / EPSILON)
    if not alg.delta(EPSILON) <= 1e-12:      # pure epsilon = 1, derived from the releases
        raise RuntimeError(f"{alg!r} is not {EPSILON}-DP")
    return alg


def _errors(release, seeds: int) -> tuple[np.ndarray, float]:
    """``seeds x 3`` absolute quartile errors (data set ``s`` drawn from seed ``s``) and
    the mean wall-clock seconds of one release."""
    out = np.empty((seeds, 3))
    spent = 0.0
    for s in range(seeds):
        x = _data(s)
        t0 = time.perf_counter()
        got = release(x, s)
        spent += time.perf_counter() - t0
        out[s] = np.abs(np.asarray(got, dtype=float) - np.quantile(x, QUARTILES))
    return out, spent / seeds


def _verdict(ours: np.ndarray, peer: np.ndarray, alpha: float = 0.05,
             resamples: int = 20_000) -> str:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, ours.size, size=(resamples, ours.size))
    diff = np.median(ours[idx], axis=1) - np.median(peer[idx], axis=1)
    lo, hi = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
    return "better" if hi < 0 else "worse" if lo > 0 else "parity"


def _spread(err: np.ndarray, seconds: float | None = None) -> str:
    per = np.mean(err, axis=1)
    q1, q3 = np.quantile(per, [0.25, 0.75])
    med = np.median(err, axis=0)
    out = f"IQR {q1:.3f}-{q3:.3f}; Q1/Q2/Q3 {med[0]:.3f}/{med[1]:.3f}/{med[2]:.3f}"
    return out if seconds is None else f"{out}; {seconds * 1e3:.2g} ms per release"


def _row(workflow, ours, peer_name, peer, seeds, why="", alpha=0.05):
    (ours, t_ours), (peer, t_peer) = ours, peer
    a, b = np.mean(ours, axis=1), np.mean(peer, axis=1)
    if seeds < MIN_SEEDS_FOR_VERDICT:
        verdict, why = "parity", f"{seeds} seeds: too few for a verdict. {why}".strip()
    else:
        verdict = _verdict(a, b, alpha)
    return {"workflow": workflow, "metric": "quartile |error|, mean of Q1-Q3",
            "dpacct": float(np.median(a)), "dpacct_spread": _spread(ours, t_ours),
            "peer": peer_name, "peer_value": float(np.median(b)),
            "peer_spread": _spread(peer, t_peer), "seeds": seeds, "verdict": verdict,
            "why": why}


def _not_installed(workflow: str, seeds: int) -> dict:
    return {"workflow": workflow, "metric": "quartile |error|, mean of Q1-Q3",
            "dpacct": float("nan"), "dpacct_spread": "", "peer": "peer not installed",
            "peer_value": float("nan"), "peer_spread": "", "seeds": seeds,
            "verdict": "parity", "why": "peer not installed: pip install opendp==0.16.0"}


def rows(seeds: int = 100, quick: bool = False) -> list[dict]:
    """Histogram and tree rows at 70 ... 5 000 bins (quick: 70 bins only, verbatim there).

    Fewer than 20 seeds give no verdict ("parity", the reason says so).
    """
    bins_list = (70,) if quick else BINS
    verbatim_bins = bins_list[0] if quick else TUTORIAL_BINS
    exp_bins = EXP_BINS[:1] if quick else EXP_BINS
    # Bonferroni over this module's rows
    alpha = 0.05 / (3 * len(bins_list) + 3 + 3 * len(exp_bins))
    dp, peer_name = _opendp()
    out: list[dict] = []

    def ours(alg):
        return lambda x, s: alg.quantiles(x, QUARTILES, rng=np.random.default_rng([s, 1]))

    def theirs(meas):
        return lambda x, s: meas(x)

    for bins in bins_list:
        for kind in ("histogram", "tree, equal split", "tree, prefix split"):
            tree = kind != "histogram"
            label = (f"OpenDP quantile tutorial, {kind}, {bins} bins"
                     + (f" (b={BRANCHING}, root measured)" if tree else ""))
            if dp is None:
                out.append(_not_installed(label, seeds))
                continue
            if kind != "tree, prefix split":
                meas, scale, layers = opendp_quartiles(dp, bins, tree)
            alg = _dpacct(bins, kind)
            scales = getattr(alg, "level_scales", np.array([alg.scale]))
            label += (f"; both pure eps=1, add/remove one (OpenDP: symmetric distance 1), "
                      f"L1 sensitivity 1 per level x {layers}: Laplace scale OpenDP "
                      f"{scale:.4g}, dpacct " + "/".join(f"{v:.3g}" for v in scales))
            e_ours = _errors(ours(alg), seeds)
            e_peer = _errors(theirs(meas), seeds)
            why = ""
            if kind == "tree, prefix split":
                why = ("dpacct's level_budget='prefix' (same total eps, levels weighted "
                       "for prefix counts); OpenDP splits equally")
            out.append(_row(label, e_ours, peer_name + " (binning corrected)", e_peer,
                            seeds, why, alpha))
        if bins == verbatim_bins and dp is not None:
            for tree in (False, True):
                kind = "tree, equal split" if tree else "histogram"
                meas, scale, layers = opendp_quartiles(dp, bins, tree, verbatim=True)
                alg = _dpacct(bins, kind)
                e_ours = _errors(ours(alg), seeds)
                e_peer = _errors(theirs(meas), seeds)
                out.append(_row(
                    f"OpenDP quantile tutorial verbatim (its off-by-one binning), {kind}, "
                    f"{bins} bins, pure eps=1, OpenDP scale {scale:.4f}",
                    e_ours, peer_name + " (tutorial verbatim)", e_peer, seeds,
                    "the tutorial's bins are shifted up by one width (module docstring)",
                    alpha))
    out.append(_readout_row(seeds, alpha))
    out.extend(_exponential_rows(dp, peer_name, exp_bins, seeds, alpha))
    return out


def opendp_exponential_quartiles(dp, bins: int) -> list:
    """OpenDP's ``make_private_quantile`` per quartile on ``bins + 1`` candidates, each at
    pure epsilon ``EPSILON / 3`` (checked through its privacy map)."""
    cands = np.linspace(*BOUNDS, num=bins + 1).tolist()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    out = []
    for a in QUARTILES:
        def make(scale, a=float(a)):
            return dp.m.make_private_quantile(domain, dp.symmetric_distance(),
                                              dp.max_divergence(), cands, a, scale)

        meas = make(dp.binary_search_param(make, d_in=1, d_out=EPSILON / 3))
        if not meas.map(1) <= EPSILON / 3:
            raise RuntimeError(f"OpenDP quantile at alpha={a} is not {EPSILON / 3}-DP")
        out.append(meas)
    return out


def _dpacct_exponential(bins: int | None, selection: str = "exponential"):
    from dpacct.accountant import compose
    from dpacct.mechanisms import ExponentialQuantile

    kw = ({"candidates": "intervals"} if bins is None
          else {"candidates": "grid", "grid_size": bins + 1, "selection": selection})
    alg = ExponentialQuantile(epsilon0=EPSILON / 3, lower=BOUNDS[0], upper=BOUNDS[1],
                              out_of_range="clip", **kw)
    total = compose([alg], counts=[len(QUARTILES)])
    if not total.pure_epsilon <= EPSILON * (1 + 1e-12) or not total.delta(EPSILON) == 0:
        raise RuntimeError(f"three releases of {alg!r} are not {EPSILON}-DP")
    return alg


def _exponential_rows(dp, peer_name, exp_bins, seeds: int, alpha: float) -> list[dict]:
    out = []

    def ours(alg):
        def run(x, s):
            rng = np.random.default_rng([s, 3])
            return [alg.quantile(x, float(q), rng=rng) for q in QUARTILES]
        return run

    for bins in exp_bins:
        for kind in ("grid", "grid, permute-and-flip", "intervals"):
            label = (f"exponential quantile per quartile, {kind} vs OpenDP's "
                     f"{bins + 1} candidates ({bins} bins); both pure eps=1/3 per quartile "
                     "(1 in all), add/remove one (OpenDP: symmetric distance 1), score "
                     "sensitivity max(q, 1-q)")
            if dp is None:
                out.append(_not_installed(label, seeds))
                continue
            meas = opendp_exponential_quartiles(dp, bins)
            alg = _dpacct_exponential(None if kind == "intervals" else bins,
                                      "permute_and_flip" if "permute" in kind
                                      else "exponential")
            e_ours = _errors(ours(alg), seeds)
            e_peer = _errors(lambda x, s, meas=meas: [m(x.tolist()) for m in meas], seeds)
            why = {"grid": "dpacct: Gumbel-max exponential mechanism on the same "
                           "candidates; OpenDP: permute-and-flip",
                   "grid, permute-and-flip": "both permute-and-flip on the same candidates",
                   "intervals": "dpacct: Smith's continuous mechanism over the data's "
                                "intervals"}[kind]
            out.append(_row(label, e_ours, peer_name + " make_private_quantile", e_peer,
                            seeds, why, alpha))
    return out


def _readout_row(seeds: int, alpha: float) -> dict:
    from dpacct.mechanisms import HistogramQuantiles
    from dpacct.mechanisms.algorithms.quantiles import quantiles_from_counts

    alg = HistogramQuantiles(lower=BOUNDS[0], upper=BOUNDS[1], bins=READOUT_BINS,
                             scale=1.0 / EPSILON, out_of_range="clip", noise=NOISE)
    iso, clipped = np.empty((seeds, 3)), np.empty((seeds, 3))
    for s in range(seeds):
        x = _data(s)
        truth = np.quantile(x, QUARTILES)
        rel = alg.release(x, rng=np.random.default_rng([s, 2]))
        iso[s] = np.abs(rel.quantiles(QUARTILES) - truth)
        clipped[s] = np.abs(quantiles_from_counts(np.maximum(rel.noisy_counts, 0), QUARTILES,
                                                  *BOUNDS) - truth)
    return _row(f"histogram read-out, {READOUT_BINS} bins, same noisy counts (eps=1): "
                "isotonic CDF fit (dpacct) vs counts clipped at 0", (iso, None),
                "numpy: counts clipped at 0 (dpacct's former read-out)", (clipped, None),
                seeds, alpha=alpha)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    table = rows(seeds=3 if args.quick else args.seeds, quick=args.quick)
    print("| workflow | dpacct | spread | peer | peer value | spread | verdict | why |")
    print("| --- | ---: | --- | --- | ---: | --- | --- | --- |")
    for r in table:
        print(f"| {r['workflow']} | {r['dpacct']:.3f} | {r['dpacct_spread']} | {r['peer']} "
              f"| {r['peer_value']:.3f} | {r['peer_spread']} | {r['verdict']} | {r['why']} |")


if __name__ == "__main__":
    main()
