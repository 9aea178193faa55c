"""The k = 2 law's binning kernel (session 25, issue 37): in place and over the indices'
range alone, it adds to the histogram exactly what ``hist += bincount(index, weights,
minlength=hist.size)`` on the written-out index adds."""

from __future__ import annotations

import numpy as np

from dpacct.accountant.transformers.random_allocation_k2_three import _add_binned


def _reference(hist, lv, wts, off, ops, dlog):
    lv = np.maximum(lv * (1.0 + ops), 1e-300)
    ix = np.ceil(np.log(lv) / dlog).astype(np.int64) + off
    ix = np.clip(ix, 0, hist.size - 1)
    hist += np.bincount(ix.ravel(), weights=wts.ravel(), minlength=hist.size)


def test_add_binned_equals_the_whole_histograms_bincount():
    rng = np.random.default_rng(37_251)
    for i in range(40):
        shape = (int(rng.integers(0, 30)), int(rng.integers(1, 50)))
        lv = rng.exponential(1.0, shape) * 10.0 ** rng.uniform(-320, 3, shape)
        lv[rng.uniform(size=shape) < 0.1] = 0.0  # 0 goes up to the grid's least
        wts = rng.uniform(0.0, 1e-3, shape)
        nbin = int(rng.integers(1000, 60_000))
        off = int(rng.integers(0, nbin))  # some indices clipped at either end
        hist = rng.uniform(0.0, 1.0, nbin) * (rng.uniform(size=nbin) < 0.3)
        want = hist.copy()
        _reference(want, lv.copy(), wts, off, 1e-12, 1e-2 if i % 2 else 1e-4)
        _add_binned(hist, lv, wts, off, 1e-12, 1e-2 if i % 2 else 1e-4)
        assert hist.tobytes() == want.tobytes()
