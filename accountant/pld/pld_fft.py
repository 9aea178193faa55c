"""FFT composition of loss PMFs on a uniform grid, with its round-off certificate.

The one composition kernel of the PLD engine, used by :meth:`GridPLD.convolve
<dpacct.accountant.pld.grid.GridPLD.convolve>` (pairwise products, repeated squaring) and by
the schedule's characteristic-function path (:mod:`~dpacct.accountant.pld.schedule_fast`,
:mod:`~dpacct.accountant.pld.incremental`: products of many cells' spectra raised to their
counts).  It holds

* linear convolution of non-negative arrays by real FFTs, with the far tails
  recomputed under exponential tilting for relative precision
  (:func:`_accurate_convolve`), and the same scheme with a rigorous bound on every
  entry's floating-point error (:func:`_bounded_convolve`, :func:`_fft_roundoff`: a
  constant of pocketfft's passes for the length used, :func:`_pass_model`, times
  ``||a||_2 ||b||_2``);
* the exact tail masses of a convolution and the cuts they allow (:func:`_tail_cuts`);
* spectra of many PMFs, their powers and products (:func:`_spectrum_product`), and the
  round-off bound of an inverse transform of a product spectrum
  (:func:`_spectral_error`; Higham 2002, Theorem 24.2).

The Chernoff window that bounds wrap-around (aliasing) of a circular convolution
(``_cell_lambdas``, ``_window``, ``_alias``) lives in
:mod:`~dpacct.accountant.pld.chernoff_window` and is re-exported here.

Certificate policy (one for the engine): discretisation, tail truncation, aliasing and
the FFTs' floating-point round-off are inside every certified bracket -- the schedule
path's spectra and the pairwise products of :class:`GridPLD
<dpacct.accountant.pld.grid.GridPLD>` alike (:data:`CERTIFY_ROUNDOFF`).
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache

import numpy as np

from ..numerics import TINY
from .chernoff_window import (  # noqa: F401  (re-exported: their home before the split)
    _ORDERS,
    NEG_WEIGHTS_CACHED,
    _alias,
    _cell_lambdas,
    _chernoff_weights,
    _clear_weights,
    _dense,
    _neg_weights,
    _neg_weights_cached,
    _neg_weights_table,
    _window,
)

__all__: list[str] = []


#: blocks of this many rows or more go to ``scipy.fft``, on all cores
_THREADED_ROWS = 8


def _rfft(x: np.ndarray, n: int) -> np.ndarray:
    """Real FFT of ``x`` padded to ``n`` by numpy 2's copy of scipy's C++ pocketfft (bit
    for bit the same; :func:`_pass_model`), sparing the ``scipy.fft`` import (18-35 ms
    CPU of a cold DP-SGD epsilon of ~30 ms, issue 37); many rows use scipy's threads."""
    if x.ndim > 1 and x.shape[0] >= _THREADED_ROWS:
        from scipy import fft

        return fft.rfft(x, n, axis=-1, workers=-1)
    return np.fft.rfft(x, n)


_irfft = np.fft.irfft  # the inverse, (spectrum, n): numpy's pocketfft as in _rfft


@lru_cache(maxsize=1)
def _smooth() -> list[int]:  # the 5-smooth integers up to 2^34, ascending
    # in floats: exact below 2^53, and no product kept is above 2^34
    odd = np.outer(5.0 ** np.arange(15), 3.0 ** np.arange(22)).ravel()
    all_ = np.outer(odd[odd <= 2.0**34], 2.0 ** np.arange(35)).ravel()
    return np.unique(all_[all_ <= 2.0**34]).astype(np.int64).tolist()


def _next_fast_len(n: int) -> int:
    """The least 5-smooth integer ``>= n``: ``scipy.fft.next_fast_len(n, real=True)``."""
    if n > 1 << 34:  # no transform is that long; a window test may ask (and decline)
        from scipy import fft

        return int(fft.next_fast_len(int(n), real=True))
    return _smooth()[bisect.bisect_left(_smooth(), max(int(n), 1))]


#: The round-off policy of :class:`~dpacct.accountant.pld.grid.GridPLD` composition:
#: every product's rigorous per-entry round-off bound (:func:`_bounded_convolve`) is
#: put in the certificate (:func:`_certified_convolve`).  Always True in the library;
#: the tests set it False to show that the entrywise checks fail without it.
CERTIFY_ROUNDOFF = True


#: the plain FFT's estimate of an entry is kept when its error bound is below this
#: fraction of the entry; only the entries beyond (the far tails) are recomputed tilted
PLAIN_RELATIVE_ERROR = 1e-10


#: tail segments shorter than this are convolved directly (exact non-negative sums)
_DIRECT_BELOW = 192


def _tilt_rate(p: np.ndarray, side: int) -> float:
    """Average exponential decay rate of ``p`` from its peak to its last non-zero entry."""
    pos = p > 0  # the first and last non-zero entries by argmax (no index array)
    lo = int(np.argmax(pos))
    hi = p.size - 1 - int(np.argmax(pos[::-1]))
    if hi <= lo or not pos[lo]:  # fewer than two non-zero entries
        return 0.0
    peak = int(np.argmax(p))
    end = hi if side > 0 else lo
    dist = abs(end - peak)
    if dist == 0:
        return 0.0
    # a denormal end overflows the ratio to inf (Python floats: no warning, no errstate
    # context, the same IEEE quotient); the caller caps the rate
    return max(math.log(float(p[peak]) / float(p[end])), 0.0) / dist


