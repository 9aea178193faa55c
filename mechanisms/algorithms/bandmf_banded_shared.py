"""More than two bands with a shared component: residue classes (any count, 1 included)
dominated by a two-band Gram *plus* ``beta J`` (Theorem 4 of
docs/theory/dpmf_balls_in_bins.md).

Theorem 3 (:mod:`.bandmf_banded`) needs ``g = ceil(b / 2)`` classes so that each class
block is cyclic tridiagonal.  Fewer classes hold more bins (more amplification) but
couple bins at class distance 2, 3, ...; those couplings are positive and concentrate
on the all-ones direction, which a shared Gaussian component ``beta J`` absorbs (as
Lemma 2 does for Theorem 1).  The class block is then dominated by
``G' + beta J``, ``G'`` a two-band stand-in's Gram (Lemma 2'), and the pair of
``G' + beta J`` is the product of the stand-in's pair and a Gaussian of noise multiplier
``sigma / sqrt(beta)``: Theorem 2's law of the stand-in, integrated against that
Gaussian in closed form (:func:`shared_law_delta`).

The class count and the split ``(p, beta)`` are chosen by a seeded Monte Carlo
estimate of each candidate's dominating pair (only tightness depends on the choice:
every candidate is certified), then the chosen one is built at the default's points.
For a class size of at least :data:`AR_MIN_BINS` bins the remove law may instead come
from Theorem 6's stand-in, white noise plus a cyclic AR(1) process
(:mod:`.bandmf_ar_standin`, :func:`ar_choice`), whose spectrum follows the class block's
low-frequency peak where the two-band one is a line in ``cos(theta)``.  Where it does,
the same stand-in at half the class count (:func:`ar_coarser`, session 36) may replace
the route, both directions then from Theorem 6 and Theorem 6'
(:mod:`.bandmf_ar_add`): fewer revealed classes, a smaller Lemma 3 step.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpacct.accountant.validation import check_count, check_positive
from dpacct.mechanisms.algorithms.bandmf_ar_add import ar_add_law
from dpacct.mechanisms.algorithms.bandmf_ar_standin import (
    ar_coefficients,
    ar_instances,
    ar_remove_law,
)
from dpacct.mechanisms.algorithms.bandmf_balls_in_bins_core import (
    _lambda_max_upper,
    balls_in_bins_gram,
)
from dpacct.mechanisms.algorithms.bandmf_banded import (
    _MAX_EXPONENT,
    MAX_STEPS,
    ROWS_PER_BIN,
    BandMFBandedBallsInBins,
    _checked_run,
    _class_blocks,
    _dominated,
    _shift_sum,
    class_two_band_instances,
)
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _SUM_SLACK,
    BANDED_REMOVE_RHO,
    MOVED_WIDTH,
    _law_delta,
    _two_band_cost,
    two_band_delta_law,
)

__all__ = ["BandMFSharedBallsInBins", "ar_choice", "ar_coarser", "bandmf_shared_balls_in_bins",
           "shared_instances", "shared_law_delta"]

#: relative slack on each of the two Gaussian terms of an atom: scipy's ``ndtr`` is
#: accurate to about 1e-14 relative (Cephes), and the argument's relative round-off
#: (a few ulps) moves ``Phi(x)`` by at most ``|x| (|x| + 1)`` times that (Mills' ratio),
#: ``<= 2e-12`` for ``|x| <= 40`` (beyond, ``Phi`` is below 1e-300: :data:`_ABS`)
_REL = 1e-10
#: absolute slack per atom (terms underflowing to 0)
_ABS = 1e-290
#: ``(p / p0, beta / beta0)`` tried per class count: ``p0`` the class's mean neighbour
#: entry, ``beta0`` the gap of its two top eigenvalues over its size
SPLITS = ((1.0, 0.0), (1.0, 0.5), (1.25, 0.5), (1.25, 1.0))
#: Monte Carlo samples of the search that picks the class count and the split (a
#: seeded, deterministic *estimate* of each candidate's dominating pair; only which
#: certified bound is built depends on it, never a bound's value)
SEARCH_SAMPLES = 400_000
#: relative margin by which a candidate's estimate must beat Theorem 3's to be chosen
#: (the estimate's noise at :data:`SEARCH_SAMPLES` is a few percent)
INCUMBENT = 0.03
#: grid points and delta of the certified comparison of the best few candidates
REFINE_POINTS = 21
REFINE_DELTA = 1e-5
#: delta at which the search compares candidates (tightness only)
SEARCH_DELTA = 1e-4


def shared_law_delta(z: np.ndarray, w: np.ndarray, tail: float, up: bool, eps: np.ndarray,
                     mu: float) -> np.ndarray:
    """Delta of Theorem 2's law ``(z, w, tail)`` composed with a Gaussian pair of shift
    ``mu`` (noise multiplier ``1 / mu``), one direction (Theorem 4 of
    docs/theory/dpmf_balls_in_bins.md).

    With ``W = exp(mu X - mu^2 / 2)``, ``X ~ N(0, 1)``, the remove bound is
    ``sum_i w_i E[(z_i W - e^eps)_+] + tail`` and the add bound
    ``sum_i w_i E[(1 - e^eps z_i W)_+] + tail``, each expectation in closed form:
    ``z Phi(mu - u) - gamma Phi(-u)``, ``u = (log(gamma / z) + mu^2 / 2) / mu``, and
    ``Phi(v) - c Phi(v - mu)``, ``v = (mu^2 / 2 - log c) / mu``, ``c = gamma z``.
    ``mu = 0`` is Theorem 2's own sum.

    Parameters
    ----------
    z, w : numpy.ndarray
        Support and masses of the law (:func:`.two_band_delta_law`).
    tail : float
        Its tail bound.
    up : bool
        True for the remove direction, False for add.
    eps : numpy.ndarray
        Epsilons, >= 0.
    mu : float
        Shift of the Gaussian, >= 0.

    Returns
    -------
    numpy.ndarray
        Upper bounds on delta at each epsilon.

    Examples
    --------
    >>> import numpy as np                       # one atom at 1: the Gaussian itself
    >>> d = shared_law_delta(np.array([1.0]), np.array([1.0]), 0.0, True, np.array([0.5]), 1.0)
    >>> from dpacct.accountant import GaussianMechanism
    >>> bool(abs(d[0] - GaussianMechanism(1.0).delta(0.5)) < 1e-7)
    True
    """
    eps = np.asarray(eps, dtype=float)
    if mu == 0.0:
        return _law_delta(z, w, tail, up, eps)
    out = np.empty(eps.shape)
    pos = z > 0
    lz = np.log(z[pos])
    half = 0.5 * mu * mu
    for j, e in np.ndenumerate(eps):
        if up:  # E[(z W - gamma)_+], increasing in z; z = 0 gives 0
            u = (e - lz + half) / mu
            t1 = z[pos] * special.ndtr(mu - u)
            t2 = math.exp(e) * special.ndtr(-u)
            wp = w[pos]
        else:  # E[(1 - c W)_+], z = 0 gives 1
            v = (half - e - lz) / mu
            t1 = special.ndtr(v)
            t2 = math.exp(e) * z[pos] * special.ndtr(v - mu)
            wp = w[pos]
        val = np.maximum(t1 - t2, 0.0) + _REL * (t1 + t2) + _ABS
        total = float(np.dot(wp, val))
        if not up:
            total += float(w[~pos].sum())
        out[j] = min(total * (1 + _SUM_SLACK) + tail, 1.0)
    return out


def shared_instances(strategy: object, iterations: int, cycle_length: int, classes: int,
                     p_factor: float, beta_factor: float) -> tuple:
    """Per class size ``t`` of ``classes`` residue classes, ``(t, n', (c0', c1'), beta)``:
    a two-band stand-in of ``n' = t m + 1`` steps and cycle ``t`` whose Gram matrix plus
    ``beta J`` dominates every class block of that size, certified (Theorem 4); a class
    of one bin is ``(1, 0, (norm, 0.0), 0.0)``.

    ``p = p_factor`` times the blocks' mean neighbour entry (per unit of ``S + S^T``),
    ``beta = beta_factor`` times the least gap of the blocks' two top eigenvalues over
    ``t``, ``a`` a rigorous upper bound on ``lambda_max(G_r - p (S + S^T) - beta J)``.

    Examples
    --------
    >>> inst = shared_instances([1.0, 0.5, 0.25, 0.125], 100, 10, 1, 1.0, 0.5)
    >>> [(t, n) for t, n, _, _ in inst], bool(inst[0][3] > 0)
    ([(10, 2041)], True)
    """
    n = check_count(iterations, "iterations")
    k = check_count(cycle_length, "cycle_length")
    g = check_count(classes, "classes")
    col = np.asarray(strategy, dtype=float)
    key = (col.tobytes(), col.shape, n, k, g, float(p_factor), float(beta_factor))
    if key not in _SHARED:
        _SHARED[key] = _shared(col, n, k, g, float(p_factor), float(beta_factor))
    return _SHARED[key]


#: built instances (they do not depend on the noise)
_SHARED: dict = {}


def _shared(col: np.ndarray, n: int, k: int, g: int, pf: float, bf: float) -> tuple:
    by_size = _class_blocks(col, n, k, g)
    out = []
    for t, blocks in sorted(by_size.items()):
        if t == 1:
            out.append((1, 0, (math.sqrt(max(float(b[0, 0]) for b in blocks)), 0.0), 0.0))
            continue
        m = max(2, min(ROWS_PER_BIN, (MAX_STEPS - 1) // t))
        adj = _shift_sum(t)
        mask = adj > 0
        p = pf * float(np.mean(np.concatenate([b[mask] / adj[mask] for b in blocks])))
        gap = min(float(np.diff(np.linalg.eigvalsh(b)[-2:])[0]) for b in blocks)
        beta = bf * max(gap, 0.0) / t
        ones = np.ones((t, t))
        a = max(_lambda_max_upper(b - p * adj - beta * ones) for b in blocks) * (1 + 1e-8)
        a = max(a, 2.0 * p, 1e-300)
        for _ in range(20):
            c0 = (math.sqrt(a + 2 * p) + math.sqrt(a - 2 * p)) / (2 * math.sqrt(m))
            c1 = max((math.sqrt(a + 2 * p) - math.sqrt(a - 2 * p)) / (2 * math.sqrt(m)), 0.0)
            ref = balls_in_bins_gram([c0, c1], t * m + 1, t) + beta * ones
            # certified: lambda_max(G_r - G' - beta J) <= -1e-9 a (beta J's entries are
            # exact sums of one term each, inside the margin)
            if all(_dominated(b, ref, a) for b in blocks):
                break
            a *= 1 + 1e-6
        else:  # pragma: no cover - the margin is 1e-8 against round-off of 1e-13
            raise RuntimeError("two-band-plus-shared domination could not be certified")
        out.append((t, t * m + 1, (c0, c1), beta))
    return tuple(out)


@dataclass(frozen=True, repr=False, eq=False)
class BandMFSharedBallsInBins(BandMFBandedBallsInBins):
    """The least of Theorem 1 and Theorem 4 (residue classes, each dominated by a
    two-band transfer composed with a shared Gaussian) of
    docs/theory/dpmf_balls_in_bins.md; build it with :func:`bandmf_shared_balls_in_bins`.
    ``laws`` holds per class size ``(remove law, add law, mu)`` or a Gaussian's
    ``(norm, None)``; ``choice`` the class count and split used.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    candidates : tuple
        Theorem 1's candidates.
    laws : tuple
        Per class size ``(law_remove, law_add, mu)`` or ``(norm, None)``.
    choice : tuple
        ``(classes, p_factor, beta_factor)``.

    Examples
    --------
    >>> run = bandmf_shared_balls_in_bins(1.5, 8, cycle_length=4, strategy=[1.0, 0.6, 0.3],
    ...                                   points=5, choice=(1, 1.0, 0.5))
    >>> type(run).__name__, run.choice, bool(run.laws[0][2] > 0)   # mu > 0: shared part
    ('BandMFSharedBallsInBins', (1, 1.0, 0.5), True)
    """

    choice: tuple = ()

    def _transfer_delta(self, eps: np.ndarray) -> np.ndarray:
        from dpacct.accountant import GaussianMechanism

        if not self.laws:
            return np.ones(np.shape(eps))
        out = np.zeros(np.shape(eps))
        for law in self.laws:
            if law[1] is None:
                d = np.asarray(GaussianMechanism(self.noise_multiplier / law[0]).delta(eps))
            else:
                # (remove, add, mu) or, with Theorem 6's remove law, (remove, add,
                # mu_remove, mu_add): each direction from its own dominating pair
                (zr, wr, tr), (za, wa, ta), mu_r, mu_a = law if len(law) == 4 else (*law, law[2])
                d = np.maximum(shared_law_delta(zr, wr, tr, True, eps, mu_r),
                               shared_law_delta(za, wa, ta, False, eps, mu_a))
            out = np.maximum(out, d)
        return out

    def __repr__(self) -> str:
        return (f"BandMFSharedBallsInBins(noise_multiplier={self.noise_multiplier!r}, "
                f"candidates=..., laws=<{len(self.laws)} class sizes>, choice={self.choice!r})")


def _laws(sigma: float, inst: tuple, points: int, ar: dict | None = None) -> tuple:
    """Theorem 2's laws of each stand-in (OverflowError where its exponents pass the
    proved range); for a class size in ``ar`` (:func:`ar_choice`) the remove law is
    Theorem 6's instead, ``(remove, add, mu_remove, mu_add)``."""
    laws = []
    ar = ar or {}
    for t, n2, (c0, c1), beta in inst:
        if t == 1:
            laws.append((c0, None))
            continue
        m = (n2 - 1) // t
        reach = ((m * (c0 * c0 + c1 * c1) + c0 * c0) / (2 * sigma * sigma)
                 + 8.0 * ((c0 + c1) * math.sqrt(m) + c0) / sigma)
        if reach > _MAX_EXPONENT:
            raise OverflowError
        if t in ar:
            try:
                rem = ar_remove_law(sigma, ar[t], points=points + AR_EXTRA_POINTS,
                                    x_points=AR_X_POINTS, moved_width=MOVED_WIDTH,
                                    rho=AR_REMOVE_RHO)
            except (ValueError, OverflowError):  # too few points or beyond the proved
                rem = None                       # range: Theorem 4's remove law instead
            if rem is not None:
                add = two_band_delta_law(sigma, n2, t, [c0, c1], "add", points=points,
                                         moved_width=MOVED_WIDTH, rho=AR_ADD_RHO,
                                         prune=AR_ADD_PRUNE)
                laws.append((rem, add, math.sqrt(ar[t][4]) / sigma, math.sqrt(beta) / sigma))
                continue
        pair = tuple(two_band_delta_law(sigma, n2, t, [c0, c1], d, points=points,
                                        moved_width=MOVED_WIDTH,
                                        rho=BANDED_REMOVE_RHO if d == "remove" else 0.05)
                     for d in ("remove", "add"))
        laws.append((*pair, math.sqrt(beta) / sigma))
    return tuple(laws)


