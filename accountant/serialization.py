"""Mechanisms as plain JSON data: an explicit registry of type names and parameters.

A serialised mechanism is ``{"type": name, "params": {...}}``.  Parameters are JSON
numbers, strings, booleans, lists, or nested serialised mechanisms (a subsampled
mechanism's ``base``, a composition's parts).  Nothing is pickled, and only registered
types are ever constructed when reading data back.

One registry, filled where each class is defined: the engine registers its own types
here (``"gaussian"``, ``"poisson_subsample"``, ``"subsample_without_replacement"``,
``"compose"``, and the declared mechanisms ``"gaussian_dp"``, ``"pure_epsilon"``,
``"epsilon_delta"``; ``"random_allocation"`` is registered by its own module, which
this one imports when a file names it), and every other class registers itself with the
:func:`register_mechanism` decorator in its own module -- the zoo's mechanisms
(``"laplace"``, ``"randomized_response"``, ...) and algorithms (``"noisy_gd"``,
``"ssp"``, ...; the synthesizer's column objects are not JSON values, so writing one
raises a TypeError that says so).  A frozen dataclass whose fields are numbers (or
mechanisms) needs nothing more than its name::

    @register_mechanism("my_mechanism")
    @dataclass(frozen=True)
    class MyMechanism(Mechanism): ...

The engine never imports the modules above it.  Reading a type name that is not
registered yet loads, once, the packages that declare mechanisms in the
``dpacct.mechanisms`` entry-point group of the installed distributions (dpacct
declares its own zoo there; a third-party package can declare its module the same
way), so that their classes have registered themselves before a name is called
unknown.

Examples
--------
>>> from dpacct.mechanisms import GaussianMechanism
>>> from dpacct.accountant import compose, poisson_subsample
>>> run = compose([poisson_subsample(GaussianMechanism(sigma=1.1), 0.01)], counts=[100])
>>> data = to_dict(run)
>>> data["type"], data["params"]["parts"][0]["count"]
('compose', 100)
>>> from_dict(data) == run
True
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .families.custom import EpsilonDeltaMechanism, GaussianDPMechanism, PureEpsilonMechanism
from .families.gaussian import GaussianMechanism
from .families.mixture_gaussian import MixtureOfGaussiansMechanism
from .mechanism import Mechanism
from .transformers.compose import ComposedMechanism, compose
from .transformers.subsample import (
    PoissonSubsampledMechanism,
    WithoutReplacementSubsampledMechanism,
)
from .transformers.truncated_poisson import TruncatedPoissonGaussianMechanism

__all__ = [
    "canonical_json",
    "from_dict",
    "register_mechanism",
    "registered_mechanisms",
    "sha256_of",
    "to_dict",
]

Encoder = Callable[[Any], dict[str, Any]]
Decoder = Callable[[dict[str, Any]], Mechanism]


@dataclasses.dataclass(frozen=True)
class _Entry:
    name: str
    cls: type
    encode: Encoder
    decode: Decoder


_BY_NAME: dict[str, _Entry] = {}
_BY_CLASS: dict[type, _Entry] = {}

#: the entry-point group in which installed packages name the modules that register
#: mechanisms (dpacct names its zoo, ``dpacct.mechanisms``)
PLUGIN_GROUP = "dpacct.mechanisms"
#: plugins that could not be loaded: entry-point name -> reason
_PLUGIN_FAILED: dict[str, str] = {}
#: names of the entry points found (empty: none declared, e.g. a stale install)
_PLUGIN_NAMES: list[str] = []
_PLUGINS_LOADED = False
#: engine types whose modules are heavy to import: type name -> the module (relative to
#: this package) that registers it when imported, loaded when the name is first read
_ENGINE_MODULES: dict[str, str] = {
    "random_allocation": ".transformers.random_allocation",
}


# ----------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------


def register_mechanism(
    name: str,
    cls: type | None = None,
    *,
    encode: Encoder | None = None,
    decode: Decoder | None = None,
    replace: bool = False,
):
    """Register a mechanism class under a type ``name`` for (de)serialisation.

    Parameters
    ----------
    name : str
        The ``"type"`` written to JSON; must be unique.
    cls : type, optional
        A :class:`~dpacct.accountant.mechanism.Mechanism` subclass.  If omitted, returns a
        class decorator.
    encode : callable, optional
        ``mechanism -> params`` (a dict of JSON-ready values, nested mechanisms as
        mechanisms).  Default: the dataclass fields not starting with ``_``.
    decode : callable, optional
        ``params -> mechanism`` (nested mechanisms already decoded).  Default:
        ``cls(**params)``, so the class's own validation runs.
    replace : bool
        Allow re-registering an existing name (default False: a clash raises).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from dpacct.accountant.mechanism import Mechanism
    >>> @register_mechanism("doc_example_pure_dp", replace=True)
    ... @dataclass(frozen=True)
    ... class PureDP(Mechanism):
    ...     eps: float
    >>> to_dict(PureDP(eps=0.5))
    {'type': 'doc_example_pure_dp', 'params': {'eps': 0.5}}
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if cls is None:

        def decorator(klass: type) -> type:
            register_mechanism(name, klass, encode=encode, decode=decode, replace=replace)
            return klass

        return decorator
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise TypeError(f"cls must be a Mechanism subclass, got {cls!r}")
    if not cls.__module__.startswith("dpacct."):
        # a user's class: the installed plugins register first, so that a name they
        # use is refused here (not later, inside the plugin's import)
        _load_plugins_once()
    if encode is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(
                f"{cls.__name__} is not a dataclass: pass encode= (mechanism -> params) "
                "to register it"
            )
        encode = _dataclass_params
    if decode is None:

        def decode(params: dict[str, Any], _cls: type = cls) -> Mechanism:
            return _cls(**params)

    old = _BY_NAME.get(name)
    if old is not None and old.cls is not cls and not replace:
        raise ValueError(
            f"mechanism type {name!r} is already registered for {old.cls.__name__}; "
            "pass replace=True to override"
        )
    if old is not None:
        _BY_CLASS.pop(old.cls, None)
    entry = _Entry(name, cls, encode, decode)
    _BY_NAME[name] = entry
    _BY_CLASS[cls] = entry
    return cls