def _fft_convolve(a: np.ndarray, b: np.ndarray, square: bool = False) -> np.ndarray:
    """Linear convolution by real FFTs; one transform when squaring."""
    n = a.size + b.size - 1
    size = _next_fast_len(n)
    fa = _rfft(a, size)
    fb = fa if square or b is a else _rfft(b, size)
    return _irfft(np.multiply(fa, fb, out=fa), size)[:n]  # fa is this call's own


def _fft_roundoff(a: np.ndarray, b: np.ndarray) -> float:
    """Rigorous bound on ``max_k |c_k - (a * b)_k|`` for ``c = _fft_convolve(a, b)``.

    With ``N`` the padded length, ``A = F a`` and ``B = F b`` (``||A||_2 = sqrt(N)
    ||a||_2``), ``rho`` the relative l2 error of one forward transform and ``kappa`` the
    componentwise error of the inverse relative to the l1 norm of its input
    (:func:`_pass_model`: pocketfft's passes for this ``N``):

    * entry ``k`` of the exact inverse of a spectrum error ``E`` is at most
      ``||E||_1 / N``, and by Cauchy-Schwarz the error of the computed product spectrum
      ``fl(A^ B^)`` has ``||E||_1 <= ||A^ - A||_2 ||B^||_2 + ||A||_2 ||B^ - B||_2 +
      sqrt(5) u ||A^||_2 ||B^||_2`` (Brent, Percival & Zimmermann 2007 for the complex
      product), i.e. ``N ||a||_2 ||b||_2 (2 rho + rho^2 + sqrt(5) u (1 + rho)^2)``;
    * the computed inverse transform errs entrywise by at most ``kappa ||P^||_1 / N``
      with ``||P^||_1 <= (1 + sqrt(5) u) ||A^||_2 ||B^||_2`` (Cauchy-Schwarz again).

    So the bound is ``||a||_2 ||b||_2`` times a constant of order ``(2 rho + kappa)``:
    relative to the product's own scale (for a square, ``||a||_2^2`` is its largest
    entry when ``a`` is symmetric), not to ``||a||_1 ||b||_2`` as a normwise bound on
    the output is.  Inputs must be non-negative (or any real; only norms are used).
    A last term covers underflow (the model has none).  Derivation, and what it
    assumes about pocketfft: docs/theory/pld.md.
    """
    n = a.size + b.size - 1
    size = _next_fast_len(n)
    rho, kappa = _pass_model(size)
    l2a = _l2(a)  # once for a square (the ladder's squarings, their tilted tails)
    ab = l2a * (l2a if b is a else _l2(b))
    prod = 2.2360679775 * _U  # sqrt(5) u, rounded up
    grow = (1 + rho) * (1 + rho)
    const = rho * (2 + rho) + prod * grow + kappa * (1 + prod) * grow
    under = size * math.log2(size) * 2.0**-1040
    return ab * const * (1 + 1e-9) + under


#: bound on the error of pocketfft's computed twiddle factors, ``|w^ - w| <= _MU``
#: (``sincos_2pibyn``: each factor is a product of two table entries, each a libm
#: cos/sin of an argument within a relative ``2u``, an octant from 0; with libm within
#: 1 ulp, ``2.7 u`` per entry and ``sqrt(5) u`` for the product; an assumption about
#: the library, docs/theory/pld.md)
_MU = 8.0 * 2.0**-53

#: per radix of a pocketfft real pass: roundings along one input-to-output path
#: (besides the twiddle product), the largest sum of |coefficients| over the paths
#: from one input to one output (the butterfly's formulas, radf*/radb*), and the
#: l2 norm of that path matrix over ``sqrt(radix)``
_PASSES = {
    2: (1, 1.0, math.sqrt(2.0)),
    4: (2, 1.0, 2.0),
    3: (4, 1.3660254037844388, 2.0347550506166806),
    5: (6, 1.3968022466674208, 2.833868923912859),
}


