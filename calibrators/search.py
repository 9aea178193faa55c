"""The search behind :func:`~dpacct.calibrators.calibrate.calibrate`, and its errors.

A log-scale bracket that widens itself, then a safeguarded secant on ``log epsilon``
(the two steps are described in :mod:`dpacct.calibrators.calibrate`); every mechanism
is evaluated at most once per parameter value, and the answer is always taken on the
feasible side of the bracket.  A target the family cannot reach raises
:class:`UnreachableTargetError` (a :class:`CalibrationError`) saying which range of
epsilon was reached.  Both errors are re-exported by :mod:`dpacct.calibrators.calibrate`
and :mod:`dpacct.calibrators`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.numerics import EXP_MAX, EXP_OVERFLOW, LazyBar, brentq

__all__ = ["CalibrationError", "UnreachableTargetError"]


#: how far (as a factor) the bracket may grow beyond the starting interval, each side
_MAX_WIDEN = 1e12
#: stop refining once the bracket is this narrow in log(parameter)
_XTOL = 1e-12
#: the default relative tolerance of the continuous calibrators: the epsilon reached
#: lies in ``[target * (1 - DEFAULT_RTOL), target]``, so at most 0.005 % of the budget is
#: left unused (the secant usually lands there in two or three evaluations)
DEFAULT_RTOL = 5e-5
#: a bracket this narrow in log(parameter) is refined by interpolating between its ends
_NARROW = 1e-3
#: a parameter this close (relative) to a domain edge is the edge (exp/log round-off)
_EDGE_RTOL = 1e-12


class CalibrationError(ValueError):
    """A calibration that cannot return a parameter meeting the request.

    Parameters
    ----------
    message : str
        The explanation shown to the user.
    reachable : tuple of float, default (nan, nan)
        ``(smallest, largest)`` epsilon observed over ``searched``.
    searched : tuple of float, default (nan, nan)
        ``(smallest, largest)`` parameter value evaluated.

    Attributes
    ----------
    reachable, searched : tuple of float
        The parameters of the same names.
    """

    def __init__(
        self,
        message: str,
        *,
        reachable: tuple[float, float] = (math.nan, math.nan),
        searched: tuple[float, float] = (math.nan, math.nan),
    ) -> None:
        super().__init__(message)
        self.reachable = reachable
        self.searched = searched


class UnreachableTargetError(CalibrationError):
    """The target epsilon is out of the range of epsilon the family can reach.

    Parameters
    ----------
    message : str
        The explanation shown to the user.
    reachable : tuple of float, default (nan, nan)
        ``(smallest, largest)`` epsilon observed over ``searched``.
    searched : tuple of float, default (nan, nan)
        ``(smallest, largest)`` parameter value evaluated.
    """


class _Search:
    """State of one calibration: evaluated points and the bracket, in x = log(parameter).

    ``h(x) = log(epsilon(e^x) / target)``: the point is feasible when ``h <= 0``.
    ``sign`` is +1 when epsilon increases with the parameter, -1 otherwise.
    """

    def __init__(
        self,
        build: Callable[[float], tuple[Any, Any]],
        target: float,
        delta: float,
        *,
        tol: float | None,
        integer: bool,
        rtol: float,
        domain: tuple[float, float],
        limits: tuple[float, float],
        estimate: Callable[[float], float] | None,
        name: str,
        max_evaluations: int,
        progress: bool | None,
    ) -> None:
        self.build = build
        self.target = target
        self.log_target = math.log(target)
        self.delta = delta
        self.tol = tol
        self.integer = integer
        self.window = math.log1p(-rtol) if not integer else 0.0
        self.aim = 0.5 * self.window
        # x-limits: domain edges (closed when finite and > 0) intersected with the
        # widening limits
        self.dom_lo, self.dom_hi = domain
        self.x_lo = math.log(max(limits[0], domain[0])) if max(limits[0], domain[0]) > 0 else None
        self.x_hi = math.log(min(limits[1], domain[1]))
        self.estimate = estimate
        self.name = name
        self.max_evaluations = max_evaluations
        self.points: dict[float, tuple[float, Any, Any, float]] = {}  # x -> (h, mech, params, eps)
        self.order: list[float] = []
        self.sign = 0
        self._model_cache: dict[float, float] = {}
        # shown after a few seconds by default (progress None), at once when asked
        # (True), never with False; tqdm is imported only then (numerics.LazyBar)
        self._bar = LazyBar(
            total=None, desc=f"calibrating {name}", delay=0.0 if progress else 3.0,
            progress=progress is not False, unit="eval",
        )

    # -------------------------------------------------------------- evaluations
    def param(self, x: float) -> float | int:
        p = math.exp(min(x, EXP_MAX))
        if self.integer:
            n = max(round(p), math.ceil(self.dom_lo))
            return n if math.isinf(self.dom_hi) else min(n, math.floor(self.dom_hi))
        # exp(log(edge)) can miss a domain edge by 1e-13 relative (1e300 comes back as
        # 9.99999999999976e299): a point that close is the edge itself, so that a budget
        # every parameter meets stops there (at_domain_edge) instead of failing
        if p >= self.dom_hi * (1.0 - _EDGE_RTOL):
            return self.dom_hi
        if p <= self.dom_lo * (1.0 + _EDGE_RTOL):
            return self.dom_lo
        return p

    def snap(self, x: float) -> float:
        """Map x to the x of the parameter actually evaluated (integers, domain edges)."""
        p = self.param(x)
        return math.log(p)

    def evaluate(self, x: float) -> float:
        x = self.snap(x)
        if x in self.points:
            return self.points[x][0]
        if len(self.points) >= self.max_evaluations:
            raise _Exhausted
        p = self.param(x)
        mech, params = self.build(p)
        if not isinstance(mech, Mechanism):
            raise TypeError(
                f"family must return a Mechanism, got {type(mech).__name__} for {self.name}={p!r}"
            )
        if self.delta == 0.0:
            # pure DP: the mechanism's own pure epsilon (Mechanism.pure_epsilon)
            eps = float(mech.pure_epsilon)
            if math.isinf(eps):
                raise ValueError(
                    f"delta=0 needs a pure-DP family, but {mech!r} (at {self.name}={p!r}) "
                    "has no pure epsilon (pure_epsilon is inf): give delta > 0, or use a "
                    "pure-DP mechanism (Laplace, randomized response, exponential "
                    "mechanism, and their compositions)"
                )
        else:
            eps = float(mech.epsilon(self.delta, tol=self.tol))
        if math.isnan(eps):
            raise ValueError(f"the family returned epsilon = nan for {self.name}={p!r}")
        h = (
            math.inf
            if eps == math.inf
            else (-math.inf if eps <= 0 else math.log(eps) - self.log_target)
        )
        self.points[x] = (h, mech, params, eps)
        self.order.append(x)
        self._tick()
        return h

    def _tick(self) -> None:
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()

    def h(self, x: float) -> float:
        return self.points[x][0]

    def model(self, x: float) -> float:
        """log(estimate / target), clipped to a finite range (cached)."""
        if x not in self._model_cache:
            self._model_cache[x] = self._model(x)
        return self._model_cache[x]

    def _model(self, x: float) -> float:
        try:
            e = float(self.estimate(self.param_cont(x)))  # type: ignore[misc]
        except (ValueError, OverflowError, ZeroDivisionError):
            return math.nan
        if math.isnan(e):
            return math.nan
        if e <= 0:
            return -1e6
        if math.isinf(e):
            return 1e6
        return min(max(math.log(e) - self.log_target, -1e6), 1e6)

    @staticmethod
    def param_cont(x: float) -> float:
        return math.exp(x)

    # ------------------------------------------------------------------ bracket
    def feasible(self) -> list[float]:
        return [x for x in self.points if self.h(x) <= 0]

    def infeasible(self) -> list[float]:
        return [x for x in self.points if self.h(x) > 0]

    def bracket(self) -> tuple[float | None, float | None]:
        """(nearest feasible x, nearest infeasible x) to the crossing."""
        s = self.sign
        f = self.feasible()
        i = self.infeasible()
        xf = max(f, key=lambda x: s * x) if f else None
        xi = min(i, key=lambda x: s * x) if i else None
        return xf, xi

    # ----------------------------------------------------------------- predict
    def predict(self, aim: float, lo: float | None = None, hi: float | None = None) -> float | None:
        """Where ``h = aim``: secant on the two latest finite points, residual-corrected.

        Without an estimate this is the secant of ``h`` itself (``None`` from a single
        point).  With an estimate ``m``, the residual ``h - m`` is interpolated linearly
        (constant from a single point) and ``m + residual = aim`` is solved numerically.
        """
        finite = [x for x in self.order if math.isfinite(self.h(x))]
        if self.estimate is not None:
            finite = [x for x in finite if math.isfinite(self.model(x))]
        if not finite:
            return None
        xb = finite[-1]
        xa = next((x for x in reversed(finite[:-1]) if x != xb), None)
        if self.estimate is None:
            if xa is None:
                return None
            ha, hb = self.h(xa), self.h(xb)
            if ha == hb:
                return None
            return xb + (aim - hb) * (xb - xa) / (hb - ha)
        rb = self.h(xb) - self.model(xb)
        slope = 0.0
        if xa is not None:
            slope = (self.h(xa) - self.model(xa) - rb) / (xa - xb)

        def f(x: float) -> float:
            return self.model(x) + rb + slope * (x - xb) - aim

        return _root(f, xb, self.sign, lo, hi)

    # ------------------------------------------------------------------- limits
    def clamp(self, x: float) -> float:
        if self.x_lo is not None:
            x = max(x, self.x_lo)
        return min(x, self.x_hi)

    def at_limit(self, x: float, direction: int) -> bool:
        """True if x sits on the search limit in ``direction`` (+1 up, -1 down)."""
        if direction > 0:
            return x >= self.snap(self.x_hi) - 1e-15
        if self.x_lo is None:
            return False
        return x <= self.snap(self.x_lo) + 1e-15


class _Exhausted(Exception):
    """Internal: max_evaluations reached."""


def _root(
    f: Callable[[float], float],
    x0: float,
    sign: int,
    lo: float | None = None,
    hi: float | None = None,
) -> float | None:
    """A root of ``f`` near ``x0``, where ``f`` increases with x if ``sign > 0``.

    Steps away from ``x0`` towards the root, doubling the step, until the sign changes,
    then Brent's method with explicit tolerances.  ``None`` if no sign change is found.
    """
    f0 = f(x0)
    if math.isnan(f0):
        return None
    if f0 == 0:
        return x0
    d = -sign if f0 > 0 else sign
    a, step = x0, 0.05
    for _ in range(14):
        b = a + d * step
        if lo is not None:
            b = max(b, lo)
        if hi is not None:
            b = min(b, hi)
        if b == a:
            return None
        fb = f(b)
        if math.isnan(fb):
            return None
        if fb == 0:
            return b
        if (fb > 0) != (f0 > 0):
            return brentq(f, min(a, b), max(a, b), xtol=1e-8, rtol=1e-10, maxiter=200)
        a, step = b, 2.0 * step
    return None


def _run(search: _Search, lo: float, hi: float, start: float | None, increasing) -> float:
    """Drive the search; return the x of the answer."""
    s = search
    try:
        # ---- direction and first point(s)
        if increasing is not None:
            s.sign = 1 if increasing else -1
        elif s.estimate is not None:
            a, b = s.model(math.log(lo)), s.model(math.log(hi if hi > lo else 2 * lo))
            if math.isfinite(a) and math.isfinite(b) and a != b:
                s.sign = 1 if b > a else -1
        if s.sign == 0:
            s.sign = _detect_direction(s, lo, hi)
        if start is not None:
            x0 = math.log(start)
        elif s.estimate is not None:
            x0 = _model_start(s, lo, hi)
        else:
            x0 = 0.5 * (math.log(lo) + math.log(hi))
        s.evaluate(s.clamp(x0))
        # first widening step: from the middle of the interval to its end
        return _refine(s, width=max(0.5 * math.log(hi / lo), 0.5 * math.log(2.0)))
    except _Exhausted:
        xf, _ = s.bracket()
        if xf is None:
            raise CalibrationError(
                f"calibration of {s.name} ran out of evaluations ({s.max_evaluations}) "
                f"before meeting epsilon={s.target:g} at delta={s.delta:g}; " + _range_text(s),
                reachable=_reachable(s),
                searched=_searched(s),
            ) from None
        return xf


def _model_start(s: _Search, lo: float, hi: float) -> float:
    """Where the estimate meets the middle of the window (or the interval's middle)."""
    xm = 0.5 * (math.log(lo) + math.log(hi))
    f_aim = s.aim if not s.integer else 0.0

    def f(x: float) -> float:
        return s.model(x) - f_aim

    root = _root(f, xm, s.sign)
    if root is None or not math.isfinite(root):
        return xm
    if s.integer:
        # the last integer predicted feasible
        p = math.exp(root)
        p = math.floor(p) if s.sign > 0 else math.ceil(p)
        return math.log(max(p, 1))
    return root


def _detect_direction(s: _Search, lo: float, hi: float) -> int:
    """Evaluate both ends of the interval (widening them) until epsilon differs."""
    xa, xb = math.log(lo), math.log(hi)
    width = max(xb - xa, math.log(2.0))
    if s.integer and round(math.exp(xb)) == round(math.exp(xa)):
        xb = math.log(round(math.exp(xa)) + 1)
    if xb == xa:
        xb = xa + width
    for _ in range(8):
        xa, xb = s.snap(s.clamp(xa)), s.snap(s.clamp(xb))
        ha, hb = s.evaluate(xa), s.evaluate(xb)
        if ha != hb:
            return 1 if hb > ha else -1
        if s.at_limit(xa, -1) and s.at_limit(xb, 1):
            break
        width *= 2.0
        xa, xb = xa - width, xb + width
    eps = s.points[xa][3]
    raise CalibrationError(
        f"epsilon does not depend on {s.name}: it is {eps:.6g} at delta={s.delta:g} for "
        f"{s.name} from {s.param(xa):.6g} to {s.param(xb):.6g}; cannot calibrate",
        reachable=(eps, eps),
        searched=_searched(s),
    )


def _refine(s: _Search, width: float) -> float:
    """Bracket and refine from the evaluated points; return the answer's x."""
    stall = 0
    last_width = math.inf
    while True:
        xf, xi = s.bracket()
        # ---- done?
        if xf is not None and not s.integer and s.h(xf) >= s.window:
            return xf
        if xf is not None and xi is not None:
            if s.integer:
                pf, pi = s.param(xf), s.param(xi)
                if abs(pf - pi) <= 1:
                    return xf
            elif s.sign * (xi - xf) <= _XTOL * max(1.0, abs(xf)):
                return xf
            if s.sign * (xi - xf) < 0:
                # non-monotone noise in the accountant: the feasible side wins
                return xf
            x = _bracketed_step(s, xf, xi, stall)
            w = abs(xi - xf)
            stall = stall + 1 if w > 0.5 * last_width else 0
            last_width = w
        else:
            x, width = _widening_step(s, xf, xi, width)
            if x is None:
                return xf  # type: ignore[return-value]  # domain edge, feasible
        s.evaluate(x)


def _bracketed_step(s: _Search, xf: float, xi: float, stall: int) -> float:
    lo, hi = (xf, xi) if xf < xi else (xi, xf)
    aim = s.aim if not s.integer else 0.0
    hf, hi_ = s.h(xf), s.h(xi)
    if not s.integer and hi - lo <= _NARROW and math.isfinite(hf) and math.isfinite(hi_):
        # a narrow bracket: h is linear there to well within the window, while a
        # steering estimate can be kinked at this scale (a minimum over RDP orders):
        # interpolate between the bracket's ends
        x = xf + (aim - hf) * (xi - xf) / (hi_ - hf)
        return x if lo < x < hi else 0.5 * (lo + hi)
    x = s.predict(aim, lo, hi) if stall < 4 else None
    if s.integer:
        return _integer_candidate(s, x if stall < 2 else None, xf, xi)
    if x is not None and stall >= 2:
        # the predictions keep landing on one side without closing the bracket (a
        # one-sided secant): step twice as far from the end that moved, across the
        # crossing, so that the next secant interpolates between two close points
        moved = xf if s.order[-1] == xf else xi
        x = moved + 2.0 * (x - moved)
    if x is None or not lo < x < hi:
        x = 0.5 * (lo + hi)  # bisection in log space
    return x


def _integer_candidate(s: _Search, x: float | None, xf: float, xi: float) -> float:
    """An untried integer strictly between the bracket ends, near the prediction."""
    pf, pi = s.param(xf), s.param(xi)
    a, b = (pf, pi) if pf < pi else (pi, pf)
    if x is not None and math.isfinite(x):
        p = math.exp(min(max(x, -EXP_OVERFLOW), EXP_OVERFLOW))
        # the integer predicted feasible next to the crossing
        c = math.floor(p) if s.sign > 0 else math.ceil(p)
        if c == pf:
            c = pf + s.sign  # probe the neighbour across
    else:
        c = None
    if c is None or not a < c < b:
        # bisection: geometric when the ends are far apart, arithmetic otherwise
        c = round(math.sqrt(a * b)) if b > 2 * a else (a + b) // 2
        c = min(max(c, a + 1), b - 1)
    return math.log(c)


def _widening_step(
    s: _Search, xf: float | None, xi: float | None, width: float
) -> tuple[float | None, float]:
    """Next point when the crossing is not bracketed yet."""
    if xf is not None:
        edge, direction = xf, s.sign  # need a larger epsilon
    else:
        edge, direction = xi, -s.sign  # need a smaller epsilon
    assert edge is not None
    aim = s.aim if not s.integer else 0.0
    x = s.predict(aim)
    if x is None or not math.isfinite(x) or (x - edge) * direction <= 0:
        x = edge + direction * width
        width *= 2.0
    elif abs(x - edge) > width:
        x = edge + direction * width
        width *= 2.0
    elif s.integer:
        p = math.exp(min(max(x, -EXP_OVERFLOW), EXP_OVERFLOW))
        c = math.floor(p) if s.sign > 0 else math.ceil(p)
        pe = s.param(edge)
        if (c - pe) * direction <= 0:
            c = pe + direction
        x = math.log(max(c, 1))
    x = s.clamp(x)
    if s.snap(x) in s.points:
        if s.at_limit(edge, direction) or s.at_limit(s.snap(x), direction):
            return _at_limit(s, xf, direction), width
        # the prediction repeats a point: force a widening step
        x = s.clamp(edge + direction * width)
        width *= 2.0
        if s.snap(x) in s.points:
            return _at_limit(s, xf, direction), width
    return x, width


def _at_limit(s: _Search, xf: float | None, direction: int) -> float | None:
    """The search hit its limit without bracketing the crossing."""
    if xf is not None:
        # every point up to the limit meets the budget
        p = s.param(xf)
        if (direction > 0 and p >= s.dom_hi) or (direction < 0 and p <= s.dom_lo):
            return None  # a domain edge: the feasible edge is the answer
        raise CalibrationError(
            f"every {s.name} searched meets epsilon={s.target:g} at delta={s.delta:g}: "
            + _range_text(s)
            + "; the boundary lies further out: pass a wider interval or a domain",
            reachable=_reachable(s),
            searched=_searched(s),
        )
    # no point meets the budget: report the smallest epsilon found and where
    best = min(s.points, key=lambda x: s.points[x][3])
    p_best, e_best = s.param(best), s.points[best][3]
    at_edge = (direction > 0 and p_best >= s.dom_hi) or (direction < 0 and p_best <= s.dom_lo)
    where = (
        f"the end of its domain [{s.dom_lo:g}, {s.dom_hi:g}]"
        if at_edge
        else "twelve orders of magnitude beyond the starting interval"
    )
    raise UnreachableTargetError(
        f"target epsilon={s.target:g} is out of reach at delta={s.delta:g}: the smallest "
        f"epsilon the family reaches is {e_best:.6g}, at {s.name}={p_best:.6g} ({where}); "
        + _range_text(s),
        reachable=_reachable(s),
        searched=_searched(s),
    )


def _reachable(s: _Search) -> tuple[float, float]:
    eps = [v[3] for v in s.points.values()]
    return (min(eps), max(eps))


def _searched(s: _Search) -> tuple[float, float]:
    ps = [s.param(x) for x in s.points]
    return (min(ps), max(ps))


def _range_text(s: _Search) -> str:
    (pmin, pmax), (emin, emax) = _searched(s), _reachable(s)
    if pmin == pmax:
        return f"only {s.name}={pmin:.6g} could be evaluated"
    return (
        f"with {s.name} in [{pmin:.6g}, {pmax:.6g}] the family reaches epsilon in "
        f"[{emin:.6g}, {emax:.6g}]"
    )
