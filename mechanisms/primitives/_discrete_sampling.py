"""Exact samplers of the discrete Laplace and discrete Gaussian laws (Canonne, Kamath,
Steinke 2020, Section 5), used by :mod:`.discrete`'s ``sample_*`` functions.

Every coin has an exactly rational probability and is drawn from exact uniform integers
of the numpy Generator (no floating-point step), so the samples have exactly the stated
laws.
"""

from __future__ import annotations

import math

import numpy as np

from ._release import uniform_below

__all__: list[str] = []


# ----------------------------------------------------------------------- exact samplers
# Canonne, Kamath, Steinke 2020, Section 5: every coin below has an exactly rational
# probability and is drawn from exact uniform integers of the numpy Generator (no
# floating-point step), so the samples have exactly the stated laws.
def _bernoulli_exp_unit(rng: np.random.Generator, num: int, den: int) -> bool:
    """``Bernoulli(exp(-num/den))`` for ``0 <= num <= den``: CKS 2020, Algorithm 1.

    Draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...`` until the first ``A_k = 0``
    and return whether that ``k`` is odd: ``P(K = k) = gamma^{k-1}/(k-1)! - gamma^k/k!``,
    whose sum over odd ``k`` is ``sum_m (-gamma)^m / m! = exp(-gamma)``.
    """
    k = 1
    while uniform_below(rng, den * k) < num:
        k += 1
    return k % 2 == 1


def _bernoulli_exp(rng: np.random.Generator, num: int, den: int) -> bool:
    """``Bernoulli(exp(-num/den))`` for any rational ``num/den >= 0`` (CKS 2020, Alg. 1).

    ``exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma)))``: ``floor(gamma)``
    independent ``Bernoulli(exp(-1))`` coins (stopping at the first failure) and one
    for the fractional part.
    """
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_unit(rng, 1, 1):
            return False
    return _bernoulli_exp_unit(rng, rest, den)


def _discrete_laplace_one(rng: np.random.Generator, t: int, s: int) -> int:
    """One draw of ``P(Y = y) ∝ exp(-|y| s / t)`` on the integers: CKS 2020, Algorithm 2.

    ``X = U + t V`` with ``U`` uniform on ``{0..t-1}`` kept with probability
    ``exp(-U/t)`` and ``V`` geometric (``P(V = v) ∝ e^{-v}``) has ``P(X = x) ∝
    e^{-x/t}``; ``Y = floor(X / s)`` then has ``P(Y = y) ∝ e^{-y s/t}``, and a fair sign
    (rejecting ``-0``) makes it two-sided.
    """
    while True:
        u = uniform_below(rng, t)
        if not _bernoulli_exp(rng, u, t):
            continue
        v = 0
        while _bernoulli_exp_unit(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = uniform_below(rng, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


#: largest ``t`` (the scale's numerator) drawn on arrays: numpy's bounded int64 draws
_ARRAY_T = 2**63 - 1
#: fewest draws taken on arrays: a batch costs a few dozen numpy calls whatever its size,
#: so below ~100 draws one Python call chain per draw is cheaper (measured: 1 draw 15-40
#: us per draw against ~200 us for a batch; even at 64, faster at 128)
_ARRAY_MIN = 128


def _bernoulli_exp_array(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """``Bernoulli(exp(-num/den))`` per entry of an int64 array ``0 <= num <= den < 2^63``.

    CKS 2020, Algorithm 1 run on all entries at once: round ``k`` draws ``A_k ~
    Bernoulli(num / (den k))`` for the entries still running, and an entry stops at its
    first ``A_k = 0`` with the answer "``k`` is odd".  The coin is exact without forming
    ``den k`` (which may pass 2^63): for ``W`` uniform on ``{0..k-1}`` and ``V`` uniform on
    ``{0..den-1}``, ``W den + V`` is uniform on ``{0..den k - 1}``, and since ``num <= den``
    it lies below ``num`` iff ``W = 0`` and ``V < num``.
    """
    out = np.empty(num.shape, dtype=bool)
    running = np.arange(num.size)
    k = 1
    while running.size:
        coin = rng.integers(0, den, size=running.size) < num[running]
        if k > 1:
            coin &= rng.integers(0, k, size=running.size) == 0
        out[running[~coin]] = k % 2 == 1
        running = running[coin]
        k += 1
    return out


def _discrete_laplace_array(rng: np.random.Generator, t: int, s: int, n: int) -> np.ndarray:
    """``n`` independent draws of :func:`_discrete_laplace_one` for ``t < 2^63``, on arrays.

    Every trial of Algorithm 2 (``U``, its ``exp(-U/t)`` coin, the geometric ``V`` as a run
    of ``exp(-1)`` coins, the sign) is drawn for a whole batch at once; the accepted
    trials, in trial order, are independent draws of the target law (each trial is
    accepted independently of the others), and the rejected ones are drawn again.  Same
    law as the scalar sampler, not the same stream of draws.
    """
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        u = rng.integers(0, t, size=n - filled)
        u = u[_bernoulli_exp_array(rng, u, t)]
        v = np.zeros(u.size, dtype=np.int64)
        running = np.arange(u.size)
        ones = np.ones(u.size, dtype=np.int64)
        while running.size:  # V: the number of exp(-1) coins up before the first down
            up = _bernoulli_exp_array(rng, ones[: running.size], 1)
            running = running[up]
            v[running] += 1
        top = t * (int(v.max()) + 1) if u.size else 0  # every u + t v lies below it
        if top <= s:  # a denominator s past every numerator (a scale below 1 / t)
            y = np.zeros(u.size, dtype=np.int64)
        elif top >= 2**63 or s > _ARRAY_T:  # u + t v, or s, past int64: Python integers
            y = np.array([(int(a) + t * int(b)) // s for a, b in zip(u, v, strict=True)],
                         dtype=object)
        else:
            y = (u + t * v) // s
        negative = rng.integers(0, 2, size=u.size) == 1
        y = np.where(negative, -y, y)[~(negative & (y == 0))]
        out[filled : filled + y.size] = y
        filled += y.size
    return out


def _discrete_gaussian_one(rng: np.random.Generator, a: int, b: int) -> int:
    """One draw of ``N_Z(0, sigma^2)`` with ``sigma^2 = a / b``: CKS 2020, Algorithm 3.

    With ``t = floor(sigma) + 1``, a discrete Laplace proposal ``Y ~ Lap_Z(t)`` is accepted
    with probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``; in integers that
    exponent is ``(|Y| b t - a)^2 / (2 a b t^2)``.
    """
    t = math.isqrt(a // b) + 1  # floor(sqrt(a/b)) = isqrt(floor(a/b))
    den = 2 * a * b * t * t
    while True:
        y = _discrete_laplace_one(rng, t, 1)
        if _bernoulli_exp(rng, (abs(y) * b * t - a) ** 2, den):
            return y
