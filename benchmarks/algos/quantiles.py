"""Quartiles against the number of bins: dpacct's read-outs of the same noisy counts.

Quartiles of 1 000 draws from Exponential(scale 20) clipped to [0, 100], pure epsilon = 1
(Laplace, sensitivity 1), L2 error of the three quartiles over the seeds, at 70 / 250 /
500 / 1 000 / 5 000 bins: HistogramQuantiles (isotonic read-out) against the same noisy
counts read from raw cumulative sums normalised by the noisy total (numpy, written
here), and TreeQuantiles at the same epsilon against the same numpy read-out.
(Moved from the former ``benchmarks/algorithms.py``.)
"""

from __future__ import annotations

import numpy as np

from benchmarks.algos._common import progress, row

QUARTILES = np.array([0.25, 0.5, 0.75])
BINS = (70, 250, 500, 1000, 5000)
PEER = "numpy: raw cumulative sums of the same noisy counts"


def raw_cumsum_quantiles(noisy, qs, lower, upper):
    """Raw noisy cumulative sums over the noisy total, first crossing, linear inside."""
    cdf = np.cumsum(noisy) / np.sum(noisy)
    width = (upper - lower) / len(noisy)
    out = []
    for q in qs:
        j = int(np.argmax(cdf >= q))
        prev = cdf[j - 1] if j > 0 else 0.0
        frac = (q - prev) / (cdf[j] - prev) if cdf[j] > prev else 0.0
        out.append(lower + (j + min(max(frac, 0.0), 1.0)) * width)
    return np.array(out)


def rows(seeds: int = 100, quick: bool = False) -> list[dict]:
    from dpacct.mechanisms import HistogramQuantiles, TreeQuantiles

    eps = 1.0
    out = []
    for bins in (BINS[:2] if quick else BINS):
        hist = HistogramQuantiles(lower=0.0, upper=100.0, bins=bins, scale=1.0 / eps,
                                  out_of_range="clip")
        depth = TreeQuantiles(lower=0.0, upper=100.0, bins=bins, scale=1.0).depth
        tree = TreeQuantiles(lower=0.0, upper=100.0, bins=bins, scale=depth / eps,
                             out_of_range="clip")
        rng = np.random.default_rng(bins)
        errs = {k: [] for k in ("iso", "raw", "tree")}
        for _ in progress(range(seeds), desc=f"quantiles {bins} bins"):
            x = rng.exponential(20.0, size=1000)
            truth = np.quantile(np.minimum(x, 100.0), QUARTILES)
            rel = hist.release(x, rng=rng)
            errs["iso"].append(np.linalg.norm(rel.quantiles(QUARTILES) - truth))
            raw = raw_cumsum_quantiles(rel.noisy_counts, QUARTILES, 0.0, 100.0)
            errs["raw"].append(np.linalg.norm(raw - truth))
            errs["tree"].append(np.linalg.norm(tree.quantiles(x, QUARTILES, rng=rng) - truth))
        metric = "L2 error of the quartiles (lower is better)"
        hist_row = row(f"quartiles, HistogramQuantiles, {bins} bins, eps 1", metric,
                       errs["iso"], PEER, errs["raw"])
        if hist_row["verdict"] == "worse":
            hist_row["why"] = "the isotonic read-out loses to raw sums at this bin count"
        out.append(hist_row)
        tree_row = row(f"quartiles, TreeQuantiles (depth {depth}), {bins} bins, eps 1",
                       metric, errs["tree"], PEER, errs["raw"])
        if tree_row["verdict"] == "worse":
            tree_row["why"] = ("the tree spends epsilon over its levels; the flat histogram "
                               "here is the better design at this bin count")
        out.append(tree_row)
    return out
