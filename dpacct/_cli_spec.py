"""Mechanism specs of the command line: ``NAME[:key=value,key=value...]``.

``NAME`` is a mechanism of the zoo (``gaussian``, ``laplace``, ``randomized_response`` or
``rr``, ..., any class of the serialization registry), the keys are its constructor's
parameters, plus two transformers applied in this order: ``q=`` (or ``sample_rate=``)
for Poisson subsampling and ``steps=`` (or ``count=``) for composition.  A mistyped name
or key gets a "did you mean" from :func:`difflib.get_close_matches`.  The values are
checked by the library (the constructors, :func:`~dpacct.accountant.poisson_subsample`,
:func:`~dpacct.accountant.validation.check_count`), never by a second copy of its rules.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["parse_mechanism_spec"]

_ALIASES = {"rr": "randomizedresponse", "dpsgd": "gaussian"}
_SUBSAMPLE_KEYS = ("q", "sample_rate")
_COUNT_KEYS = ("steps", "count")
_SPEC_RE = re.compile(r"^\s*([A-Za-z][\w\-]*)\s*(?::(.*))?$")


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


def did_you_mean(word: str, choices: list[str] | set[str]) -> str:
    """``" did you mean 'x'?"`` for the closest of ``choices``, or ``""``.

    Examples
    --------
    >>> did_you_mean("gausian", ["gaussian", "laplace"])
    " did you mean 'gaussian'?"
    >>> did_you_mean("zzz", ["gaussian", "laplace"])
    ''
    """
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" did you mean {close[0]!r}?" if close else ""


def _zoo() -> dict[str, type]:
    """Normalised name -> mechanism class, for every public zoo mechanism.

    The classes come from the serialization registry
    (:func:`dpacct.accountant.serialization.registered_mechanisms`, the one table of
    mechanism types); the command line names them by class name, normalised, with or
    without a trailing "Mechanism", plus the few aliases of ``_ALIASES``.  The
    transformers (compose, subsampling) and private classes are not specs.
    """
    from dpacct.accountant.serialization import registered_mechanisms
    from dpacct.accountant.transformers.compose import ComposedMechanism
    from dpacct.accountant.transformers.subsample import (
        PoissonSubsampledMechanism,
        WithoutReplacementSubsampledMechanism,
    )

    transformers = {
        ComposedMechanism,
        PoissonSubsampledMechanism,
        WithoutReplacementSubsampledMechanism,
    }
    out: dict[str, type] = {}
    classes = {c for c in registered_mechanisms().values()}
    for cls in sorted(classes, key=lambda c: c.__name__):
        if cls.__name__.startswith("_") or cls in transformers:
            continue
        key = _norm(cls.__name__)
        out[key] = cls
        if key.endswith("mechanism") and len(key) > len("mechanism"):
            out.setdefault(key[: -len("mechanism")], cls)
    return out


def _parse_value(text: str) -> int | float:
    text = text.strip()
    if re.fullmatch(r"[+-]?\d[\d_]*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


def _constructor_params(cls: type) -> list[str]:
    # the constructor's own signature, not the dataclass fields: a class may store a
    # parameter under another name (ExponentialMechanism takes epsilon, keeps epsilon0)
    import inspect

    params = inspect.signature(cls).parameters.values()
    return [
        p.name
        for p in params
        if p.name != "self"
        and not p.name.startswith("_")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _pop_one(params: dict, keys: tuple[str, str], spec: str) -> tuple[str, int | float] | None:
    """The value of whichever of two synonymous keys was given (not both), with its key."""
    given = [k for k in keys if k in params]
    if len(given) > 1:
        raise ValueError(f"mechanism spec {spec!r}: give {keys[0]} or {keys[1]}, not both")
    return (given[0], params.pop(given[0])) if given else None


def parse_mechanism_spec(spec: str):
    """Build a mechanism from a command-line spec ``NAME[:key=value,...]``.

    Parameters
    ----------
    spec : str
        ``NAME`` of a zoo mechanism, then optionally ``:`` and comma-separated
        ``key=value`` pairs: the constructor's parameters, ``q=`` (Poisson subsampling)
        and ``steps=`` (composition).

    Returns
    -------
    Mechanism
        The mechanism, subsampled and composed as the spec says.

    Raises
    ------
    ValueError
        A malformed spec, an unknown name or key (with a "did you mean"), or a value
        the library rejects (its own message, after the spec).

    Examples
    --------
    >>> parse_mechanism_spec("gaussian:sigma=2")
    GaussianMechanism(sigma=2.0)
    >>> run = parse_mechanism_spec("gaussian:sigma=1.1,q=0.01,steps=100")
    >>> run.parts
    ((PoissonSubsampledMechanism(base=GaussianMechanism(sigma=1.1), sample_rate=0.01), 100),)
    >>> parse_mechanism_spec("gausian:sigma=1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mechanism spec ...: unknown mechanism 'gausian'; did you mean 'gaussian'? ...
    >>> parse_mechanism_spec("gaussian:sigam=1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mechanism spec ...: unknown parameter 'sigam' ...; did you mean 'sigma'? ...
    """
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.accountant.validation import check_count

    m = _SPEC_RE.match(spec)
    if m is None:
        raise ValueError(f"mechanism spec {spec!r} must read NAME[:key=value,...]")
    name, rest = m.group(1), m.group(2)
    zoo = _zoo()
    key = _ALIASES.get(_norm(name), _norm(name))
    cls = zoo.get(key)
    if cls is None:
        names = sorted({k for k in zoo if not k.endswith("mechanism")} | set(_ALIASES))
        raise ValueError(
            f"mechanism spec {spec!r}: unknown mechanism {name!r};"
            f"{did_you_mean(_norm(name), set(zoo) | set(_ALIASES))} "
            f"available: {', '.join(names)}"
        )
    params: dict[str, int | float] = {}
    if rest is not None and rest.strip():
        for item in rest.split(","):
            if "=" not in item:
                raise ValueError(
                    f"mechanism spec {spec!r}: expected key=value, got {item.strip()!r}"
                )
            k, v = item.split("=", 1)
            k = k.strip()
            if k in params:
                raise ValueError(f"mechanism spec {spec!r}: parameter {k!r} given twice")
            try:
                params[k] = _parse_value(v)
            except ValueError as exc:
                raise ValueError(f"mechanism spec {spec!r}: {k}: {exc}") from None
    q = _pop_one(params, _SUBSAMPLE_KEYS, spec)
    count = _pop_one(params, _COUNT_KEYS, spec)
    accepted = _constructor_params(cls)
    for k in params:
        if k not in accepted:
            hint = did_you_mean(k, [*accepted, *_SUBSAMPLE_KEYS, *_COUNT_KEYS])
            raise ValueError(
                f"mechanism spec {spec!r}: unknown parameter {k!r} for {name};{hint} it takes "
                f"{', '.join(accepted)} (and q=, steps=)"
            )
    try:
        mech = cls(**params)
        if q is not None:
            mech = poisson_subsample(mech, q[1])
        if count is not None:
            # the library's count check, under the spec's own key (steps= or count=)
            mech = compose([mech], counts=[check_count(count[1], count[0])])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"mechanism spec {spec!r}: {exc}") from None
    return mech
