"""Optional extras: import an optional package, or say which extra installs it.

dpacct's core needs numpy and scipy only.  Plotting, the tutorials' data handling and
the integrations need packages that ``pip install dpacct`` does not bring; each is an
*extra* of the distribution (``[project.optional-dependencies]`` in pyproject.toml).
A feature that needs one imports it through :func:`import_optional`, so that a user
without it gets an :class:`ImportError` naming the command that fixes it,
``pip install "dpacct[<extra>]"``, instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "import_optional", "lazy_exports", "missing_extra"]

#: the extras and what each installs (keep in step with pyproject.toml)
EXTRAS = {
    "plot": "matplotlib",
    "examples": "scikit-learn and pandas",
    "opacus": "PyTorch and Opacus",
    "dp_accounting": "Google's dp_accounting",
}


def missing_extra(
    feature: str,
    extra: str,
    error: BaseException | None = None,
    *,
    also: str = "",
    note: str = "",
) -> ImportError:
    """The :class:`ImportError` for ``feature`` when the extra ``extra`` is missing.

    Parameters
    ----------
    feature : str
        What needed the package, e.g. ``"AuditResult.plot()"``.
    extra : str
        The extra that installs it, a key of :data:`EXTRAS`.
    error : BaseException, optional
        The import's own error, quoted at the end.
    also : str, optional
        Packages to install in the same command (e.g. a torch build).
    note : str, optional
        A remark after the command (alternatives, why).

    Returns
    -------
    ImportError
        To be raised by the caller (``raise missing_extra(...) from exc``).

    Raises
    ------
    ValueError
        ``extra`` is not one of dpacct's extras.

    Examples
    --------
    >>> msg = str(missing_extra("AuditResult.plot()", "plot"))
    >>> msg.split(", ")[0]
    'AuditResult.plot() needs matplotlib'
    >>> msg.split(": ")[1]
    'pip install "dpacct[plot]"'
    """
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    msg = (
        f"{feature} needs {EXTRAS[extra]}, which dpacct does not install by default: "
        f'pip install {also + " " if also else ""}"dpacct[{extra}]"'
    )
    if note:
        msg += f" ({note})"
    if error is not None:
        msg += f"; the import failed with: {error}"
    return ImportError(msg)


def import_optional(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise :func:`missing_extra`'s error naming ``extra``.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"matplotlib.pyplot"``.
    extra : str
        The extra that installs it, a key of :data:`EXTRAS`.
    feature : str
        What needs it, for the message.

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    ImportError
        The module (or one it imports) is not installed; the message says
        ``pip install "dpacct[<extra>]"``.
    ValueError
        ``extra`` is not one of dpacct's extras.

    Examples
    --------
    >>> import_optional("math", extra="plot", feature="an example").sqrt(4.0)
    2.0
    >>> try:
    ...     import_optional("no_such_module_dpacct", extra="plot", feature="the example")
    ... except ImportError as exc:
    ...     print(str(exc).split(": ")[1].split(";")[0])
    pip install "dpacct[plot]"
    """
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(feature, extra, exc) from exc


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` that load its names on first use (PEP 562).

    Each layer (``accountant``, ``mechanisms``, ``calibrators``) keeps an ``_EXPORTS``
    map of name to submodule and binds these two hooks, so that ``import dpacct`` loads
    only what a call needs.  A name is imported from ``package.<exports[name]>`` the
    first time it is asked for and then stored in ``namespace`` (later lookups skip the
    hook); a submodule asked for by attribute is imported as an eager package has it.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping
        Exported name -> submodule path relative to the package.
    namespace : dict
        The package's ``globals()``.

    Returns
    -------
    (callable, callable)
        ``__getattr__`` and ``__dir__`` for the package.

    Examples
    --------
    >>> ns = {}
    >>> get, names = lazy_exports("email", {"Parser": "parser"}, ns)
    >>> get("Parser")().parsestr("Subject: hi")["Subject"], "Parser" in ns, names()
    ('hi', True, ['Parser'])
    """

    def __getattr__(name: str) -> Any:
        home = exports.get(name)
        if home is None:
            # a submodule by attribute (``dpacct.calibrators.dpsgd``), as an eager
            # package has it
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
