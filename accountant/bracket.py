"""The ``(lower, upper)`` bracket that ``epsilon_bounds`` returns, and what it brackets.

A bracket is a 2-tuple (it unpacks, indexes and compares like one) with one more field,
:attr:`Bracket.bounds`:

* ``"mechanism"`` -- the true epsilon of the mechanism is inside ``[lower, upper]``;
* ``"dominating pair"`` -- the bracket is that of a pair of distributions proved to
  *dominate* the mechanism (for example the revealed mixture of a truncated-Poisson
  step, :mod:`~dpacct.accountant.transformers.truncated_poisson`).  ``upper`` is then
  still a sound upper bound on the mechanism's epsilon, but ``lower`` bounds only the
  pair's epsilon: the mechanism's may lie below it.

A composition (or any wrapper) brackets only a dominating pair as soon as one of its
parts does (:attr:`~dpacct.accountant.mechanism.Mechanism.bracket_bounds`).
"""

from __future__ import annotations

__all__ = ["DOMINATING_PAIR", "MECHANISM", "Bracket", "bracket_subject"]

#: the true epsilon of the mechanism is inside the bracket
MECHANISM = "mechanism"
#: the bracket is of a dominating pair: only its upper end bounds the mechanism
DOMINATING_PAIR = "dominating pair"


class Bracket(tuple):
    """A certified ``(lower, upper)`` bracket of epsilon, saying what it brackets.

    Parameters
    ----------
    lower, upper : float
        The two ends.
    bounds : {"mechanism", "dominating pair"}, default "mechanism"
        What the bracket is of (module docstring): ``"mechanism"`` when the true
        epsilon is inside, ``"dominating pair"`` when only the upper end bounds the
        mechanism.

    Examples
    --------
    >>> b = Bracket(1.0, 1.25)
    >>> b, b == (1.0, 1.25), b.bounds
    ((1.0, 1.25), True, 'mechanism')
    >>> lo, hi = Bracket(0.75, 0.8, bounds="dominating pair")
    >>> Bracket(0.75, 0.8, bounds="dominating pair")
    Bracket(lower=0.75, upper=0.8, bounds='dominating pair')
    """

    __slots__ = ()

    def __new__(cls, lower: float, upper: float, bounds: str = MECHANISM) -> Bracket:
        if bounds not in (MECHANISM, DOMINATING_PAIR):
            raise ValueError(
                f"bounds must be {MECHANISM!r} or {DOMINATING_PAIR!r}, got {bounds!r}"
            )
        if bounds == DOMINATING_PAIR:  # the field is the class (no per-object storage)
            return _DominatingBracket._make(lower, upper)
        return super().__new__(cls, (lower, upper))

    @property
    def lower(self) -> float:
        """The lower end."""
        return self[0]

    @property
    def upper(self) -> float:
        """The upper end."""
        return self[1]

    @property
    def bounds(self) -> str:
        """``"mechanism"``: the true epsilon is inside the bracket."""
        return MECHANISM

    def __getnewargs__(self) -> tuple[float, float, str]:
        return (self[0], self[1], self.bounds)


class _DominatingBracket(Bracket):
    """A :class:`Bracket` of a dominating pair (its ``bounds`` is ``"dominating pair"``)."""

    __slots__ = ()

    @classmethod
    def _make(cls, lower: float, upper: float) -> _DominatingBracket:
        return tuple.__new__(cls, (lower, upper))

    @property
    def bounds(self) -> str:
        """``"dominating pair"``: only the upper end bounds the mechanism."""
        return DOMINATING_PAIR

    def __repr__(self) -> str:
        return f"Bracket(lower={self[0]!r}, upper={self[1]!r}, bounds={DOMINATING_PAIR!r})"


def bracket_subject(mechanism: object) -> str:
    """What a mechanism's ``epsilon_bounds`` brackets: ``"mechanism"`` or ``"dominating pair"``.

    ``"dominating pair"`` when it sets ``brackets_dominating_pair`` (its PLDs are
    those of a pair that only dominates it; a class flag, or a property where it depends
    on the parameters), or when a mechanism it is built from does:
    the one whose curves it reads (``privacy``), the parts of a composition
    (``parts``), the base of a subsampler or allocation (``base``).

    Examples
    --------
    >>> from dpacct.accountant import GaussianMechanism, TruncatedPoissonGaussianMechanism, compose
    >>> bracket_subject(GaussianMechanism(sigma=1.0))
    'mechanism'
    >>> cut = TruncatedPoissonGaussianMechanism(1.0, 0.01, 10_000, 100)
    >>> bracket_subject(compose([cut, GaussianMechanism(sigma=1.0)], counts=[10, 1]))
    'dominating pair'
    """
    if getattr(mechanism, "brackets_dominating_pair", False):  # a class flag or a property
        return DOMINATING_PAIR
    privacy = getattr(mechanism, "privacy", mechanism)
    if privacy is not mechanism:
        inner = [privacy]
    else:
        inner = [m for m, _ in getattr(mechanism, "parts", ())] + [getattr(mechanism, "base", None)]
    if any(hasattr(m, "bracket_bounds") and m.bracket_bounds == DOMINATING_PAIR for m in inner):
        return DOMINATING_PAIR
    return MECHANISM