def _proxy_epsilon(sigma: float, inst: tuple) -> float:
    """A seeded Monte Carlo *estimate* of the epsilon at :data:`SEARCH_DELTA` of a
    candidate's dominating pair (the largest over its class sizes): the stand-in's Gram
    plus ``beta J``, sampled in ``t`` dimensions with common random numbers (the same
    seed for every candidate).  Used only to choose which certified bound to build."""
    worst = 0.0
    for t, n2, (c0, c1), beta in inst:
        if t == 1:
            h = np.array([[c0 * c0]])
        else:
            m = (n2 - 1) // t
            adj = _shift_sum(t)
            h = m * (c0 * c0 + c1 * c1) * np.eye(t) + m * c0 * c1 * adj + beta
            h[0, 0] += c0 * c0
        worst = max(worst, _mc_epsilon(h, sigma, SEARCH_DELTA))
    return worst


def _mc_epsilon(h: np.ndarray, sigma: float, delta: float) -> float:
    """Monte Carlo estimate (both directions, seeded) of the pair of Gram ``h``; kept per
    ``(h, sigma, delta)`` (:data:`_MC`: the seed is fixed, so a repeated call, as
    :func:`ar_choice`'s of the plan's own candidate, would draw the same estimate)."""
    # the Gram by a digest of its bytes (a k x k Gram is 80 kB at k = 100: 512 of them
    # as keys would hold 40 MB)
    # (the sample count too: a caller may lower SEARCH_SAMPLES, as a test does; and the
    # value is read once, so a clear by another thread between test and read cannot raise)
    key = (h.shape, hashlib.sha256(h.tobytes()).hexdigest(), float(sigma), float(delta),
           SEARCH_SAMPLES)
    value = _MC.get(key)
    if value is None:
        value = _mc_draw(h, sigma, delta)
        if len(_MC) >= _MC_MAX:
            _MC.clear()
        _MC[key] = value
    return value