@lru_cache(maxsize=256)
def _pass_model(n: int) -> tuple[float, float]:
    """``(rho, kappa)`` of pocketfft's real transforms of the 5-smooth length ``n``.

    pocketfft's ``rfftp`` takes factors of 4 first, then one 2, then 3s and 5s; each
    pass is a butterfly of its radix with twiddle products.  With each operation's
    rounding relative to its own result (``u`` for a sum or a real product, ``sqrt(5)
    u`` for a complex product) and twiddles within ``_MU``, a pass of radix ``r`` errs
    by at most ``eta_r = (1 + u)^d_r (1 + sqrt(5) u)(1 + _MU) - 1`` times the sum over
    computation paths of ``|coefficient| |input|``.  Then (Higham 2002, proof of
    Theorem 24.2, pass by pass):

    * ``rho = prod_s (1 + eta_s nu_s) - 1`` bounds ``||y^ - y||_2 / ||y||_2``, ``nu_r``
      the path matrix's l2 norm over the pass's own ``sqrt(r)``;
    * ``kappa = prod_s (1 + eta_s g_s) (1 + u)^2 - 1`` bounds ``|y^_k - y_k| / ||x||_1``
      of the inverse scaled by ``1 / n`` (the last two roundings), ``g_r`` the largest
      sum of |coefficients| over the computation paths from one input of a butterfly
      to one output (1 for radices 2 and 4).  Every input reaches output ``k`` through
      one intermediate entry per pass (the index path of a Cooley-Tukey FFT is
      unique), so the intermediates that output ``k`` depends on after any pass are
      exact DFT sums of disjoint sets of inputs: their moduli add up to at most
      ``||x||_1``, and the error a pass makes, carried exactly to output ``k``, is at
      most ``eta_s g_s`` times that sum (plus the errors already made).
    """
    m, counts = int(n), {2: 0, 3: 0, 4: 0, 5: 0}
    while m % 4 == 0:
        counts[4] += 1
        m //= 4
    while m % 2 == 0:
        counts[2] += 1
        m //= 2
    for r in (3, 5):
        while m % r == 0:
            counts[r] += 1
            m //= r
    if m != 1:
        raise ValueError(f"FFT length {n} is not 5-smooth")
    prod = 2.2360679775 * _U
    log_norm, log_comp = 0.0, 0.0
    for r, k in counts.items():
        d, g, nu = _PASSES[r]
        eta = math.expm1(d * math.log1p(_U) + math.log1p(prod) + math.log1p(_MU))
        log_norm += k * math.log1p(eta * nu)
        log_comp += k * math.log1p(eta * g)
    rho = math.expm1(log_norm) * (1 + 1e-12)
    kappa = math.expm1(log_comp + 2 * math.log1p(_U)) * (1 + 1e-12)
    return rho, kappa


def _direct_error(c: np.ndarray, m: int) -> np.ndarray:
    """Per-entry bound on the error of a direct convolution of non-negative arrays.

    Each entry is a sum of at most ``m`` non-negative products, so its computed value
    is within ``gamma_m`` (Higham 2002, Section 3.1) of the exact sum, which is itself
    at most ``c / (1 - gamma_m)``; a last term covers underflow.
    """
    gamma = (m + 1) * _U / (1 - (m + 1) * _U)
    return np.maximum(c, 0.0) * (gamma / (1 - gamma)) + (m + 1) * 2.0**-1074