def registered_mechanisms() -> dict[str, type]:
    """Type name -> class of every registered mechanism (loading the plugins first).

    Examples
    --------
    >>> types = registered_mechanisms()
    >>> types["gaussian"].__name__, types["compose"].__name__, types["laplace"].__name__
    ('GaussianMechanism', 'ComposedMechanism', 'LaplaceMechanism')
    """
    for type_name in _ENGINE_MODULES:
        _load_engine_module(type_name)
    _load_plugins_once()
    return {name: e.cls for name, e in _BY_NAME.items()}


def _load_engine_module(name: str) -> None:
    """Import the engine module that registers type ``name`` on import, if it is one of
    :data:`_ENGINE_MODULES` (loaded lazily: not at this module's import)."""
    module = _ENGINE_MODULES.get(name)
    if module is not None:
        import importlib

        importlib.import_module(module, __package__)


def _load_plugins_once() -> None:
    """Import the modules named in the ``dpacct.mechanisms`` entry-point group, once:
    their classes register themselves on import."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points

    for point in entry_points(group=PLUGIN_GROUP):
        _PLUGIN_NAMES.append(point.name)
        try:
            plugin = point.load()
            # a package that loads its names on first use (PEP 562, as dpacct's zoo
            # does) has registered only what was used so far: load every name it exports
            for name in getattr(plugin, "__all__", ()):
                getattr(plugin, name)
        except Exception as exc:  # a broken plugin must not hide the others
            _PLUGIN_FAILED[point.name] = f"{point.value} cannot be loaded ({exc})"


def _entry_for_class(cls: type) -> _Entry | None:
    return _BY_CLASS.get(cls)


# ----------------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------------


def _dataclass_params(mech: Any) -> dict[str, Any]:
    return {
        f.name: getattr(mech, f.name)
        for f in dataclasses.fields(mech)
        if not f.name.startswith("_") and f.init
    }


def _encode_value(value: Any, where: str) -> Any:
    if isinstance(value, Mechanism):
        return to_dict(value)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral | np.integer):
        return int(value)
    if isinstance(value, numbers.Real | np.floating):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"{where} must be finite to be serialised, got {x!r}")
        return x
    if isinstance(value, list | tuple):
        return [_encode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _encode_value(v, f"{where}.{k}") for k, v in value.items()}
    raise TypeError(
        f"{where} of type {type(value).__name__} cannot be serialised; "
        "register the mechanism with a custom encode="
    )


def _is_mechanism_dict(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"type", "params"}


def _decode_value(value: Any) -> Any:
    if _is_mechanism_dict(value):
        return from_dict(value)
    if isinstance(value, list):
        return [_decode_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _decode_value(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------------
# public conversions
# ----------------------------------------------------------------------------------


def to_dict(mechanism: Mechanism) -> dict[str, Any]:
    """Serialise ``mechanism`` as ``{"type": name, "params": {...}}`` (JSON-ready).

    Raises
    ------
    TypeError
        ``mechanism`` is not a Mechanism, or its class is not registered.

    Examples
    --------
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> to_dict(GaussianMechanism(sigma=2.0))
    {'type': 'gaussian', 'params': {'sigma': 2.0}}
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    entry = _entry_for_class(type(mechanism))
    if entry is None:
        cls = type(mechanism).__name__
        _load_plugins_once()
        raise TypeError(
            f"cannot serialise {cls}: the class is not registered; register it with "
            f"@dpacct.accountant.serialization.register_mechanism('<type name>') on the "
            f"class (a frozen dataclass of numbers needs nothing more). "
            f"Registered: {', '.join(sorted(_BY_NAME))}"
        )
    params = entry.encode(mechanism)
    if not isinstance(params, Mapping):
        raise TypeError(f"the encoder of {entry.name!r} must return a dict, got {params!r}")
    out = {str(k): _encode_value(v, f"{entry.name}.{k}") for k, v in params.items()}
    return {"type": entry.name, "params": out}


