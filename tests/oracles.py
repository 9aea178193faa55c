"""Independent reference values shared by the test suite (imported as ``oracles``).

Nothing here calls dpacct: every value is a closed form or a quadrature evaluated with
mpmath (or, for the vectorised curves a mechanism is built from, scipy), so a test that
compares the library against it cannot be true by construction.  Each oracle is itself
checked against a second, independent evaluation (quadrature, a duality, scipy or
dp_accounting) in ``tests/test_oracles.py``.

Conventions: ``mu`` is the Gaussian's sensitivity over its noise (``1 / sigma`` for a
noise multiplier ``sigma``); a ``*_delta`` returns an ``mpmath.mpf`` computed at ``dps``
digits (``float()`` it where a float is wanted); a ``*_epsilon`` returns a float, the
root of the curve found to ~30 significant digits and then rounded to nearest; a
``*_curve`` is a vectorised float curve for use *as* a mechanism's curve.

* Gaussian / GDP: :func:`gaussian_delta` (Balle & Wang 2018, Theorem 8; the mu-GDP
  curve of Dong, Roth & Su 2022, Corollary 2.13), :func:`gaussian_delta_sigma`,
  :func:`gaussian_epsilon`, :func:`gaussian_mu`, :func:`gaussian_delta_curve`, :func:`gdp_tradeoff`.
* Laplace: :func:`laplace_delta`, :func:`laplace_epsilon`, :func:`laplace_delta_curve`.
* Poisson-subsampled Gaussian: :func:`subsampled_gaussian_delta` (closed form, both
  directions), :func:`subsampled_gaussian_delta_quad` (the hockey-stick integral by
  quadrature, :func:`hockey_stick_quad`), :func:`subsampled_gaussian_epsilon`,
  :func:`subsampled_gaussian_rdp`; two distinct steps composed:
  :func:`two_subsampled_gaussians_delta`.
* :func:`invert_delta`: the smallest epsilon at which a decreasing curve is <= delta.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import mpmath
import numpy as np
from scipy import stats

__all__ = [
    "gaussian_delta",
    "gaussian_delta_curve",
    "gaussian_delta_sigma",
    "gaussian_epsilon",
    "gaussian_mu",
    "gdp_tradeoff",
    "hockey_stick_quad",
    "invert_delta",
    "laplace_delta",
    "laplace_delta_curve",
    "laplace_epsilon",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_delta_quad",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_rdp",
    "two_subsampled_gaussians_delta",
]


def _mpf(x) -> mpmath.mpf:
    # strings keep their decimal value; floats convert exactly
    return mpmath.mpf(x)


# ---------------------------------------------------------------------------- generic
def invert_delta(
    delta_fn: Callable[[mpmath.mpf], mpmath.mpf], delta, *, dps: int = 40, rel: str = "1e-30"
) -> float:
    """Smallest ``eps >= 0`` with ``delta_fn(eps) <= delta`` for a non-increasing curve.

    Bisection in mpmath at ``dps`` digits to a relative width ``rel``; the bracket is
    grown geometrically from 1e-20, so no upper limit is guessed.  Returns 0.0 when the
    curve is already at most ``delta`` at 0, else the float nearest the root.
    """
    with mpmath.workdps(dps):
        d = _mpf(delta)
        if delta_fn(mpmath.mpf(0)) <= d:
            return 0.0
        lo, hi = mpmath.mpf(0), mpmath.mpf("1e-20")
        while delta_fn(hi) > d:
            lo, hi = hi, hi * 4
        tol = _mpf(rel)
        while hi - lo > tol * hi:
            mid = (lo + hi) / 2
            if delta_fn(mid) > d:
                lo = mid
            else:
                hi = mid
        return float((lo + hi) / 2)


# ---------------------------------------------------------------------- Gaussian / GDP
def gaussian_delta(mu, eps, *, dps: int = 50) -> mpmath.mpf:
    """delta(eps) of N(mu, 1) against N(0, 1), i.e. of mu-GDP, in mpmath.

    ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (Balle & Wang 2018, Theorem 8;
    Dong, Roth & Su 2022, Corollary 2.13), at ``dps`` digits; any real ``eps``.
    """
    with mpmath.workdps(dps):
        m, e = _mpf(mu), _mpf(eps)
        return +(mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m))


def gaussian_delta_sigma(sigma, eps, *, sensitivity=1.0, dps: int = 50) -> mpmath.mpf:
    """delta(eps) of N(sensitivity, sigma^2) against N(0, sigma^2): :func:`gaussian_delta`
    at ``mu = sensitivity / sigma``, the ratio taken at ``dps`` digits (not in floats)."""
    with mpmath.workdps(dps):
        return gaussian_delta(_mpf(sensitivity) / _mpf(sigma), eps, dps=dps)


def gaussian_epsilon(mu, delta, *, dps: int = 40) -> float:
    """The exact epsilon of mu-GDP at ``delta`` (root of :func:`gaussian_delta`)."""
    return invert_delta(lambda e: gaussian_delta(mu, e, dps=dps), delta, dps=dps)


def gaussian_mu(epsilon, delta, *, dps: int = 40) -> float:
    """The mu at which mu-GDP is exactly (epsilon, delta)-DP (delta(eps) increases in mu)."""
    with mpmath.workdps(dps):
        d = _mpf(delta)
        lo, hi = mpmath.mpf("1e-6"), mpmath.mpf(1)
        while gaussian_delta(hi, epsilon, dps=dps) < d:
            lo, hi = hi, hi * 2
        while hi - lo > mpmath.mpf("1e-30") * hi:
            mid = (lo + hi) / 2
            if gaussian_delta(mid, epsilon, dps=dps) < d:
                lo = mid
            else:
                hi = mid
        return float((lo + hi) / 2)


def gaussian_delta_curve(eps, mu: float = 1.0) -> np.ndarray:
    """The mu-GDP curve in floats, vectorised (scipy), for building a mechanism from it.

    The same formula as :func:`gaussian_delta`; its float error is checked there.
    """
    eps = np.asarray(eps, dtype=float)
    return stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


def gdp_tradeoff(mu, alpha, *, dps: int = 40) -> mpmath.mpf:
    """The mu-GDP trade-off function ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)`` (Dong,
    Roth & Su 2022, Definition 2.7): the smallest type II error at type I error alpha."""
    with mpmath.workdps(dps):
        a = _mpf(alpha)
        if a <= 0:
            return mpmath.mpf(1)
        if a >= 1:
            return mpmath.mpf(0)
        # Phi^-1(1 - a) = -sqrt(2) erfinv(2a - 1)
        z = -mpmath.sqrt(2) * mpmath.erfinv(2 * a - 1)
        return +mpmath.ncdf(z - _mpf(mu))


# ---------------------------------------------------------------------------- Laplace
def laplace_delta(b, eps, *, dps: int = 50) -> mpmath.mpf:
    """delta(eps) of Lap(1, b) against Lap(0, b) (sensitivity 1), in mpmath.

    The loss is clipped to ``[-1/b, 1/b]`` with atoms at both ends; for
    ``|eps| <= 1/b`` the curve is ``1 - e^{(eps - 1/b)/2}``, 0 above ``1/b`` and
    ``1 - e^eps`` below ``-1/b``.
    """
    with mpmath.workdps(dps):
        bb, e = _mpf(b), _mpf(eps)
        if e >= 1 / bb:
            return mpmath.mpf(0)
        if e < -1 / bb:
            return -mpmath.expm1(e)
        return -mpmath.expm1((e - 1 / bb) / 2)


def laplace_epsilon(b, delta) -> float:
    """Exact epsilon of the Laplace mechanism: ``max(0, 1/b + 2 log(1 - delta))``."""
    with mpmath.workdps(40):
        return float(max(mpmath.mpf(0), 1 / _mpf(b) + 2 * mpmath.log1p(-_mpf(delta))))


def laplace_delta_curve(eps, b: float = 1.0) -> np.ndarray:
    """The Laplace curve in floats for ``eps >= -1/b``, vectorised."""
    return np.maximum(0.0, -np.expm1((np.asarray(eps, dtype=float) - 1.0 / b) / 2.0))


# -------------------------------------------------------- Poisson-subsampled Gaussian
def subsampled_gaussian_delta(
    q, sigma, eps, *, direction: str = "max", dps: int = 50
) -> mpmath.mpf:
    """delta(eps) of one Poisson-subsampled Gaussian step, in closed form (mpmath).

    Remove: ``P = (1-q) N(0, s^2) + q N(1, s^2)`` against ``Q = N(0, s^2)``; add: the
    swapped pair (Zhu, Dong & Wang 2022, Theorem 11).  The likelihood ratio
    ``(1-q) + q e^{(2x-1)/(2 s^2)}`` increases in ``x``, so each hockey-stick integral is
    a sum of normal tails at the threshold where it equals ``e^eps`` (remove) or
    ``e^-eps`` (add).  ``direction`` is ``"remove"``, ``"add"`` or ``"max"``.
    """
    if direction not in ("remove", "add", "max"):
        raise ValueError(f"direction must be 'remove', 'add' or 'max', got {direction!r}")
    with mpmath.workdps(dps):
        q, s, e = _mpf(q), _mpf(sigma), _mpf(eps)
        t = mpmath.exp(e)

        def tail(z):  # P(N(0, 1) > z)
            return mpmath.ncdf(-z)

        remove = add = mpmath.mpf(0)
        if direction != "add":
            if t - 1 + q <= 0:  # eps below the loss's floor log(1 - q): every x counts
                remove = 1 - t
            else:
                x = s**2 * mpmath.log((t - 1 + q) / q) + mpmath.mpf(1) / 2
                remove = (1 - q) * tail(x / s) + q * tail((x - 1) / s) - t * tail(x / s)
        if direction != "remove":
            arg = (1 / t - 1 + q) / q
            if arg > 0:  # else -L <= -log(1 - q) < eps everywhere
                x = s**2 * mpmath.log(arg) + mpmath.mpf(1) / 2
                head_q = (1 - q) * mpmath.ncdf(x / s) + q * mpmath.ncdf((x - 1) / s)
                add = mpmath.ncdf(x / s) - t * head_q
        if direction == "remove":
            return +remove
        if direction == "add":
            return +max(add, mpmath.mpf(0))
        return +max(remove, add, mpmath.mpf(0))


def hockey_stick_quad(p_pdf, q_pdf, eps, grid, *, dps: int = 30) -> mpmath.mpf:
    """``int max(p - e^eps q, 0) dx`` over the line by mpmath quadrature.

    The sign changes of ``p - e^eps q`` are located on ``grid`` (sorted points covering
    where the densities live) and solved numerically (no closed-form threshold); the
    positive part is then integrated piece by piece between the grid points and roots,
    where it is smooth, with both infinite tails.
    """
    with mpmath.workdps(dps):
        t = mpmath.exp(_mpf(eps))

        def f(x):
            return p_pdf(x) - t * q_pdf(x)

        pts = [_mpf(x) for x in grid]
        roots = []
        vals = [f(x) for x in pts]
        for (a, b), (fa, fb) in zip(itertools.pairwise(pts), itertools.pairwise(vals), strict=True):
            if (fa > 0) != (fb > 0) and fa != 0 and fb != 0:
                roots.append(mpmath.findroot(f, (a, b), solver="anderson"))
        cuts = [-mpmath.inf, *sorted(pts + roots), mpmath.inf]
        total = mpmath.mpf(0)
        for a, b in itertools.pairwise(cuts):
            if a == b:
                continue
            mid = b - 1 if a == -mpmath.inf else a + 1 if b == mpmath.inf else (a + b) / 2
            if f(mid) > 0:
                total += mpmath.quad(f, [a, b])
        return +total


def subsampled_gaussian_delta_quad(
    q, sigma, eps, *, direction: str = "max", dps: int = 30
) -> mpmath.mpf:
    """The same divergence as :func:`subsampled_gaussian_delta`, by
    :func:`hockey_stick_quad` on the densities (no threshold solved in closed form)."""
    if direction not in ("remove", "add", "max"):
        raise ValueError(f"direction must be 'remove', 'add' or 'max', got {direction!r}")
    with mpmath.workdps(dps):
        q, s = _mpf(q), _mpf(sigma)

        def mix(x):
            return (1 - q) * mpmath.npdf(x, 0, s) + q * mpmath.npdf(x, 1, s)

        def base(x):
            return mpmath.npdf(x, 0, s)

        grid = [-40 * s + k * (80 * s + 1) / 200 for k in range(201)]
        out = []
        if direction != "add":
            out.append(hockey_stick_quad(mix, base, eps, grid, dps=dps))
        if direction != "remove":
            out.append(hockey_stick_quad(base, mix, eps, grid, dps=dps))
        return +max(out)


def two_subsampled_gaussians_delta(first, second, eps, *, dps: int = 30) -> mpmath.mpf:
    """delta(eps) of two Poisson-subsampled Gaussian steps ``(sigma, q)`` composed, both
    directions (the larger), by one quadrature over the first step's output.

    For a product pair the hockey-stick divergence conditions on the first coordinate:
    ``delta(eps) = E_{x ~ P1}[H2(eps - L1(x))]`` with ``L1`` the first step's loss and
    ``H2(e) = E_{P2}[(1 - e^{e - L2})_+]`` the second step's divergence at any real
    ``e`` (:func:`subsampled_gaussian_delta`, closed form, negative ``e`` included);
    the add direction likewise with ``x ~ Q1 = N(0, s1^2)``, its loss ``-L1(x)``.
    Accurate to about 1e-9 relative (the two orders of the steps agree to 2e-9 at
    deltas 1e-13 and 1e-15: ``tests/test_oracles.py``).
    """
    (s1, q1), (s2, q2) = first, second
    with mpmath.workdps(dps):
        s1, q1, e = _mpf(s1), _mpf(q1), _mpf(eps)

        def loss(x):  # first step's remove-direction loss
            return mpmath.log(1 - q1 + q1 * mpmath.exp((2 * x - 1) / (2 * s1**2)))

        def remove(x):
            p = (1 - q1) * mpmath.npdf(x, 0, s1) + q1 * mpmath.npdf(x, 1, s1)
            return p * subsampled_gaussian_delta(q2, s2, e - loss(x), direction="remove", dps=dps)

        def add(x):
            h = subsampled_gaussian_delta(q2, s2, e + loss(x), direction="add", dps=dps)
            return mpmath.npdf(x, 0, s1) * h

        # where L1 = eps (the first step alone reaches eps) and around the two means
        top = s1**2 * mpmath.log((mpmath.exp(e) - 1 + q1) / q1) + mpmath.mpf(1) / 2
        cuts = [-mpmath.inf, -12 * s1, 0, 1, top, top + 12 * s1, mpmath.inf]
        cuts = sorted(set(cuts))
        out = [mpmath.quad(f, cuts) for f in (remove, add)]
        return +max(out)


def subsampled_gaussian_epsilon(q, sigma, delta, *, direction: str = "max") -> float:
    """Exact epsilon of one Poisson-subsampled Gaussian step at ``delta``."""
    return invert_delta(
        lambda e: subsampled_gaussian_delta(q, sigma, e, direction=direction), delta
    )


def subsampled_gaussian_rdp(q, sigma, order, *, direction: str = "remove", dps: int = 40) -> float:
    """RDP of one Poisson-subsampled Gaussian step at an order ``> 1``, in mpmath.

    ``remove``: ``D_a((1-q) N(0, s^2) + q N(1, s^2) || N(0, s^2))``, which dominates the
    other direction (Mironov, Talwar & Zhang 2019, Theorem 5); ``add``: the swapped pair.
    Integer orders of the remove direction: their binomial expansion (Section 3.3),
    ``log(sum_k C(a, k) (1-q)^(a-k) q^k exp((k^2 - k) / (2 s^2))) / (a - 1)``; otherwise
    the defining integral by quadrature, split where the mass sits (near 0, 1/2, 1 and
    the order, and where the two densities cross).
    """
    if not order > 1:
        raise ValueError(f"order must be > 1, got {order!r}")
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    with mpmath.workdps(dps):
        qq, s = _mpf(q), _mpf(sigma)
        if direction == "remove" and float(order).is_integer():
            a = int(order)
            total = mpmath.fsum(
                mpmath.binomial(a, k)
                * (1 - qq) ** (a - k)
                * qq**k
                * mpmath.exp((k * k - k) / (2 * s * s))
                for k in range(a + 1)
            )
            return float(mpmath.log(total) / (a - 1))
        a = _mpf(order)

        def integrand(x):
            p0 = mpmath.npdf(x, 0, s)
            mix = (1 - qq) * p0 + qq * mpmath.npdf(x, 1, s)
            return mix**a * p0 ** (1 - a) if direction == "remove" else p0**a * mix ** (1 - a)

        breaks = {-12 * s, mpmath.mpf(0), mpmath.mpf(1) / 2, mpmath.mpf(1), a, a + 12 * s}
        if qq < 1:
            z0 = s * s * mpmath.log(1 / qq - 1) + mpmath.mpf(1) / 2
            if -12 * s < z0 < a + 12 * s:
                breaks.add(z0)
        total = mpmath.quad(integrand, [-mpmath.inf, *sorted(breaks), mpmath.inf])
        return float(mpmath.log(total) / (a - 1))


def subsampled_gaussians_delta_is(
    phases, eps: float, rng, *, draws: int = 100_000, chunk: int = 5_000
) -> tuple[float, float]:
    """Importance-sampled ``delta(eps)`` of Poisson-subsampled Gaussian steps ``(sigma,
    q, count)`` composed, remove direction only (an ESTIMATE with its standard error;
    randomness only from ``rng``, a ``numpy.random.Generator``).

    ``delta = E_P[(1 - e^{eps - L})_+]`` with ``L = sum_i L_i``, ``L_i = log(1 - q_i +
    q_i e^{(2 x_i - 1) / (2 s_i^2)})`` and ``x_i ~ P_i = (1 - q_i) N(0, s_i^2) + q_i N(1,
    s_i^2)``.  At tiny deltas of small-q steps the event ``L > eps`` is one step's big
    jump, so the proposal is a mixture over the steps ``j`` (fixed weights ``w_j``
    proportional to ``q_j P(N(1, s_j^2) > c_j)``, ``c_j`` where ``L_j = eps``): the
    others drawn from ``P``, then ``x_j`` from the sampled branch ``N(1, s_j^2)``
    conditioned on ``L > eps``, i.e. on ``x_j`` above ``c_j(x_-j)``, where ``L_j`` reaches
    ``eps`` less the others' loss.  Every point of the event has positive density under
    every component, so the weight ``dP / dproposal = 1 / sum_j w_j g_j(x_j | x_-j) /
    P_j(x_j)`` is exact and the estimate unbiased.  The add direction is not sampled:
    its loss is at most ``-sum log(1 - q_i)``, which must be below ``eps`` (ValueError
    otherwise).
    """
    sig = np.repeat([float(s) for s, _, _ in phases], [int(c) for _, _, c in phases])
    qs = np.repeat([float(q) for _, q, _ in phases], [int(c) for _, _, c in phases])
    if -np.sum(np.log1p(-qs)) >= eps:
        raise ValueError("eps must exceed the add direction's largest loss")

    def loss(x):
        return np.log1p(qs * np.expm1((x - 0.5) / sig**2))

    def cut(level):  # the x at which L_i = level (-inf below its smallest loss)
        with np.errstate(invalid="ignore", divide="ignore"):
            inner = (np.expm1(level) + qs) / qs
            return np.where(inner > 0, sig**2 * np.log(inner) + 0.5, -np.inf)

    log_w = np.log(qs) + stats.norm.logsf((cut(eps) - 1.0) / sig)
    w = np.exp(log_w - np.max(log_w))
    w /= w.sum()
    n = sig.size
    values = []
    for start in range(0, draws, chunk):
        m = min(chunk, draws - start)
        rows = np.arange(m)
        x = rng.standard_normal((m, n)) * sig + (rng.random((m, n)) < qs)
        pick = rng.choice(n, size=m, p=w)
        losses = loss(x)
        rest = losses.sum(axis=1) - losses[rows, pick]
        level = eps - rest
        with np.errstate(invalid="ignore", divide="ignore"):
            inner = (np.expm1(level) + qs[pick]) / qs[pick]
            c = np.where(inner > 0, sig[pick] ** 2 * np.log(inner) + 0.5, -np.inf)
        tail = stats.norm.sf((c - 1.0) / sig[pick])
        x[rows, pick] = 1.0 + sig[pick] * stats.norm.isf(rng.random(m) * tail)
        losses = loss(x)
        total = losses.sum(axis=1)
        # every component's density ratio at this point: x_j above its own cut
        cuts = cut(eps - (total[:, None] - losses))
        inner_p = -((x - 1.0) ** 2) / (2 * sig**2)
        log_p = np.logaddexp(np.log1p(-qs) - x**2 / (2 * sig**2), np.log(qs) + inner_p)
        log_sf = stats.norm.logsf((cuts - 1.0) / sig)
        with np.errstate(divide="ignore"):
            log_r = np.where(x > cuts, np.log(w) + inner_p - log_sf - log_p, -np.inf)
        log_mix = np.logaddexp.reduce(log_r, axis=1)
        gain = -np.expm1(np.minimum(eps - total, 0.0))
        values.append(gain * np.exp(-log_mix))
    out = np.concatenate(values)
    return float(out.mean()), float(out.std(ddof=1) / np.sqrt(out.size))