def _tilted_convolve(
    a: np.ndarray,
    b: np.ndarray,
    square: bool,
    side: int,
    rigorous: bool = False,
    keep: tuple[int, int | None] = (0, None),
    exact: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` computed with the ``side`` tail tilted up to the level of the peak.

    Returns the estimate and its per-entry absolute error: an estimate of order
    ``4e-16`` times the tilted product's peak, or with ``rigorous`` a bound
    (:func:`_fft_roundoff` of the tilted arrays, scaled back entry by entry, plus the
    relative error of the computed tilt weights).  Short inputs are convolved
    directly: sums of non-negative terms, exact to rounding.  ``keep = (k0, k1)``:
    only entries ``k0 <= k < k1`` (``k1`` None: to the end) are un-tilted and
    returned (a tail recomputation uses only its own end; each entry's value and bound
    are the ones the whole product would give).  ``exact``: the weights are exps of
    exact exponents (:func:`_short_theta`, :func:`_exp_progression`; their relative
    error ~30u instead of up to ~1e4 u, and ``n / 64`` exps instead of ``n``); without
    it, of the rate as computed (the arithmetic before issue 37's session 25).
    """
    n = a.size + b.size - 1
    k0, k1 = keep[0], n if keep[1] is None else keep[1]
    if min(a.size, b.size) < _DIRECT_BELOW:
        c = np.convolve(a, b)
        err = _direct_error(c, min(a.size, b.size)) if rigorous else 1e-15 * c
        return c[k0:k1], err[k0:k1]
    # a square's two factors hold the same entries: one rate
    rate = _tilt_rate(a, side) if square else max(_tilt_rate(a, side), _tilt_rate(b, side))
    theta = side * min(rate, 600.0 / n)
    if exact:
        theta = _short_theta(theta)
    if theta == 0.0:
        c = _fft_convolve(a, b, square)
        bound = _fft_roundoff(a, b) if rigorous else 4e-16 * float(np.abs(c).max())
        return np.maximum(c[k0:k1], 0.0), np.full(n, bound)[k0:k1]
    ta, sa = _tilted(a, theta, exact)
    tb, sb = (ta, sa) if square else _tilted(b, theta, exact)
    ct = _fft_convolve(ta, tb, square)
    # e^{(sa + sb) - k theta} un-tilts entry k
    if exact:  # every exponent exact (_short_theta)
        scale = _exp_progression((sa + sb) - k0 * theta, -theta, k1 - k0)
    else:  # (k exact in floats, as from an int arange)
        scale = np.arange(k0, k1, dtype=float) * theta
        np.subtract(sa + sb, scale, out=scale)
        np.exp(scale, out=scale)
    if not rigorous:
        return np.maximum(ct[k0:k1] * scale, 0.0), 4e-16 * float(np.abs(ct).max()) * scale
    est = np.multiply(ct[k0:k1], scale, out=ct[k0:k1])
    np.maximum(est, 0.0, out=est)
    # The computed weights e^{i theta - s}, e^{j theta - s'} and e^{s + s' - k theta}:
    # with ``exact`` their exponents are exact (_short_theta) and each is a rounded
    # product of two exps (8u each: numpy's exp is within four ulps on AVX-512 CPUs),
    # within (1 + 8u)^2 (1 + u); without, up to their arguments' rounding (u per
    # operation, relative to the largest argument) and exp's (8u each: 24u, and 8u for
    # the products).  With the three products' roundings (x w twice, ct scale) the
    # un-tilted term a_i b_j is off by a relative ``mis`` at most.
    if exact:
        mis = _TILT_MIS
    else:
        arg = abs(theta) * n + abs(sa) + abs(sb) + 1.0
        mis = math.expm1(8 * _U * arg + 32 * _U) * (1 + 1e-9)
    fft_err = _fft_roundoff(ta, tb)
    # (fft_err (1 + 2u) scale + mis est) / (1 - mis), in place in ``scale``
    err = np.multiply(scale, fft_err * (1 + 2 * _U), out=scale)
    err += np.multiply(est, mis)
    err /= 1 - mis
    return est, err


def _tilted(x: np.ndarray, theta: float, exact: bool = False) -> tuple[np.ndarray, float]:
    """``x e^{i theta - s}`` and ``s``, the largest exponent ``i theta`` (the weights
    at most 1); ``exact``: ``theta`` from :func:`_short_theta`, so ``s`` and every
    exponent are exact and the weights come from :func:`_exp_progression`."""
    if exact:
        s = (x.size - 1) * theta if theta > 0 else 0.0
        w = _exp_progression(-s, theta, x.size)
    else:
        w = np.arange(x.size, dtype=float) * theta  # (i exact in floats)
        s = float(w.max())
        w -= s
        np.exp(w, out=w)
    w *= x
    return w, s


#: significant bits a tilt rate keeps (:func:`_short_theta`): on arrays below 2^31
#: entries every tilt exponent is below 2^52 times ``theta``'s last bit, exact
_THETA_BITS = 21

#: :func:`_exp_progression`'s block: ``e^{start + (b B + j) step}`` as ``e^{start + b B
#: step} e^{j step}``, ``B + n / B`` exps and ``n`` products instead of ``n`` exps
_EXP_BLOCK = 64

#: relative error of an un-tilted term ``a_i b_j`` (:func:`_tilted_convolve`): three
#: weights within ``(1 + 8u)^2 (1 + u)`` each (numpy's vectorised exp within four ulps)
#: and three rounded products
_TILT_MIS = math.expm1(6 * math.log1p(8 * 2.0**-53) + 6 * math.log1p(2.0**-53)) * (1 + 1e-9)


def _short_theta(theta: float) -> float:
    """``theta`` rounded toward zero to :data:`_THETA_BITS` significant bits (0 below
    ``1e-200``, where a tilt changes nothing): every tilt exponent ``i theta - s``, ``s``
    and ``s + s' - k theta`` is then an integer multiple of ``theta``'s last bit, fewer
    than ``2^52`` of them on arrays below ``2^31`` entries: exact in floats, and the
    weights err by exp's rounding alone."""
    if not abs(theta) >= 1e-200:
        return 0.0
    m, e = math.frexp(theta)
    return math.ldexp(float(math.trunc(math.ldexp(m, _THETA_BITS))), e - _THETA_BITS)


def _exp_progression(start: float, step: float, n: int) -> np.ndarray:
    """``e^{start + i step}`` for ``i = 0 .. n - 1`` as ``e^{start + b B step} e^{j step}``
    (``i = b B + j``, ``B`` = :data:`_EXP_BLOCK`): with every ``start + b B step`` and ``j
    step`` exact (:func:`_short_theta`) and numpy's exp within four ulps (``8u``), each
    entry is within ``(1 + 8u)^2 (1 + u)`` of its exact value.  A new array."""
    nb = -(-int(n) // _EXP_BLOCK)
    inner = np.exp(np.arange(_EXP_BLOCK, dtype=float) * step)
    outer = np.exp(start + np.arange(nb, dtype=float) * (_EXP_BLOCK * step))
    return np.multiply.outer(outer, inner).reshape(-1)[: int(n)]


def _skewed_side(a: np.ndarray, b: np.ndarray) -> int:
    """``+1`` (``-1``) when both arrays peak in their first (last) tenth, i.e. their
    long tails are on the right (left); ``0`` otherwise."""
    pa, pb = int(np.argmax(a)), int(np.argmax(b))
    if 10 * pa < a.size and 10 * pb < b.size:
        return 1
    if 10 * pa > 9 * a.size and 10 * pb > 9 * b.size:
        return -1
    return 0


def _accurate_convolve(a: np.ndarray, b: np.ndarray, tail: float = 0.0) -> np.ndarray:
    """Convolution of non-negative arrays with good relative precision in the tails.

    A plain FFT convolution has an absolute error of about ``4e-16`` times its largest
    entry, which swamps tail entries far below that.  Exponential tilting commutes
    with convolution -- ``(a e^{th i}) * (b e^{th j}) = (a * b) e^{th k}`` -- so the
    tails are recomputed with each tilted up to the level of its peak, and every entry
    is taken from the estimate with the smaller error (:func:`_plain_first_convolve`).

    When both inputs peak at the same end (the one-step PLD of a subsampled
    mechanism and its first powers: a narrow peak and a long one-sided tail) a single
    pass tilted towards the tail settles nearly every entry to a relative error of
    ``PLAIN_RELATIVE_ERROR``; the few entries it leaves unsettled lie at the other
    end and are computed from the inputs' short prefixes (or suffixes) alone.
    The errors used to choose are estimates; :func:`_bounded_convolve` makes the same
    choice with rigorous bounds and returns them.
    """
    return _convolve_choosing(a, b, tail, False)[0]


def _bounded_convolve(
    a: np.ndarray, b: np.ndarray, tail: float = 0.0, exact: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` of non-negative arrays and a rigorous bound on each entry's error.

    The scheme of :func:`_accurate_convolve` with every entry's error bounded (plain
    transform: :func:`_fft_roundoff`; tilted: the same on the tilted arrays, scaled
    back; direct: :func:`_direct_error`): ``|c_k - (a * b)_k| <= err_k`` for every
    ``k``, in floating point.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.exp(-0.5 * np.linspace(-8, 8, 300) ** 2)
    >>> c, err = _bounded_convolve(a / a.sum(), a / a.sum())
    >>> bool(np.all(err >= 0)) and float(err.max()) < 1e-12
    True
    """
    return _convolve_choosing(a, b, tail, True, exact)


def _convolve_choosing(
    a: np.ndarray, b: np.ndarray, tail: float, rigorous: bool, exact: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The scheme of :func:`_accurate_convolve`; ``(estimate, per-entry error)``
    (``exact``: the tilts of :func:`_tilted_convolve`'s ``exact``)."""
    if min(a.size, b.size) < 64:
        c = np.convolve(a, b)
        err = _direct_error(c, min(a.size, b.size)) if rigorous else 1e-15 * np.abs(c)
        return np.maximum(c, 0.0), err
    square = a is b
    side = _skewed_side(a, b)
    if side != 0:
        best, err = _tilted_convolve(a, b, square, side, rigorous, exact=exact)
        # settled: known to PLAIN_RELATIVE_ERROR, or (rigorous) to within the bound a
        # plain pass would attach (far-end entries no transform resolves better)
        bar = PLAIN_RELATIVE_ERROR * best
        if rigorous:
            bar = np.maximum(bar, _fft_roundoff(a, b))
        unsettled = np.flatnonzero(~(err <= bar))
        if unsettled.size == 0:
            return best, err
        if side > 0 and 4 * (unsettled[-1] + 1) <= best.size:
            end = int(unsettled[-1]) + 1  # entry k < end depends on a[:end], b[:end]
            head = a[:end]
            h, h_err = _plain_first_convolve(head, head if square else b[:end], tail, rigorous,
                                             exact)
            _take(best, err, slice(0, end), h[:end], h_err[:end], rigorous)
            return best, err
        if side < 0 and 4 * (best.size - unsettled[0]) <= best.size:
            start = int(unsettled[0])  # entry k >= start needs a[i0:], b[j0:] only
            i0, j0 = max(0, start - b.size + 1), max(0, start - a.size + 1)
            end_a = a[i0:]
            end_b = end_a if square and i0 == j0 else b[j0:]
            t, t_err = _plain_first_convolve(end_a, end_b, tail, rigorous, exact)
            skip = start - i0 - j0
            _take(best, err, slice(start, None), t[skip:], t_err[skip:], rigorous)
            return best, err
        # a tail pass below on the whole arrays is this one: handed down, not recomputed
        return _plain_first_convolve(a, b, tail, rigorous, exact, (side, best, err))
    return _plain_first_convolve(a, b, tail, rigorous, exact)