#: estimates of :func:`_mc_epsilon` (at most :data:`_MC_MAX`; cleared when full)
_MC: dict = {}
_MC_MAX = 512


def _mc_draw(h: np.ndarray, sigma: float, delta: float) -> float:
    """:func:`_mc_epsilon`'s estimate, drawn."""
    k = h.shape[0]
    rng = np.random.default_rng(20260121)
    vals, vecs = np.linalg.eigh(h)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    half = np.diag(h) / (2 * sigma * sigma)
    rem, add = [], []
    chunk = max(1, 2_000_000 // k)  # at most 2e6 normals at a time (16 MB)
    for start in range(0, SEARCH_SAMPLES, chunk):
        m = min(chunk, SEARCH_SAMPLES - start)
        z = _rows_times(rng.standard_normal((m, k)), root.T)
        z /= sigma
        add.append(-(_row_logsumexp(z - half) - math.log(k)))
        z += h[:, rng.integers(k, size=m)].T / (sigma * sigma)
        rem.append(_row_logsumexp(z - half) - math.log(k))
    # per direction, losses ascending and the suffix sums of exp(-max(L, 0)): the mean of
    # (1 - e^(e - L))_+ at e >= 0 is (count(L > e) - e^e sum_{L > e} e^-L) / samples
    tables = []
    for x in (np.concatenate(rem), np.concatenate(add)):
        x = np.sort(x)
        suffix = np.concatenate((np.cumsum(np.exp(-np.maximum(x, 0.0))[::-1])[::-1], [0.0]))
        tables.append((x, suffix))

    def est(e: float) -> float:
        out = 0.0
        for x, suffix in tables:
            i = int(np.searchsorted(x, e, side="right"))
            out = max(out, (x.size - i) - math.exp(e) * float(suffix[i]))
        return out / SEARCH_SAMPLES

    lo, hi = 0.0, float(max(x[-1] for x, _ in tables))
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if est(mid) <= delta else (mid, hi)
    return hi


#: rows per BLAS product in :func:`_rows_times`
_ROW_BLOCK = 256


def _rows_times(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x @ y`` in blocks of :data:`_ROW_BLOCK` rows of ``x`` (session 45): products this
    small run on one BLAS thread, where the whole one is spread over OpenBLAS's pool,
    whose workers then spin-wait through the numpy work between products (the 16-band
    plan's CPU seconds were twice its wall seconds on 2 cores; blocked: equal, and the
    wall no longer).  Each row is the same dot products; their last bits may differ from
    the whole product's (a blocking of the BLAS kernel), which only a seeded estimate
    sees."""
    out = np.empty((x.shape[0], y.shape[1]))
    for i in range(0, x.shape[0], _ROW_BLOCK):
        np.matmul(x[i:i + _ROW_BLOCK], y, out=out[i:i + _ROW_BLOCK])
    return out


def _row_logsumexp(x: np.ndarray) -> np.ndarray:
    """``log sum_j exp(x[i, j])`` per row, shifted by the row maximum (the search's
    estimate only; a third of ``scipy.special.logsumexp``'s time on these shapes)."""
    top = x.max(axis=1)
    return np.log(np.exp(x - top[:, None]).sum(axis=1)) + top


def shared_cost(sigma: float, inst: tuple, points: int) -> float:
    """Estimated CPU seconds of one candidate's laws (Theorem 2's estimate per size)."""
    return sum(_two_band_cost(sigma, n2, t, c, points=points) for t, n2, c, _ in inst if t > 1)


def shared_class_counts(strategy: object, cycle_length: int) -> list[int]:
    """Class counts Theorem 4 tries: ``ceil(b / 2)`` (Theorem 3's) and every divisor of
    ``k`` from half of it up (one class size each; fewer classes couple bins at class
    distances 2, 3, ... that the two-band stand-in does not follow), each leaving two
    bins or more per class.

    Examples
    --------
    >>> shared_class_counts([1.0] * 16, 100), shared_class_counts([1.0] * 4, 10)
    ([4, 5, 8], [1, 2])
    """
    b = np.asarray(strategy).size
    top = max(1, math.ceil(b / 2))
    out = {top} | {g for g in range(max(1, top // 2), top) if cycle_length % g == 0}
    return sorted(g for g in out if cycle_length >= 2 * g or g == top)


def _instances_of(col: list, n: int, k: int, choice: tuple) -> tuple:
    """The certified stand-ins of one choice ``(g, p_factor, beta_factor)``."""
    g, pf, bf = choice
    if pf == "thm3":
        return tuple((t, n2, c, 0.0)
                     for t, n2, c in class_two_band_instances(col, n, k, g))
    return shared_instances(col, n, k, g, pf, bf)


def _refine(sigma: float, scored: list) -> tuple:
    """Among the two candidates with the least estimates and Theorem 3's own, the one
    whose certified epsilon at :data:`REFINE_DELTA` on :data:`REFINE_POINTS`-point grids
    is least (Theorem 3's unless another is :data:`INCUMBENT` below it there); by the
    estimates alone (the same rule) where only one is left or a coarse build fails."""
    ranked = sorted(scored, key=lambda x: x[0])
    mine = [x for x in scored if x[1][1] == "thm3"]
    pool = ranked[:2] + [x for x in mine if x not in ranked[:2]]
    if len(pool) > 1:
        coarse = []
        for x in pool:
            try:
                run = BandMFSharedBallsInBins(sigma, (), _laws(sigma, x[2], REFINE_POINTS), x[1])
                coarse.append((float(run.epsilon(REFINE_DELTA)), x))
            except (ZeroDivisionError, IndexError, OverflowError, FloatingPointError):
                continue
        if coarse:
            least = min(coarse, key=lambda c: c[0])
            ref = [c for c in coarse if c[1][1][1] == "thm3"]
            if not ref or least[0] < ref[0][0] * (1 - INCUMBENT):
                return least[1]
            return ref[0][1]
    least = ranked[0]
    return least if not mine or least[0] < mine[0][0] * (1 - INCUMBENT) else mine[0]


def _coarser_first(sigma: float, col: list, n: int, k: int, scored: list) -> tuple | None:
    """The candidate with the least estimate where the default would answer by the
    coarser route at its class count (:func:`ar_choice` takes Theorem 6 and
    :func:`ar_coarser` halves the classes; session 45), else None.

    That route's laws (Theorems 6 and 6' at half the class count) depend on the
    candidate's class count only, so :func:`_refine`'s coarse Theorem 4 laws, which
    choose among Theorem 4 builds, are not needed for it.  Only tightness depends on
    this choice: every route is certified."""
    least = min(scored, key=lambda x: x[0])
    try:
        ar = ar_choice(sigma, col, n, k, least[1], least[2])
        if ar_coarser(sigma, col, n, k, least[1], ar) is None:
            return None
    except (ZeroDivisionError, IndexError, OverflowError, FloatingPointError):
        return None
    return least


def shared_plan(sigma: float, iterations: int, cycle_length: int, strategy: list, *,
                budget: float | None = None,
                points: tuple = (51, 41, 31, 21), coarser_first: bool = True) -> tuple | None:
    """``(choice, points)`` for Theorem 4: among the class counts of
    :func:`shared_class_counts` and the splits of :data:`SPLITS` (and Theorem 3's own),
    those affordable at the fewest ``points`` within ``budget`` estimated seconds, the
    least by :func:`_proxy_epsilon` and then by a coarse certified bound
    (:func:`_refine`; Theorem 3's unless another is :data:`INCUMBENT` below it) -- or,
    where the least by the estimate takes the coarser route (:func:`_coarser_first`,
    whose laws do not depend on Theorem 4's split), that one without the coarse
    bounds -- at the most ``points`` within ``budget``; None if none is affordable.
    Inputs are checked by the caller.

    Examples
    --------
    >>> shared_plan(4.0, 100, 10, [1.0, 0.5, 0.25, 0.125], budget=1e-9) is None  # none fits
    True
    """
    col = list(np.asarray(strategy, dtype=float))
    top = max(1, math.ceil(len(col) / 2))
    scored = []
    for g in shared_class_counts(col, cycle_length):
        splits = ([("thm3", 0.0)] if g == top else []) + list(SPLITS)
        for pf, bf in splits:
            try:
                inst = _instances_of(col, iterations, cycle_length, (g, pf, bf))
            except RuntimeError:  # not certified (a round-off corner): not a candidate
                continue
            if budget is not None and shared_cost(sigma, inst, min(points)) > budget:
                continue
            scored.append((_proxy_epsilon(sigma, inst), (g, pf, bf), inst))
    if not scored:
        return None
    best = _coarser_first(sigma, col, iterations, cycle_length, scored) if coarser_first else None
    if best is None:
        best = _refine(sigma, scored)
    for pts in sorted(points, reverse=True):
        if budget is None or shared_cost(sigma, best[2], pts) <= budget:
            return best[1], pts
    return None  # pragma: no cover - filtered above


def bandmf_shared_balls_in_bins(
    noise_multiplier: float,
    iterations: int,
    *,
    cycle_length: int,
    strategy: object,
    points: int = 31,
    budget: float | None = None,
    candidates: tuple | None = None,
    choice: tuple | None = None,
) -> BandMFSharedBallsInBins:
    """Certified privacy of b-band DP-MF under balls-in-bins by Theorem 4 (residue
    classes dominated by a two-band transfer plus a shared Gaussian), at most Theorem 1's
    and Theorem 3's (same points) bounds.

    Unless ``choice`` is given, :func:`shared_plan` picks the class count and split: every
    class count of :func:`shared_class_counts` and split of :data:`SPLITS` (plus Theorem
    3's own) is a candidate dominating pair, and the one whose seeded Monte Carlo
    estimate at :data:`SEARCH_DELTA` is least is built at ``points`` (the choice only
    affects tightness: every candidate's bound is certified).  Candidates whose
    estimated cost at ``points`` passes ``budget`` seconds are skipped.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation per unit of clipping norm, > 0.
    iterations : int
        Steps ``n``, >= 3.
    cycle_length : int
        Bins ``k``, ``2 <= k < n``.
    strategy : array_like
        The first column of a banded Toeplitz strategy (``b >= 3`` entries), non-negative.
    points : int
        Grid points of the final transfer, >= 3.
    budget : float, optional
        Estimated CPU seconds a candidate may cost at ``points``, > 0 (None: no limit).
    candidates : tuple, optional
        Theorem 1's candidates, when built.
    choice : tuple, optional
        ``(classes, p_factor, beta_factor)`` (``p_factor = "thm3"``: Theorem 3's split)
        to build without the search (a calibration searches once).

    Returns
    -------
    BandMFSharedBallsInBins

    Examples
    --------
    >>> from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import bandmf_balls_in_bins
    >>> c = [1.0, 0.6, 0.3]
    >>> run = bandmf_shared_balls_in_bins(1.5, 8, cycle_length=4, strategy=c, points=11,
    ...                                   choice=(2, "thm3", 0.0))    # no search
    >>> one = bandmf_balls_in_bins(1.5, 8, cycle_length=4, strategy=c, two_band=False)
    >>> bool(run.epsilon(1e-3) <= one.epsilon(1e-3))
    True
    """
    sigma, col, candidates = _checked_run(noise_multiplier, iterations, cycle_length,
                                          strategy, points, candidates, min_bands=3)
    if budget is not None:
        budget = check_positive("budget", budget)
    if choice is not None:
        top = max(1, math.ceil(col.size / 2))
        ok = (isinstance(choice, tuple) and len(choice) == 3
              and isinstance(choice[0], (int, np.integer)) and 1 <= choice[0] <= cycle_length
              and ((choice[1] == "thm3" and choice[0] == top and choice[2] == 0.0)
                   or (isinstance(choice[1], (int, float)) and not isinstance(choice[1], bool)
                       and math.isfinite(choice[1]) and choice[1] >= 0
                       and isinstance(choice[2], (int, float))
                       and not isinstance(choice[2], bool)
                       and math.isfinite(choice[2]) and choice[2] >= 0)))
        if not ok:
            raise ValueError("choice must be (classes in [1, cycle_length], p_factor >= 0, "
                             "beta_factor >= 0) or (ceil(b / 2), 'thm3', 0.0), got "
                             f"{choice!r}")
    planned = choice is None
    if planned:
        plan = shared_plan(sigma, iterations, cycle_length, list(col), budget=budget,
                           points=(points,))
        choice = None if plan is None else plan[0]
    laws = ()
    if choice is not None:
        try:
            laws = _route_laws(sigma, list(col), iterations, cycle_length, choice, points,
                               coarser=not planned)
            if laws is None and planned:
                # the plan took this candidate for the coarser route without
                # _refine's coarse bounds (session 45), and that route could not be
                # built: plan again by those bounds, as before (review 45)
                plan = shared_plan(sigma, iterations, cycle_length, list(col),
                                   budget=budget, points=(points,), coarser_first=False)
                choice = None if plan is None else plan[0]
                laws = None if choice is None else _route_laws(
                    sigma, list(col), iterations, cycle_length, choice, points, coarser=True)
            if laws is None:
                laws, choice = (), None
        except (ZeroDivisionError, IndexError, OverflowError, FloatingPointError):
            laws, choice = (), None
    return BandMFSharedBallsInBins(sigma, candidates, laws, () if choice is None else choice)


def _route_laws(sigma: float, col: list, n: int, k: int, choice: tuple, points: int,
                coarser: bool = False) -> tuple | None:
    """The laws of ``choice``: the coarser route's (:func:`ar_coarser`, Theorems 6 and
    6') where it applies and builds, else Theorem 4's (:func:`_laws`); with ``coarser``
    False, None where the coarser route applies but cannot be built (the caller may
    plan again)."""
    inst = _instances_of(col, n, k, choice)
    ar = ar_choice(sigma, col, n, k, choice, inst)
    coarse = ar_coarser(sigma, col, n, k, choice, ar)
    laws = None if coarse is None else _coarser_laws(sigma, coarse[1], points)
    if laws is None and (coarse is None or coarser):
        laws = _laws(sigma, inst, points, ar)
    return laws


#: Theorem 6's stand-in is tried for class sizes of at least this many bins
AR_MIN_BINS = 8
#: Theorem 6's candidates ``(rho, gamma / the block's diagonal)``
AR_SPLITS = ((0.35, 0.8), (0.35, 1.0), (0.45, 0.8), (0.45, 1.0), (0.55, 0.8), (0.55, 1.0))
#: the grid of each ``X_s`` in Theorem 6's remove law (hats in ``e^{A x}`` since session
#: 35: at 16 bands 31 points instead of 21 lower epsilon by 0.001 only)
AR_X_POINTS = 21
#: Theorem 6's remove law takes this many ``W`` grid points more than Theorem 4's laws
#: (session 35; at 16 bands 41 -> 51 points lower its epsilon by 0.003)
AR_EXTRA_POINTS = 10
#: partial-sum log spacing of Theorem 6's remove law (session 35: its pruned states made
#: the transfer 2-3 times cheaper; at 16 bands, n 2000, k 100, sigma 8, 41 / 31 points,
#: the remove epsilon falls from 0.7582 at 0.03 to 0.7479 at 0.015)
AR_REMOVE_RHO = 0.015
#: partial-sum log spacing of Theorem 4's add law where Theorem 6 gives the remove law
#: (session 35: the add law binds once the remove law is below it; at 16 bands 0.757 at
#: 0.05, 0.735 at 0.03)
AR_ADD_RHO = 0.03
#: that add law's pruning threshold (:func:`.two_band_delta_law`'s ``prune``; at 16 bands
#: the pruned mass, moved to ``z = 0``, is 7e-13 and the law's CPU halves)
AR_ADD_PRUNE = 1e-17


def ar_choice(sigma: float, col: list, n: int, k: int, choice: tuple, inst: tuple) -> dict:
    """Class size -> Theorem 6's stand-in (white noise plus a cyclic AR(1) process,
    :mod:`.bandmf_ar_standin`) for the class sizes of at least :data:`AR_MIN_BINS` bins
    of Theorem 4's instances ``inst`` (``choice`` its class count and split) whose
    least seeded Monte Carlo estimate over :data:`AR_SPLITS` (:func:`_proxy_epsilon`'s
    estimator and seed) is :data:`INCUMBENT` below the two-band stand-in's.  Such a size's
    remove law is then Theorem 6's and its add law Theorem 4's: both pairs dominate the
    class pair in both orders, so each direction may take either; the estimates only
    choose.

    Examples
    --------
    >>> ar_choice(2.0, [1.0, 0.6, 0.3], 8, 4, (2, "thm3", 0.0), ())
    {}
    """
    out = {}
    diag = float(np.max(np.diag(balls_in_bins_gram(col, n, k))))
    for row in inst:
        t = row[0]
        if t < AR_MIN_BINS:
            continue
        scored = []
        for rho, frac in AR_SPLITS:
            try:
                found = [x for x in ar_instances(col, n, k, choice[0], rho, frac * diag)
                         if x[0] == t]
            except RuntimeError:  # pragma: no cover - not certified: not a candidate
                continue
            if found:
                scored.append((_mc_epsilon(_ar_gram(found[0]), sigma, SEARCH_DELTA), found[0]))
        if scored:
            est, best = min(scored, key=lambda x: x[0])
            if est < _proxy_epsilon(sigma, (row,)) * (1 - INCUMBENT):
                out[t] = best
    return out


def _ar_gram(instance: tuple) -> np.ndarray:
    """The Gram matrix ``a I + gamma K + beta J`` of Theorem 6's stand-in."""
    t, a, gamma, rho, beta = instance
    return a * np.eye(t) + gamma * ar_coefficients(t, rho)[3] + beta


#: Theorem 6 at half the class count (session 36): tried only where :func:`ar_choice`
#: already took Theorem 6 at the chosen count, and taken when its estimate is this much
#: below that stand-in's
AR_COARSER_MARGIN = 0.01
#: its grids: ``W`` points added to Theorem 4's (the remove law; the add law takes
#: Theorem 4's own), the partial-sum spacing of its add law (the remove law's is
#: :data:`AR_REMOVE_RHO`)
AR_COARSER_EXTRA_POINTS = 20
AR_COARSER_ADD_RHO = 0.02
#: the remove law's partial-sum spacing from term ``t * AR_COARSER_LATE_FRACTION`` on
#: (session 38: the late roundings hold most of the grid's excess; the early terms keep
#: :data:`AR_REMOVE_RHO`).  At 16 bands with the 20 extra points: see
#: docs/theory/dpmf_balls_in_bins.md, "Session 38"
AR_COARSER_LATE_RHO = 0.0075
AR_COARSER_LATE_FRACTION = 0.5


def ar_coarser(sigma: float, col: list, n: int, k: int, choice: tuple, ar: dict) -> tuple | None:
    """``(classes, instance)``: Theorem 6's stand-in at half of ``choice``'s class count
    ``g`` (one class size, ``2 k / g`` bins), or None.

    Fewer classes hold more bins: Lemma 3's step (revealing the class) is smaller, and
    with Theorem 6' (:func:`.bandmf_ar_add.ar_add_law`) both directions of such a class
    have a certified law.  Tried only where ``ar`` (:func:`ar_choice`) took Theorem 6 at
    ``g`` for the one class size (``g`` even, ``g / 2`` dividing ``k``); the stand-in keeps
    ``ar``'s ``gamma`` and its correlation per bin distance (``rho^(1/2)`` at half the
    classes), and is taken when its seeded Monte Carlo estimate (:func:`_mc_epsilon`, as
    :func:`ar_choice`) is :data:`AR_COARSER_MARGIN` below ``ar``'s.  Only tightness depends
    on this choice: both routes are certified.

    Examples
    --------
    >>> ar_coarser(2.0, [1.0, 0.6, 0.3], 8, 4, (2, "thm3", 0.0), {}) is None
    True
    """
    g = choice[0]
    if len(ar) != 1 or g % 2 or k % g or k % (g // 2):
        return None
    inst = next(iter(ar.values()))
    t, _, gamma, rho, _ = inst
    try:
        found = ar_instances(col, n, k, g // 2, math.sqrt(rho), gamma)
    except (RuntimeError, ValueError):  # pragma: no cover - not certified: not a candidate
        return None
    if len(found) != 1 or found[0][0] != 2 * t:
        return None
    est = _mc_epsilon(_ar_gram(found[0]), sigma, SEARCH_DELTA)
    if est < _mc_epsilon(_ar_gram(inst), sigma, SEARCH_DELTA) * (1 - AR_COARSER_MARGIN):
        return g // 2, found[0]
    return None


def _coarser_laws(sigma: float, inst: tuple, points: int) -> tuple | None:
    """Both laws of :func:`ar_coarser`'s stand-in (Theorems 6 and 6'), or None where one
    cannot be built (too few points for an innovation's sd, or exponents beyond the
    proved range)."""
    mu = math.sqrt(inst[4]) / sigma
    try:
        rem = ar_remove_law(sigma, inst, points=points + AR_COARSER_EXTRA_POINTS,
                            x_points=AR_X_POINTS, moved_width=MOVED_WIDTH, rho=AR_REMOVE_RHO,
                            late_rho=AR_COARSER_LATE_RHO,
                            late_from=int(inst[0] * AR_COARSER_LATE_FRACTION))
        add = ar_add_law(sigma, inst, points=points, x_points=AR_X_POINTS,
                         moved_width=MOVED_WIDTH, rho=AR_COARSER_ADD_RHO, prune=AR_ADD_PRUNE)
    except (ValueError, OverflowError):
        return None
    return ((rem, add, mu, mu),)
