"""Run Python code against a chosen dpacct checkout, in fresh subprocesses.

dpacct's repository maps its folders into one namespace (``accountant/`` installs as
``dpacct.accountant``, and so on: ``[tool.setuptools.package-dir]`` in pyproject.toml), so
putting a checkout on ``PYTHONPATH`` is not enough to import it.  :func:`checkout_env`
writes a ``sitecustomize.py`` into a private directory that installs an import hook
mapping ``dpacct``, ``dpacct.accountant``, ``dpacct.mechanisms`` and
``dpacct.calibrators`` to the checkout's folders, and returns an environment whose
``PYTHONPATH`` starts with that directory.  Every subprocess started with it (and every
subprocess *they* start with the inherited environment, as ``benchmarks.run`` does)
imports dpacct from that checkout, whatever the interpreter's own install says.  One
interpreter can thus run old and new code on the same numpy, scipy and peers.

Byte-code goes to a private cache (``PYTHONPYCACHEPREFIX``) per checkout, written as a
normal install has it (this machine sets ``PYTHONDONTWRITEBYTECODE``, which would make
every start-up compile the library again); the checkouts themselves are never written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: installed package -> the checkout's folder (pyproject.toml's package-dir)
FOLDERS = {
    "dpacct": "dpacct",
    "dpacct.accountant": "accountant",
    "dpacct.mechanisms": "mechanisms",
    "dpacct.calibrators": "calibrators",
}

_HOOK = '''\
"""Written by benchmarks/checkouts.py: import dpacct from {root!r}."""
import importlib.abc
import importlib.util
import os
import sys

_ROOT = {root!r}
_FOLDERS = {folders!r}


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        folder = _FOLDERS.get(name)
        if folder is None:
            return None
        base = os.path.join(_ROOT, folder)
        return importlib.util.spec_from_file_location(
            name, os.path.join(base, "__init__.py"), submodule_search_locations=[base]
        )


sys.meta_path.insert(0, _CheckoutFinder())
'''


def checkout_env(
    root: str | os.PathLike,
    *,
    extra_path: list[str] | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a subprocess that imports dpacct from checkout ``root``.

    Parameters
    ----------
    root : path
        A dpacct repository checkout (the folder holding ``dpacct/`` and ``accountant/``).
    extra_path : list of str, optional
        More ``PYTHONPATH`` entries after the hook's directory (e.g. the checkout whose
        ``benchmarks`` package should run).
    base : dict, optional
        The environment to start from (default: this process's).

    Returns
    -------
    dict
        The environment for :func:`subprocess.run`.
    """
    root = Path(root).resolve()
    if not (root / "dpacct" / "__init__.py").is_file():
        raise ValueError(f"root must be a dpacct checkout (with dpacct/__init__.py), got {root}")
    slug = str(root).strip("/").replace("/", "+")
    hook_dir = Path(tempfile.gettempdir()) / "dpacct-checkout" / slug
    hook_dir.mkdir(parents=True, exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(
        _HOOK.format(root=str(root), folders=FOLDERS), encoding="utf-8"
    )
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(hook_dir), *(extra_path or [])])
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "dpacct-pycache" / slug)
    return env


def old_new_sides(old: str | None) -> dict[str, tuple[str, str]]:
    """``{"old": (root, python), "new": (cwd, this interpreter)}`` from an ``--old
    ROOT:PYTHON`` option (``None``: the new side alone)."""
    import sys

    sides: dict[str, tuple[str, str]] = {}
    if old:
        root, sep, python = old.partition(":")
        if not sep or not root or not python:
            raise ValueError(f"--old must be ROOT:PYTHON, got {old!r}")
        sides["old"] = (root, python)
    sides["new"] = (os.getcwd(), sys.executable)
    return sides


def run_in_checkout(
    root: str, python: str, args: list[str], timeout: float
) -> dict[str, object]:
    """Run ``python -c CHILD ARGS...`` (``args``) in checkout ``root`` with its own dpacct
    (:func:`checkout_env`, one BLAS thread) and read the JSON object the child prints on
    its last line: ``{"status": "ok", **that}``, or ``{"status": "error", "error": [last
    stderr line]}``, or ``{"status": "over T s"}`` past ``timeout`` seconds."""
    import json
    import subprocess

    env = dict(checkout_env(root, extra_path=[root]), OMP_NUM_THREADS="1")
    try:
        res = subprocess.run(
            [python, "-c", *args], cwd=root, env=env, capture_output=True, text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"over {timeout:g} s"}
    if res.returncode != 0:
        return {"status": "error", "error": res.stderr.strip().splitlines()[-1:]}
    return {"status": "ok", **json.loads(res.stdout.strip().splitlines()[-1])}


def write_json(path: str, records: object) -> None:
    """Write ``records`` as JSON to ``path`` atomically (a temporary file, then a rename)."""
    import json

    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(records, fh, indent=1)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