def _take(
    best: np.ndarray, err: np.ndarray, part: slice, est: np.ndarray, e: np.ndarray, pick: bool
) -> None:
    """Put ``(est, e)`` into ``best[part], err[part]``: everywhere, or with ``pick`` only
    where ``e`` is the smaller error (both are rigorous bounds: the smaller one wins)."""
    if pick:
        better = e < err[part]
        np.copyto(best[part], est, where=better)
        np.copyto(err[part], e, where=better)
    else:
        best[part], err[part] = est, e


def _plain_first_convolve(
    a: np.ndarray, b: np.ndarray, tail: float = 0.0, rigorous: bool = False,
    exact: bool = False, whole: tuple | None = None, roundoff: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Plain FFT convolution, with its two tails recomputed tilted where needed.

    Entries the plain pass knows to a relative error of ``PLAIN_RELATIVE_ERROR`` keep
    its value; the rest lie at the two ends and are recomputed tilted towards their
    end.  Entry ``k < K`` of ``a * b`` depends on ``a[:K]`` and ``b[:K]`` alone, and
    entry ``k >= K`` on ``a[K - len(b) + 1:]`` and ``b[K - len(a) + 1:]``, so each end
    costs a transform of its own length.  Nothing is recomputed when the plain pass's
    accumulated error is below a tenth of ``tail``, the mass the top cut may move anyway
    (with ``rigorous``: when its bound is below ``tail``; the bound, 100-200 times the
    estimate, is carried into the certificate whole).  The bottom tail's entries to
    recompute are chosen by the estimate, with or without ``rigorous``; the top tail's
    (the large losses, which decide delta) by the error attached, bound or estimate.
    The bound then decides, entry by entry, which value is kept.  ``b is a`` marks a square (one
    forward transform).  Returns ``(estimate, error)``, the error an estimate or, with
    ``rigorous``, a bound.  ``whole = (side, est, err)``: :func:`_tilted_convolve` of
    ``a, b`` towards ``side`` (same ``rigorous``, ``exact``), already made; a tail pass
    on the whole arrays that way is read from it, bit for bit what it would give: entry
    ``k``'s weight is ``e^{s + s' - k theta}`` whatever ``keep`` is, and with ``exact``
    the same product of two exps when the kept part starts at a multiple of
    :data:`_EXP_BLOCK` (every exponent is exact).  ``roundoff``: ``_fft_roundoff(a, b)``,
    already computed by the caller.
    """
    if min(a.size, b.size) < 64:
        c = np.convolve(a, b)
        err = _direct_error(c, min(a.size, b.size)) if rigorous else 1e-15 * np.abs(c)
        return np.maximum(c, 0.0), err
    square = a is b
    c = _fft_convolve(a, b, square)
    guess = 4e-16 * abs(max(float(c.max()), -float(c.min())))  # max |c_k|, no |c| array
    noise = (_fft_roundoff(a, b) if roundoff is None else roundoff) if rigorous else guess
    peak = int(np.argmax(c))
    best = np.maximum(c, 0.0, out=c)  # c is this call's own
    err = np.full(c.size, noise)
    if noise * c.size < (1.0 if rigorous else 0.1) * tail:
        return best, err
    # the top tail by the bound (it decides delta), the bottom one by the estimate
    # (each side tested on its own half, its last / first weak entry found by argmax)
    weak = best[:peak][::-1] < guess / PLAIN_RELATIVE_ERROR  # reversed: its last first
    weak_top = best[peak:] < noise / PLAIN_RELATIVE_ERROR
    last_weak = int(np.argmax(weak)) if peak else 0
    if peak and weak[last_weak]:
        end = peak - last_weak  # entries [0, end) are recomputed
        if whole is not None and whole[0] < 0 and end >= max(a.size, b.size):
            est, e = whole[1][:end], whole[2][:end]
        else:
            est, e = _tilted_convolve(a[:end], b[:end], square, -1, rigorous, (0, end), exact)
        better = e < noise
        np.copyto(best[:end], est, where=better)
        np.copyto(err[:end], e, where=better)  # (noise elsewhere already)
    first_weak = int(np.argmax(weak_top))
    if weak_top[first_weak]:
        start = peak + first_weak  # entries [start, n) are recomputed
        i0, j0 = max(0, start - b.size + 1), max(0, start - a.size + 1)
        skip = start - i0 - j0
        if (whole is not None and whole[0] > 0 and i0 == j0 == 0
                and (not exact or skip % _EXP_BLOCK == 0)):
            est, e = whole[1][skip:], whole[2][skip:]
        else:
            est, e = _tilted_convolve(
                a[i0:], b[j0:], square and i0 == j0, 1, rigorous, (skip, None), exact
            )
        better = e < noise
        np.copyto(best[start:], est, where=better)
        np.copyto(err[start:], e, where=better)
    return best, err


def _certified_side(
    est: np.ndarray, err: np.ndarray, upper: bool, inplace: bool = False
) -> np.ndarray:
    """``est + err`` rounded up (``upper``) or ``max(est - err, 0)`` rounded down.

    The ``4u`` factor absorbs the rounding of the sum and of the product itself, so
    the result is entrywise above (below) every value within ``err`` of ``est``.
    ``inplace``: written into ``est`` (the same operations, the same values).
    """
    out = est if inplace else None
    if upper:
        side = np.add(est, err, out=out)
        side *= 1 + 4 * _U
        return side
    side = np.subtract(est, err, out=out)
    np.maximum(side, 0.0, out=side)
    side *= 1 - 4 * _U
    return side


def _certified_convolve(
    a: np.ndarray, b: np.ndarray, tail: float, upper: bool, exact: bool = False
) -> np.ndarray:
    """``a * b`` for a composition: with :data:`CERTIFY_ROUNDOFF`, entrywise above
    (``upper``) or below the exact product in floating point; else the estimate.
    ``exact``: tilts with exact exponents (:func:`_tilted_convolve`), which
    :meth:`GridPLD.convolve <dpacct.accountant.pld.grid.GridPLD.convolve>` uses for
    pessimistic products."""
    if not CERTIFY_ROUNDOFF:
        return _accurate_convolve(a, b, tail)
    est, err = _bounded_convolve(a, b, tail, exact)
    return _certified_side(est, err, upper, inplace=True)  # est is this call's own


def _top_index(c: np.ndarray, limit: float) -> int:
    """Smallest ``k`` with ``sum(max(c[k:], 0)) <= limit``, summing only the tail needed."""
    acc, end, chunk = 0.0, c.size, 64
    while end > 0:
        start = max(0, end - chunk)
        seg = acc + np.cumsum(np.maximum(c[start:end], 0.0)[::-1])
        over = np.flatnonzero(seg > limit)
        if over.size:
            return end - int(over[0])
        acc, end, chunk = float(seg[-1]), start, chunk * 4
    return 0


def _bottom_index(c: np.ndarray, limit: float) -> int:
    """Largest ``k`` with ``sum(max(c[:k+1], 0)) <= limit`` (-1 if none), summing only
    the head needed."""
    acc, start, chunk = 0.0, 0, 64
    while start < c.size:
        end = min(c.size, start + chunk)
        seg = acc + np.cumsum(np.maximum(c[start:end], 0.0))
        over = np.flatnonzero(seg > limit)
        if over.size:
            return start + int(over[0]) - 1
        acc, start, chunk = float(seg[-1]), end, chunk * 4
    return c.size - 1


def _tail_cuts(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, tail: float, bottom: float | None = None
) -> tuple[int, float, int, float]:
    """Index cuts of the convolution ``a * b`` with exactly computed tail masses.

    Returns ``(k_lo, mass(i+j <= k_lo), k_hi, mass(i+j >= k_hi))`` with the top mass at
    most ``tail`` and the bottom mass at most ``bottom`` (default ``tail``).  A tail
    mass is computed exactly as ``sum_i a_i S_b(k - i)`` from partial sums of ``b`` --
    non-negative terms, full relative precision, no FFT round-off.  Only the partial
    sums near each cut are formed (cuts sit near the ends); the union-bound fallback,
    rarely needed, uses full ones.
    """
    la, lb = a.size, b.size
    n = la + lb - 1
    total_b = float(b.sum())

    def upper_mass(k: int) -> float:
        # i >= k: every j counts; k - lb < i < k: the suffix of b from k - i
        lo, hi = max(k - lb + 1, 0), min(k, la)
        mass = total_b * float(a[min(k, la) :].sum())
        if hi > lo:
            j0 = k - hi + 1  # suffix sums of b at j0 .. j0 + (hi - lo) - 1
            suffix_b = np.cumsum(b[j0:][::-1])[::-1]
            mass += float(np.dot(a[lo:hi], suffix_b[: hi - lo][::-1]))
        return mass

    def lower_mass(k: int) -> float:
        # sum_i a_i * sum_{j <= k - i} b_j; rows i <= k - lb + 1 take the whole of b
        lo, hi = 0, min(k + 1, la)
        mass = 0.0
        full = max(k - lb + 1, 0)
        if full > 0:
            mass += float(a[: min(full, la)].sum()) * total_b
            lo = min(full, la)
        if hi > lo:
            # prefix sums cb[m] = sum_{j < m} b_j for m = k - hi + 2 .. k - lo + 1
            prefix_b = np.concatenate([[0.0], np.cumsum(b[: k - lo + 1])])
            mass += float(np.dot(a[lo:hi], prefix_b[k - hi + 2 : k - lo + 2][::-1]))
        return mass

    # Candidate cuts from the FFT output (cheap, but noisy far out); each candidate's
    # exact mass is then checked, and if it exceeds the budget the union bound gives a
    # cut that is always valid: {i + j >= ia + jb} lies inside {i >= ia} U {j >= jb}.
    k_hi = _top_index(c, 0.5 * tail)
    m_hi = upper_mass(k_hi) if k_hi < n else 0.0
    if m_hi > tail:
        sa = np.concatenate([np.cumsum(a[::-1])[::-1], [0.0]])  # sa[m] = sum_{i>=m} a_i
        sb = sa if b is a else np.concatenate([np.cumsum(b[::-1])[::-1], [0.0]])
        ia = int(np.searchsorted(-sa, -0.5 * tail, side="left"))
        jb = int(np.searchsorted(-sb, -0.5 * tail, side="left"))
        k_hi = min(ia + jb, n)
        m_hi = upper_mass(k_hi) if k_hi < n else 0.0
    bottom = tail if bottom is None else bottom
    k_lo = _bottom_index(c, 0.5 * bottom)
    m_lo = lower_mass(k_lo) if k_lo >= 0 else 0.0
    if m_lo > bottom:
        # {i + j <= ia + jb} lies inside {i <= ia} U {j <= jb}
        ca = np.concatenate([[0.0], np.cumsum(a)])  # ca[m] = sum_{i<m} a_i
        cb = ca if b is a else np.concatenate([[0.0], np.cumsum(b)])
        ia = int(np.searchsorted(ca, 0.5 * bottom, side="right")) - 2
        jb = int(np.searchsorted(cb, 0.5 * bottom, side="right")) - 2
        k_lo = ia + jb if ia >= 0 and jb >= 0 else -1
        m_lo = lower_mass(k_lo) if k_lo >= 0 else 0.0
    return k_lo, m_lo, k_hi, m_hi


#: relative error bound per entry class of one FFT pass (Higham 2002, Theorem 24.2:
#: ``||fl(FFT x) - FFT x||_2 <= log2(N) eta / (1 - log2(N) eta) ||FFT x||_2`` with
#: ``eta = mu + gamma_4 (sqrt 2 + mu)``; ``mu`` the twiddle error :data:`_MU`)
_U = 2.0**-53

#: longest FFT the fast path uses; beyond, it declines and the engine's route is used
FAST_MAX_N = 1 << 22


def _fft_rel(n: int) -> float:
    """Normwise relative error bound of one FFT of length ``n``.

    The larger of Higham's radix-2 bound with the twiddle error :data:`_MU` and, for a
    5-smooth ``n`` (every length the engine passes), :func:`_pass_model`'s bound for
    pocketfft's actual radix-4/2/3/5 passes.  (Until issue 37 the twiddle error was
    taken as ``2 u``; pocketfft's table products may err by up to ``_MU``.)
    """
    lg = math.ceil(math.log2(max(n, 2)))
    mu = _MU
    eta = mu + (4 * _U / (1 - 4 * _U)) * (math.sqrt(2.0) + mu)
    higham = lg * eta / (1 - lg * eta)
    try:
        return max(higham, _pass_model(n)[0])
    except ValueError:  # not 5-smooth: pocketfft's own passes are not modelled
        return higham


def _power(x: np.ndarray, k: int, consume: bool = False) -> tuple[np.ndarray, int]:
    """``x ** k`` by repeated squaring, and the ``k - 1`` rounded products it carries.

    ``consume``: ``x`` is the caller's to give up (a fresh product or transform), so
    the result may be ``x`` itself, changed in place, instead of a copy of it (the same
    values: the copy was only ever multiplied in place; issue 37, session 34)."""
    out: np.ndarray | None = None
    mults = max(int(k) - 1, 0)
    cur = x
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        while k:
            if k & 1:
                if out is None:
                    out = cur if consume and cur is x else cur.copy()
                else:
                    out *= cur
            k >>= 1
            if k:  # (x itself is the caller's: squared into a new array once)
                cur = cur * cur if cur is x else np.multiply(cur, cur, out=cur)
    return (np.ones_like(x) if out is None else out), mults


def _spectrum_product(pmfs: list[np.ndarray], counts: np.ndarray, n: int):
    """``prod_c rfft(p_c, n)^{k_c}`` (cells of equal count multiplied first, the group
    product raised to the count by repeated squaring) and the number of products."""
    n_cells = len(pmfs)
    lengths = np.array([p.size for p in pmfs], dtype=np.int64)
    groups: dict[int, np.ndarray] = {}
    factors: dict[int, int] = {}  # rounded products each group's product carries
    mults = 0
    rows = max(1, min(n_cells, (1 << 21) // n))
    for s0 in range(0, n_cells, rows):
        nr = min(rows, n_cells - s0)
        block = _dense(pmfs[s0 : s0 + nr], lengths[s0 : s0 + nr], n)
        spec = _rfft(block, n)
        # freed as soon as used, not when the next block replaces them: at most two
        # block-sized tables at a time (64 PMFs on a 65 536-point window, blocks of 32
        # rows: traced 83 -> under 44 MB with the row-by-row _dense)
        del block
        k = np.asarray(counts[s0 : s0 + nr], dtype=np.int64)
        for kk in np.unique(k):
            sel = spec[k == kk]
            prod = np.prod(sel, axis=0)
            f = sel.shape[0]
            del sel
            if int(kk) in groups:
                groups[int(kk)] *= prod
                factors[int(kk)] += f + 1
            else:
                groups[int(kk)] = prod
                factors[int(kk)] = f
        del spec
    spec = np.ones(n // 2 + 1, dtype=complex)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        for kk, prod in groups.items():
            pw, m = _power(prod, kk, consume=True)
            spec *= pw
            mults += kk * factors[kk] + m + 1  # the power multiplies what prod carries
    return spec, mults


def _l2(x: np.ndarray) -> float:
    """Euclidean norm without BLAS (whose threads spin on a busy machine), rounded up."""
    if np.iscomplexobj(x):
        if x.dtype == np.complex128 and x.flags.c_contiguous and x.ndim == 1:
            v = x.view(np.float64)  # each re^2 + im^2 the same float, one pass fewer
            v = v * v
            sq = float(np.sum(v[0::2] + v[1::2]))
        else:
            sq = float(np.sum(x.real * x.real + x.imag * x.imag))
    else:
        sq = float(np.sum(x * x))
    return math.sqrt(sq) * (1 + 1e-12 + x.size * _U)


def _spectral_error(spec: np.ndarray, n: int, mults: int, norms: float, fwd: float = math.inf):
    """Inverse FFT of a product spectrum and its round-off: ``(freq_l2, y, inv_l1)``.

    ``freq_l2`` bounds the l2 error of the spectrum, ``inv_l1`` that of the inverse
    transform in l1; together an l1 bound on ``y`` minus the exact circular PMF.  ``fwd``:
    another bound on the forward errors carried through the powers (the smaller is used).
    """
    rho = _fft_rel(n)
    fwd_l2 = min(norms * rho * math.sqrt(n), fwd)
    finite = np.isfinite(spec)
    if not finite.all():  # (else the same values: no copy of the spectrum)
        spec = np.where(finite, spec, 0.0)
    # a complex product's relative error is below sqrt(5) u (Brent, Percival & Zimmermann
    # 2007): M rounded products carried (x^k: k - 1) compound to at most (1 + 3u)^M - 1
    rel = math.expm1(mults * math.log1p(3 * _U))
    sum_l2 = math.sqrt(2.0) * _l2(spec) * rel
    # forward errors through the powers: |a^k - b^k| <= k |a - b| max(|a|, |b|)^(k-1),
    # |FFT p| <= 1 up to its own round-off (the 1e-6 slack covers (1 + e)^k)
    freq_l2 = (fwd_l2 + sum_l2) * (1 + 1e-6)
    y = _irfft(spec, n)
    inv_l1 = math.sqrt(n) * rho * (1 + freq_l2 / math.sqrt(n)) * (_l2(y) + TINY)
    return freq_l2, y, inv_l1
