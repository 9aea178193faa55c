"""A certified lower bound for random allocation at every k: a sum-statistic attack.

One epoch of k-of-T random allocation of Gaussian steps (noise multiplier ``sigma``,
the target's gradient a unit vector, everyone else's zero: Chua et al. 2024, "How
private are DP-SGD implementations?", Section 4) releases ``x in R^T`` with

    ``Q = N(0, sigma^2 I_T)`` (record absent),
    ``P_k = C(T, k)^-1 sum_{|S| = k} N(1_S, sigma^2 I_T)`` (record in a uniform k-subset).

Every function of ``x`` is a post-processing of that pair, so its pair of push-forward
laws has hockey-stick divergences at most the mechanism's, in both orders (data
processing), and its epsilon is a lower bound on the mechanism's.  The statistic here
(docs/theory/allocation_k_of_t.md, Proposition 2) is

    ``U = sum_t floor(log(1 + c z_t) / h)  (mod N)``,
    ``z_t = exp(x_t / sigma^2 - 1 / (2 sigma^2))``,

each term capped at ``M - 1`` (or with ``z_t^a`` for an exponent ``a > 0``: Corollary
2b, searched at small ``T``).  ``z_t`` is the likelihood ratio of one coordinate;
``log(1 + c z)`` is the log of the generating function ``prod_t (1 + c z_t) = sum_j c^j
e_j(z)`` of the elementary symmetric polynomials, whose ``j = k`` coefficient is the
exact likelihood ratio ``e_k(z) / C(T, k)`` of the pair: with ``c`` about ``k / T``
the statistic is close to sufficient in the region that sets delta (and for small
``c`` it is ``c`` times the sum ``sum_t z_t``, the first-order sufficient statistic).
The terms are independent under both laws, ``T`` unshifted under ``Q``; ``k`` shifted
and ``T - k`` unshifted under ``P_k`` (whichever ``S`` is drawn: the law of ``U`` is the
same for every ``S``), so the two laws of ``U`` are convolution powers of two
lattice laws, folded modulo ``N`` (the ``mod N`` is part of the statistic, so folding
loses nothing in soundness).  Nothing is approximated but floating point:

* each term's lattice masses are differences of normal CDFs taken on the side of the
  median where they do not cancel, with an error bound of ``(4 + 1 + x^2) 1e-15``
  times the value at the cell's near edge ``x`` (scipy's ``ndtr`` is accurate to a few
  ulps; the rounding of ``x`` moves ``Phi`` by at most ``x^2 Phi(x)`` ulps in the tail),
  and rounded outward: lower and upper entrywise bounds;
* every convolution is the engine's certified kernel
  (:func:`~dpacct.accountant.pld.pld_fft._bounded_convolve`: an estimate and a rigorous
  per-entry error bound), applied to the lower bounds (then rounded down) and to the
  upper bounds (then rounded up): convolution and folding are positive linear maps, so
  entrywise bounds stay bounds.

In each direction the numerator's masses are the lower bounds and the denominator's the
upper bounds; pointwise ``(p'_i - e^eps q'_i)_+ <= (p_i - e^eps q_i)_+``, so every
hockey-stick divergence of the rounded pair (and of its products: composed epochs) is
at most the statistic's, and its epsilon is a certified lower bound.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator

import numpy as np
from scipy import special

from ..laws.loss_law import AtomicLossLaw
from ..mechanism import Capabilities, Mechanism
from ..pld import pld_fft
from ..validation import check_count, check_delta, check_positive
from .compose import compose

__all__ = [
    "POWER_RANGE",
    "SUM_MIN_SIGMA",
    "shared_lower_bounds",
    "sum_statistic_laws",
    "sum_statistic_lower_epsilon",
]

#: the memo of :func:`shared_lower_bounds` (None outside such a block)
_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("_SHARED", default=None)


@contextlib.contextmanager
def shared_lower_bounds() -> Iterator[None]:
    """Within the block, a lower bound asked twice with the same arguments is computed once.

    :func:`sum_statistic_lower_epsilon` (with its default factors) and the
    largest-coordinate attack of
    :func:`~dpacct.accountant.transformers.random_allocation_lower.random_allocation_lower_epsilon`
    are deterministic functions of their checked arguments; a report that asks for the
    same bound through two routes (``sampler_report``: shuffled batches and balls-in-bins
    share the k = 1 bound) reuses the first answer, the same float.  The memo lives only
    for the block (a context variable, so threads and nested blocks do not share it), so a
    later change of the engine's settings is never answered from it.

    Examples
    --------
    >>> with shared_lower_bounds():
    ...     a = sum_statistic_lower_epsilon(1.0, 20, 1e-6)
    ...     b = sum_statistic_lower_epsilon(1.0, 20, 1e-6)   # from the memo
    >>> a == b
    True
    """
    token = _SHARED.set({}) if _SHARED.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _SHARED.reset(token)


def _shared(key: tuple, compute: Callable[[], float]) -> float:
    """``compute()``, memoised under ``key`` inside a :func:`shared_lower_bounds` block."""
    memo = _SHARED.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]

#: lattice step of one term, as a fraction of the term's spread
_CELLS_PER_SD = 12.0
#: the candidates for ``c``, in units of ``k / T`` (each gives a lower bound; the
#: largest is kept): the first always; the next three only up to :data:`_SMALL_T` steps,
#: where they are cheap and often better (measured at 1e-6, sigma 1: T 10, k 2: 4.05
#: and 4.02 against 3.89; T 100, k 3: 2.074 and 2.110 against 2.106; 0.36 at sigma 0.6,
#: T 100, k 2: 5.5506 against 5.5354, the best of 0.02-30 there); the last for
#: k = 1 (sigma 0.8, T 10 000: 0.0764 against 0.0754; for k > 1 it was below the first
#: everywhere measured).  For k >= 2 up to :data:`_SMALL_T` steps the first four start a
#: search (:func:`_search_factor`)
C_FACTORS = (0.7, 0.3, 0.45, 0.36, 3.0)
_SMALL_T = 300
#: the search's parabolic steps at most, and its stopping distance in ``log f``: the
#: bound is smooth in ``log f`` near its peak (sigma 1, T 100, k 3 at 1e-6: 2.1144,
#: 2.1160, 2.1148 at f = 0.5, 0.55, 0.6), so a step of 2 % moves it by ~1e-5
_SEARCH_STEPS = 4
_SEARCH_TOL = 0.02
#: the range of ``f`` the search may reach
_F_RANGE = (0.05, 5.0)
#: no search where the starting values agree to this relative spread (flat in ``c``:
#: at sigma 50, T 100, k 2 they agree to 1e-5 and four steps gained 1e-7)
_FLAT = 1e-4
#: the exponents ``a`` of ``log(1 + c z^a)`` the second search tries in turn (after the
#: search in ``c`` at ``a = 1``, each with its own search in ``c``, stopping at the first
#: that does not raise the bound), up to :data:`_POWER_T` steps, where evaluations are
#: cheap and the gain is largest (delta 1e-6, k = 3: sigma 0.7, T 10: 9.8325 -> 9.8506
#: at a 1.4; sigma 1, T 10: 5.6802 -> 5.6893 at 1.2; sigma 0.8, T 10: 7.9753 -> 7.9904
#: at 1.3; at T 100 at most +0.1 %: sigma 1, k 3: 2.11591 -> 2.11607 at 1.1)
_POWERS = (1.15, 1.3, 1.45)
_POWER_T = 50
#: the exponents a caller may ask for
POWER_RANGE = (0.5, 3.0)
#: the largest fold length (memory: a few arrays of this many floats)
_MAX_FOLD = 2**21
#: the smallest noise multiplier the statistic is built for (below it the terms'
#: log-normal spread, ``e^{1/sigma^2}``, leaves floating point)
SUM_MIN_SIGMA = 0.3
#: relative error per unit of a CDF value allowed to scipy's ndtr (a few ulps)
_NDTR_ULPS = 1e-15
#: each term is capped where log z is this many sd above the shifted law's mean (a
#: cap is a post-processing: it only loosens the bound, at deltas below ~1e-15)
_TOP_SD = 8.0
#: the fold covers this many sd of the sum of ``T`` unshifted terms on either side of
#: its mean, plus ``k + 2`` times one term's range
_FOLD_SD = 15.0
#: the statistic built for an epsilon hint (k = 1, one epoch, more than :data:`_SMALL_T`
#: steps; :func:`_hinted_lattice`): each term capped where one term alone puts the loss
#: at ``_HINT_CAP`` times the hint (log z at ``log1p(T expm1(_HINT_CAP hint))``), in sd
#: of log z within :data:`_HINT_TOP_SD` ...
_HINT_CAP = 2.0
_HINT_TOP_SD = (4.0, _TOP_SD)
#: ... on a fold of this many sd of the sum either side (issue 37, session 33: at sigma
#: 0.8, T 1e4 the fold drops from 2^19 to 2^16 cells and the certified kernel's
#: round-off bounds, which grow with the fold's empty reach, from 3e-4 to 6e-5 of
#: epsilon: 0.076402 -> 0.076634 at the factor 0.7 alone) ...
_HINT_FOLD_SD = 10.0
#: ... with the factors ``f`` of ``c = f / T`` tried: the first always, the second where
#: its fold has at most :data:`_HINT_SECOND_FOLD` cells (measured, delta 1e-6: sigma
#: 0.8, T 1e3: 0.44934 at 0.4 against 0.44798 at 0.7; sigma 1, T 1e3: 0.171654 against
#: 0.171566; at sigma 2, T 1e3 0.7 is the larger, bit for bit main's answer)
_HINT_FACTORS = (0.7, 0.4)
_HINT_SECOND_FOLD = 2**15


def _term_bounds(
    sigma: float, c: float, h: float, cells: int, power: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entrywise ``(lower, upper)`` bounds of one term's lattice law, unshifted and shifted.

    Cell ``j < cells - 1`` holds ``floor(log(1 + c z^a) / h) = j`` (``a = power``), the
    last cell the rest: ``z^a`` between ``expm1(j h) / c`` and ``expm1((j + 1) h) / c``.
    ``log z`` is ``N(-1/(2 sigma^2), 1/sigma^2)`` unshifted and ``N(+1/(2 sigma^2),
    1/sigma^2)`` shifted (the record's coordinate, ``x ~ N(1, sigma^2)``).
    """
    edges = np.expm1(np.arange(cells) * h) / c
    with np.errstate(divide="ignore"):
        lz = np.log(edges)
        if power != 1.0:
            lz /= power
        lz = np.concatenate((lz, [np.inf]))
    half = 0.5 / (sigma * sigma)

    def cells_of(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = z[:-1], z[1:]
        k = int(np.searchsorted(lo, 0.0, side="left"))  # cells left of the median
        mass = np.empty(lo.size)
        near = np.empty(lo.size)
        mass[:k] = special.ndtr(hi[:k]) - special.ndtr(lo[:k])
        near[:k] = special.ndtr(hi[:k])
        mass[k:] = special.ndtr(-lo[k:]) - special.ndtr(-hi[k:])
        near[k:] = special.ndtr(-lo[k:])
        mass = np.maximum(mass, 0.0)
        # ndtr's own error (a few ulps) and the rounding of its argument x (relative
        # 1e-16 moves Phi by phi(x) |x| 1e-16 <= x^2 Phi(x) 1e-16 in the tails; the two
        # laws' edges are rounded separately, so this is not a common shift of edges)
        x = np.where(np.arange(lo.size) < k, hi, -lo)
        x2 = np.where(np.isfinite(x), x * x, 0.0)
        err = (4.0 * _NDTR_ULPS + 1e-15 * (1.0 + x2)) * (near + mass)
        return np.maximum(mass - err, 0.0), mass + err

    a_lo, a_hi = cells_of(sigma * (lz + half))
    b_lo, b_hi = cells_of(sigma * (lz - half))
    return a_lo, a_hi, b_lo, b_hi


def _fold(c: np.ndarray, n: int) -> np.ndarray:
    """``c`` folded modulo ``n`` (entry ``i`` to ``i mod n``)."""
    pad = (-c.size) % n
    return np.concatenate((c, np.zeros(pad))).reshape(-1, n).sum(axis=0)


def _product(x: np.ndarray, y: np.ndarray, n: int, upper: bool) -> np.ndarray:
    """Entrywise bound (``upper``: above, else below) on ``x * y`` folded modulo ``n``,
    given entrywise bounds of the same side for ``x`` and ``y`` (round-off included)."""
    # the kernel's tilt rate divides by an array's (denormal) end entry and overflows
    # to inf, which it then caps: a benign warning, silenced here
    with np.errstate(over="ignore"):
        est, err = pld_fft._bounded_convolve(x, y if y is not x else x)
    side = pld_fft._certified_side(est, err, upper)
    out = _fold(side, n)
    # the fold's own additions: at most (folds) ulps relative, on the safe side
    folds = -(-side.size // n)
    return out * (1.0 + 4e-16 * folds) if upper else out * (1.0 - 4e-16 * folds)


def _power(
    x: np.ndarray, m: int, n: int, upper: bool, ladder: list | None = None
) -> np.ndarray:
    """Bound on the ``m``-fold convolution power of ``x`` modulo ``n`` (``m >= 1``),
    by repeated squaring.

    ``ladder``: the squarings ``[x, x^2, x^4, ...]`` (bounds of this side) made so far,
    extended here as needed; powers of one ``x`` share it (the squarings are the same
    products of the same arrays, so every power is the float it would be alone).
    """
    if ladder is None:
        ladder = [x]
    acc = None
    j = 0
    while True:
        if m & 1:
            acc = ladder[j] if acc is None else _product(acc, ladder[j], n, upper)
        m >>= 1
        if not m:
            return acc
        j += 1
        if j == len(ladder):
            ladder.append(_product(ladder[-1], ladder[-1], n, upper))


def _lattice(
    s: float, t: int, kk: int, cc: float, pw: float, top_sd: float, fold_sd: float
) -> tuple[float, int, int]:
    """The statistic's lattice step ``h``, cells of one term and fold length ``n``.

    ``h`` is :data:`_CELLS_PER_SD` cells per spread of one term; the last cell starts
    where ``log z`` is ``top_sd`` sd above the shifted law's mean; the fold ``n`` (a
    power of two, at most :data:`_MAX_FOLD`) covers ``fold_sd`` sd of the sum of ``T``
    terms either side plus ``k + 2`` terms' ranges.  Every choice is a post-processing
    (module docstring): it moves the bound's tightness and cost, never its soundness.
    """
    if pw == 1.0:
        sd_z = math.sqrt(math.expm1(1.0 / (s * s)))
    else:  # z^a is log-normal: log-mean -a / (2 s^2), log-sd a / s
        sd_z = math.exp(pw * (pw - 1.0) / (2.0 * s * s)) * math.sqrt(math.expm1(pw * pw / (s * s)))
    spread = min(cc * sd_z, pw / s)  # about the spread of log(1 + c z^a)
    h = spread / _CELLS_PER_SD
    z_top = 0.5 / (s * s) + top_sd / s  # log z: top_sd sd above the shifted law's mean
    cells = int(math.log1p(cc * math.exp(pw * z_top)) / h) + 2
    fold = 2.0 * fold_sd * math.sqrt(t) * _CELLS_PER_SD + (kk + 2) * cells
    n = min(int(2 ** math.ceil(math.log2(fold))), _MAX_FOLD)
    if cells >= n:  # an extreme c: a coarser lattice (any lattice is a post-processing)
        h *= cells / (n // 4)
        cells = n // 4
    return h, cells, n


def sum_statistic_laws(
    sigma: float,
    steps: int,
    k: int,
    c: float,
    *,
    power: float = 1.0,
    top_sd: float = _TOP_SD,
    fold_sd: float = _FOLD_SD,
) -> tuple[AtomicLossLaw, AtomicLossLaw]:
    """Loss laws ``(remove, add)`` of the sum statistic, rounded for a lower bound.

    See the module docstring; with ``power = a`` the terms are ``log(1 + c z_t^a)``
    (docs/theory/allocation_k_of_t.md, Proposition 2: any increasing function of ``z_t``
    cut into cells gives a statistic).  ``remove`` is the loss of ``P_k`` against ``Q``
    under ``P_k`` (numerator masses rounded down, denominator up); ``add`` the reverse.

    Parameters
    ----------
    sigma : float
        Noise multiplier, >= :data:`SUM_MIN_SIGMA`.
    steps : int
        Steps per epoch ``T``, >= 2.
    k : int
        Steps per record per epoch, ``1 <= k < T``.
    c : float
        The statistic's parameter, > 0.
    power : float, default 1.0
        The exponent ``a`` of ``z`` in each term, in :data:`POWER_RANGE`.
    top_sd : float, default 8.0
        Each term is capped where ``log z`` is this many sd (``1 / sigma``) above the
        shifted law's mean, > 0.
    fold_sd : float, default 15.0
        The fold modulo ``N`` covers this many sd of the sum either side (plus ``k + 2``
        terms' ranges), > 0.  Both are post-processings: any values give a certified
        law; they trade tightness against the fold's length (cost).

    Returns
    -------
    tuple of AtomicLossLaw

    Examples
    --------
    >>> rem, add = sum_statistic_laws(1.0, 10, 2, 0.2)
    >>> bool(float(rem.p.sum()) <= 1.0 and float(add.p.sum()) <= 1.0)
    True
    """
    s = check_positive("sigma", sigma)
    if s < SUM_MIN_SIGMA:
        raise ValueError(f"sigma must be >= {SUM_MIN_SIGMA} for the sum statistic, got {s}")
    t = check_count(steps, "steps")
    kk = check_count(k, "k")
    if not kk < t:
        raise ValueError(f"k must be < steps ({t}), got {kk}")
    cc = check_positive("c", c)
    pw = check_positive("power", power)
    if not POWER_RANGE[0] <= pw <= POWER_RANGE[1]:
        raise ValueError(f"power must be in {list(POWER_RANGE)}, got {power}")
    top = check_positive("top_sd", top_sd)
    reach = check_positive("fold_sd", fold_sd)
    h, cells, n = _lattice(s, t, kk, cc, pw, top, reach)
    a_lo, a_hi, b_lo, b_hi = _term_bounds(s, cc, h, cells, pw)
    sides = {}
    for upper, a, b in ((False, a_lo, b_lo), (True, a_hi, b_hi)):
        a_n = _fold(a, n)
        ladder = [a_n]  # the squarings of a_n, shared by its two powers
        common = _power(a_n, t - kk, n, upper, ladder)
        q = _product(common, _power(a_n, kk, n, upper, ladder), n, upper)
        p = _product(common, _power(_fold(b, n), kk, n, upper), n, upper)
        sides[upper] = (p, q)
    (p_lo, q_lo), (p_hi, q_hi) = sides[False], sides[True]
    return _law(p_lo, q_hi), _law(q_lo, p_hi)


def _law(num: np.ndarray, den: np.ndarray) -> AtomicLossLaw:
    """Loss law ``log(num / den)`` under ``num``; ``den = 0`` where ``num > 0``: +inf.

    An entry whose bounds are not finite (a round-off bound that overflowed) is dropped:
    its numerator rounded down to 0, the safe side for a lower bound.
    """
    keep = (num > 0) & np.isfinite(num) & np.isfinite(den)
    pos = keep & (den > 0)
    inf_mass = min(float(num[keep & (den == 0)].sum()), 1.0)
    return AtomicLossLaw(
        losses=np.log(num[pos]) - np.log(den[pos]), p=num[pos], inf_mass=inf_mass
    )


def _atomic_epsilon_lower(law: AtomicLossLaw, delta: float) -> float:
    """A lower bound on the epsilon at ``delta`` of one direction of a finite pair.

    With the atoms sorted by loss, ``delta(eps) = P_k - e^eps Q_k`` between the
    ``k``-th and ``k+1``-th largest losses (``P_k``, ``Q_k`` the masses above), so
    ``eps = log(P_k - delta) - log Q_k`` on the first interval where it falls.  That
    float is then lowered until ``delta(eps)``, evaluated directly, exceeds ``delta``
    by more than its rounding error (``1e-9`` relative): then the true epsilon, the
    least ``eps`` with ``delta(eps) <= delta``, is above it.  0 if none is found.
    """
    order = np.argsort(law.losses)[::-1]
    loss, p = law.losses[order], law.p[order]
    big_p = np.cumsum(p)
    log_q = np.logaddexp.accumulate(np.log(p) - loss)  # log Q_k, no underflow
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.log(big_p - delta) - log_q
    below = np.concatenate([loss[1:], [-np.inf]])
    ok = np.flatnonzero((cand >= below) & (cand <= loss) & (big_p > delta))
    if ok.size == 0:
        return 0.0
    eps = float(cand[ok[0]])
    for _ in range(60):
        if eps <= 0.0:
            return 0.0
        above = loss > eps
        value = float(np.sum(-p[above] * np.expm1(eps - loss[above])))
        if value * (1.0 - 1e-9) > delta:
            return eps
        eps -= max(abs(eps) * 1e-9, 1e-300) * 2.0 ** _
    return 0.0


class _SumStatisticPair(Mechanism):
    """The sum statistic's rounded pair of one epoch, for the engine to compose."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, laws: tuple[AtomicLossLaw, AtomicLossLaw]) -> None:
        self._laws = laws

    def _loss_laws(self):
        return self._laws


def sum_statistic_lower_epsilon(
    sigma: float,
    steps: int,
    delta: float,
    *,
    k: int = 1,
    epochs: int = 1,
    c_factors: tuple[float, ...] | None = None,
    epsilon_hint: float | None = None,
) -> float:
    """Certified lower bound on epsilon of k-of-T random allocation (Gaussian steps).

    The largest over ``c = f k / T`` (``f`` in ``c_factors``, and by default at
    ``k >= 2`` and up to 300 steps the points of a search from them,
    :func:`_search_factor`; up to :data:`_POWER_T` steps also over the exponents
    :data:`_POWERS` of ``log(1 + c z^a)``, each with its own search in ``c``) of the
    epsilon of the sum statistic's rounded pair (module docstring), in the larger of its
    two directions: one epoch read exactly off the atoms, several composed by the PLD
    engine and read at the lower end of its certified bracket.  Every ``(c, a)`` gives a
    certified bound, so their maximum is one (docs/theory/allocation_k_of_t.md,
    Proposition 2 and Corollaries 2a, 2b).

    Parameters
    ----------
    sigma : float
        Noise multiplier of each step, >= :data:`SUM_MIN_SIGMA`.
    steps : int
        Steps per epoch ``T``, >= 2.
    delta : float
        Target delta, in (0, 1).
    k : int, default 1
        Steps per record per epoch, ``1 <= k < T``.
    epochs : int, default 1
        Epochs composed, >= 1.
    c_factors : tuple of float, optional
        The statistic's parameters tried, in units of ``k / T``; default
        :data:`C_FACTORS` (the second to fourth up to 300 steps, the last for
        ``k = 1``), then at ``k >= 2`` up to 300 steps a search from them; given
        factors are tried as given, without a search.
    epsilon_hint : float, optional
        An estimate of the epsilon sought (e.g. a certified upper bound), > 0.  At
        ``k = 1``, one epoch, more than 300 steps and the default factors, the
        statistic is built for it (:func:`_hinted_lattice`: capped where one term puts
        the loss at twice the hint, a shorter fold, the factors :data:`_HINT_FACTORS`):
        at sigma 0.8, T 1e4, delta 1e-6 about 10x less CPU and a larger bound (0.076634
        against 0.076402).  Elsewhere ignored.  Any hint gives a certified bound (the
        cap and the fold are post-processings); it moves tightness and cost only.

    Examples
    --------
    >>> lo = sum_statistic_lower_epsilon(1.0, 20, 1e-6, k=3)
    >>> bool(4.2 < lo < 4.4)
    True
    >>> fast = sum_statistic_lower_epsilon(1.0, 1000, 1e-6, epsilon_hint=0.1718)
    >>> bool(0.1715 < fast < 0.1718)
    True
    """
    s = check_positive("sigma", sigma)
    t = check_count(steps, "steps")
    kk = check_count(k, "k")
    e = check_count(epochs, "epochs")
    d = check_delta(delta)
    if not kk < t:
        raise ValueError(f"k must be < steps ({t}), got {kk}")
    hint = None if epsilon_hint is None else check_positive("epsilon_hint", epsilon_hint)
    if c_factors is None and hint is not None and kk == 1 and e == 1 and t > _SMALL_T:
        return _shared(("sum_hint", s, t, d, hint), lambda: _hinted_lower(s, t, d, hint))
    if c_factors is None:  # the default statistics: shared inside shared_lower_bounds()
        return _shared(("sum", s, t, kk, e, d), lambda: _sum_lower(s, t, kk, e, d, None))
    return _sum_lower(s, t, kk, e, d, c_factors)


def _hinted_top_sd(s: float, t: int, hint: float) -> float:
    """The cap of :func:`_hinted_lower`, in sd of ``log z`` above the shifted law's mean:
    where one term alone (the others at their mean 1) puts the loss ``log(1 + (z - 1) /
    T)`` at :data:`_HINT_CAP` times the hint, within :data:`_HINT_TOP_SD`.  Above a loss
    of twice the epsilon sought, merging values into one cell loses little (their
    ``(p - e^eps q)_+`` add up); the cap's cells were the fold's length."""
    x = _HINT_CAP * hint
    # (beyond x = 700, log1p(T expm1(x)) is log T + x to far below a cell; no overflow)
    log_z = math.log1p(t * math.expm1(x)) if x < 700.0 else math.log(t) + x
    return min(_HINT_TOP_SD[1], max(_HINT_TOP_SD[0], s * (log_z - 0.5 / (s * s))))


def _hinted_lower(s: float, t: int, d: float, hint: float) -> float:
    """One epoch at k = 1 with the statistic built for ``hint`` (checked arguments).

    The largest of the sum statistic's certified bounds at ``c = f / T`` over the
    factors :data:`_HINT_FACTORS` (the second only where its fold has at most
    :data:`_HINT_SECOND_FOLD` cells), each capped at :func:`_hinted_top_sd` on a fold
    of :data:`_HINT_FOLD_SD` sd: every one a post-processing of the pair (Proposition 2
    of docs/theory/allocation_k_of_t.md), so their maximum is a certified lower bound.
    """
    top = _hinted_top_sd(s, t, hint)
    best = 0.0
    for i, f in enumerate(_HINT_FACTORS):
        if i and _lattice(s, t, 1, f / t, 1.0, top, _HINT_FOLD_SD)[2] > _HINT_SECOND_FOLD:
            continue
        laws = sum_statistic_laws(s, t, 1, f / t, top_sd=top, fold_sd=_HINT_FOLD_SD)
        best = max(best, *(_atomic_epsilon_lower(law, d) for law in laws))
    return best


def _sum_lower(
    s: float, t: int, kk: int, e: int, d: float, c_factors: tuple[float, ...] | None
) -> float:
    """:func:`sum_statistic_lower_epsilon` on checked arguments."""
    search = c_factors is None and kk >= 2 and t <= _SMALL_T
    if c_factors is None:
        c_factors = C_FACTORS[:1] + C_FACTORS[1:4] * (t <= _SMALL_T) + C_FACTORS[4:] * (kk == 1)
    if not c_factors:
        raise ValueError("c_factors must name at least one factor")

    def value(f: float, power: float = 1.0) -> float:
        laws = sum_statistic_laws(s, t, kk, f * kk / t, power=power)
        if e == 1:
            return max(_atomic_epsilon_lower(law, d) for law in laws)
        run = compose([_SumStatisticPair(laws)], counts=[e])
        return float(run.epsilon_bounds(d)[0])

    tried = {f: value(check_positive("c_factors", f)) for f in c_factors}
    if search:
        _search_factor(value, tried)
    best = max(tried.values())
    if search and t <= _POWER_T and best > 0.0:
        f_best = max(tried, key=tried.get)
        for pw in _POWERS:  # Corollary 2a: each (c, a) is a statistic
            at = {f: value(f, pw) for f in (0.8 * f_best, f_best)}
            _search_factor(lambda f, pw=pw: value(f, pw), at)
            f_best = max(at, key=at.get)
            if not at[f_best] > best:
                break
            best = at[f_best]
    return best


def _search_factor(value, tried: dict[float, float]) -> None:
    """Parabolic steps in ``log f`` towards the largest ``value(f)``, added to ``tried``.

    Every ``value(f)`` is a certified lower bound (any ``c > 0`` gives a statistic), so
    the largest of them is one: the search only chooses which statistics to certify.
    From the best point so far: a step of 1.5x outward if it is the smallest or largest
    ``f`` tried, else the vertex of the parabola through it and its two neighbours; it
    stops after :data:`_SEARCH_STEPS` steps, when the step is within
    :data:`_SEARCH_TOL` of a tried point, or at the ends of :data:`_F_RANGE`; it does not
    start where the values tried agree to :data:`_FLAT` (relative) or are all 0.
    """
    top, low = max(tried.values()), min(tried.values())
    if not top > 0.0 or top - low <= _FLAT * top:
        return
    for _ in range(_SEARCH_STEPS):
        xs = sorted(tried)
        i = max(range(len(xs)), key=lambda j: tried[xs[j]])
        if i == 0 or i == len(xs) - 1:
            nxt = xs[i] / 1.5 if i == 0 else xs[i] * 1.5
        else:
            (x0, x1, x2) = (math.log(v) for v in xs[i - 1 : i + 2])
            y0, y1, y2 = (tried[v] for v in xs[i - 1 : i + 2])
            den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0)
            if not den > 0.0:  # flat: nothing to gain
                return
            num = (x1 - x0) ** 2 * (y1 - y2) - (x1 - x2) ** 2 * (y1 - y0)
            nxt = math.exp(x1 - 0.5 * num / den)
        if not _F_RANGE[0] <= nxt <= _F_RANGE[1]:
            return
        if min(abs(math.log(nxt / v)) for v in xs) < _SEARCH_TOL:
            return
        tried[nxt] = value(nxt)