def from_dict(data: Mapping[str, Any]) -> Mechanism:
    """Rebuild a mechanism from :func:`to_dict` output, validating its parameters.

    Raises
    ------
    ValueError
        Malformed data, an unknown type name, or parameters the class rejects.

    Examples
    --------
    >>> from_dict({"type": "gaussian", "params": {"sigma": 2.0}})
    GaussianMechanism(sigma=2.0)
    >>> from_dict({"type": "gaussian", "params": {"sigma": -1.0}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid parameters for mechanism type 'gaussian': sigma must lie in (0, inf), ...
    >>> from_dict({"type": "gausian", "params": {"sigma": 2.0}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown mechanism type 'gausian'; did you mean 'gaussian'? registered types: ...
    """
    if not _is_mechanism_dict(data):
        raise ValueError(
            f"a serialised mechanism must be a dict with exactly the keys 'type' and "
            f"'params', got {_short(data)}"
        )
    name, params = data["type"], data["params"]
    if not isinstance(name, str):
        raise ValueError(f"mechanism type must be a string, got {name!r}")
    if name not in _BY_NAME:
        _load_engine_module(name)
    if name not in _BY_NAME:
        _load_plugins_once()
    entry = _BY_NAME.get(name)
    if entry is None:
        broken = "".join(f"; plugin {k!r}: {v}" for k, v in sorted(_PLUGIN_FAILED.items()))
        if not _PLUGIN_NAMES:
            broken += (
                f"; no package declares the {PLUGIN_GROUP!r} entry-point group, so "
                "dpacct's own mechanisms are not found either: reinstall dpacct "
                "(pip install dpacct, or pip install -e . in a checkout)"
            )
        close = difflib.get_close_matches(name, sorted(_BY_NAME), n=1)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown mechanism type {name!r};{hint} registered types: "
            f"{', '.join(sorted(_BY_NAME))}{broken}"
        )
    if not isinstance(params, Mapping):
        raise ValueError(f"params of mechanism type {name!r} must be a dict, got {_short(params)}")
    decoded = {str(k): _decode_value(v) for k, v in params.items()}
    try:
        mech = entry.decode(decoded)
    except KeyError as exc:
        raise ValueError(
            f"invalid parameters for mechanism type {name!r}: missing parameter {exc}"
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid parameters for mechanism type {name!r}: {exc}") from exc
    if not isinstance(mech, Mechanism):
        raise ValueError(f"the decoder of {name!r} returned {type(mech).__name__}, not a Mechanism")
    return mech


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ----------------------------------------------------------------------------------
# canonical form and checksums
# ----------------------------------------------------------------------------------


def canonical_json(data: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, ASCII, NaN and infinity rejected.

    Floats are written with Python's shortest round-trip repr, so reading the text
    back gives the same floats and the same canonical text.

    Examples
    --------
    >>> canonical_json({"b": 1, "a": [0.1, None]})
    '{"a":[0.1,null],"b":1}'
    """
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_of(data: Any) -> str:
    """``"sha256:<hex digest>"`` of :func:`canonical_json` of ``data``.

    Examples
    --------
    >>> sha256_of({"a": 1})[:15]
    'sha256:015abd7f'
    """
    return "sha256:" + hashlib.sha256(canonical_json(data).encode("ascii")).hexdigest()


# ----------------------------------------------------------------------------------
# the engine's own types
# ----------------------------------------------------------------------------------


def _encode_compose(mech: ComposedMechanism) -> dict[str, Any]:
    return {"parts": [{"mechanism": to_dict(m), "count": int(c)} for m, c in mech.parts]}


def _decode_compose(params: dict[str, Any]) -> Mechanism:
    parts = params.get("parts")
    if set(params) != {"parts"} or not isinstance(parts, list) or not parts:
        raise ValueError("compose needs params {'parts': [{'mechanism': ..., 'count': n}, ...]}")
    mechs, counts = [], []
    for i, part in enumerate(parts):
        if not isinstance(part, Mapping) or set(part) != {"mechanism", "count"}:
            raise ValueError(f"parts[{i}] must be a dict with keys 'mechanism' and 'count'")
        mech = part["mechanism"]
        mechs.append(mech if isinstance(mech, Mechanism) else from_dict(mech))
        count = part["count"]
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValueError(f"parts[{i}].count must be an integer >= 1, got {count!r}")
        counts.append(count)
    return compose(mechs, counts=counts)


register_mechanism("gaussian", GaussianMechanism)
# the declared-capability mechanisms whose parameters are numbers (the curve- and
# law-based ones hold functions or law objects, which are not JSON values)
register_mechanism("gaussian_dp", GaussianDPMechanism)
register_mechanism("pure_epsilon", PureEpsilonMechanism)
register_mechanism("epsilon_delta", EpsilonDeltaMechanism)
register_mechanism("poisson_subsample", PoissonSubsampledMechanism)
register_mechanism("subsample_without_replacement", WithoutReplacementSubsampledMechanism)
register_mechanism("compose", ComposedMechanism, encode=_encode_compose, decode=_decode_compose)
# registered here, where the file format lives, rather than where they are defined, so
# that reading a file finds them although the engine loads its modules lazily (issue 37)
register_mechanism("mixture_of_gaussians", MixtureOfGaussiansMechanism)
register_mechanism("truncated_poisson_gaussian", TruncatedPoissonGaussianMechanism)
