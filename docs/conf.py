"""Sphinx configuration of the dpacct documentation site.

Build (warning-free is part of CI, see ``.ci/run``)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

Nothing here fetches from the internet at build time: no intersphinx inventories,
notebooks rendered from their stored outputs (never executed), MathJax loaded by the
reader's browser.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the repository root first, so that a checkout without `pip install -e .` documents
# itself (dpacct installed editable resolves to the same files)
sys.path.insert(0, str(ROOT))

import dpacct  # noqa: E402

project = "dpacct"
author = "the dpacct authors"
copyright = "the dpacct authors, Apache-2.0"
release = dpacct.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]
try:  # optional nicety: a copy button on code blocks
    import sphinx_copybutton  # noqa: F401
except ImportError:
    pass
else:
    extensions.append("sphinx_copybutton")

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# -- notebooks ---------------------------------------------------------------------
# The tutorials live in ../notebooks/ (executed by the test suite, saved with their
# outputs).  Sphinx reads sources only inside this folder, so each notebook is linked
# (copied where symlinks are unavailable) into docs/notebooks/ at build time; those
# links are git-ignored and the notebooks are never edited or executed here.
_NB_SRC = ROOT / "notebooks"
_NB_DST = HERE / "notebooks"
_NB_DST.mkdir(exist_ok=True)
for _stale in _NB_DST.glob("*.ipynb"):
    if not (_NB_SRC / _stale.name).exists():
        _stale.unlink()
for _nb in sorted(_NB_SRC.glob("*.ipynb")):
    _link = _NB_DST / _nb.name
    if _link.is_symlink() or _link.exists():
        if _link.is_symlink() and _link.resolve() == _nb.resolve():
            continue
        _link.unlink()
    try:
        os.symlink(os.path.relpath(_nb, _NB_DST), _link)
    except OSError:
        shutil.copy2(_nb, _link)

nb_execution_mode = "off"  # render the stored outputs; the suite executes the notebooks
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- API reference -----------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autoclass_content = "class"
# dpacct.opacus subclasses Opacus' IAccountant, and Opacus needs PyTorch, whose default
# wheels pull in CUDA (gigabytes).  The docs extra does not install them: torch and
# opacus ONLY are mocked here, so the page of dpacct.opacus is built from its own
# docstrings whether or not they are installed (dp_accounting, matplotlib and the rest
# are real imports, installed by the docs extra).
autodoc_mock_imports = ["torch", "opacus"]

numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- nitpicky mode -----------------------------------------------------------------
# Every cross-reference must resolve (see "cross-references by identity" below for how
# docstrings' names find their pages).  Ignored are only the classes that dpacct's
# classes derive from and that have no page here, because no inventory is fetched:
# the standard library's abc.ABC and enum.Enum, and Opacus' IAccountant (mocked above).
nitpick_ignore_regex = [
    ("py:class", r"(abc\.ABC|enum\.Enum)"),
    ("py:class", r"(opacus|torch)\..*"),
]

# -- math ----------------------------------------------------------------------------
# MathJax is loaded by the reader's browser from its CDN (Sphinx's default), nothing
# at build time.  To read a build offline, point DPACCT_DOCS_MATHJAX at a local copy,
# e.g. Debian's libjs-mathjax (MathJax 2):
#   DPACCT_DOCS_MATHJAX="file:///usr/share/javascript/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML"
if os.environ.get("DPACCT_DOCS_MATHJAX"):
    mathjax_path = os.environ["DPACCT_DOCS_MATHJAX"]
    if "MathJax.js" in mathjax_path:  # MathJax 2: process the math inside MyST's pages
        mathjax2_config = {
            "tex2jax": {"processClass": "math", "ignoreClass": "tex2jax_ignore|mathjax_ignore"}
        }

# -- HTML --------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
toc_object_entries_show_parents = "hide"  # "step()", not "PrivacyAccountant.step()"
html_title = f"dpacct {release}"
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "navigation_with_keys": False,
    "secondary_sidebar_items": {"**": ["page-toc"], "comparison": []},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "comparison": [], "design": []}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["dpacct.css"]


# -- cross-references by identity -----------------------------------------------------
# Docstrings name objects the way the code reaches them (``Mechanism.epsilon``,
# ``dpacct.calibrators.dpsgd.noise_multiplier``, a helper of the same module), while
# this site documents each public object once, under its public path
# (``dpacct.accountant.Mechanism.epsilon``).  A reference that Sphinx cannot find by
# name is looked up here *in Python*: the target is imported (relative to the current
# class and module, then to every loaded dpacct module) and, if the object it names is
# documented on this site under another name, the reference links there.  An object
# that exists but is private (no page by design: ``trusted_prefix``, ``_loss_laws``)
# is shown as code without a link.  A name that imports to nothing still warns, so a
# typo in a docstring fails the nitpicky build.
import importlib  # noqa: E402
import inspect  # noqa: E402
import sys as _sys  # noqa: E402

from sphinx.util.nodes import make_refnode  # noqa: E402

_MISSING = object()


def _lookup(path: str):
    """The Python object at dotted ``path`` (a module, then attributes), or _MISSING."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        modname = ".".join(parts[:cut])
        if not modname.startswith("dpacct"):
            return _MISSING
        try:
            obj = importlib.import_module(modname)
        except ImportError:
            continue
        for attr in parts[cut:]:
            if attr in getattr(obj, "__dataclass_fields__", {}):
                return ("field", obj, attr)  # a dataclass field without a class default
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def _candidates(target: str, module: str | None, cls: str | None):
    if module and cls:
        yield f"{module}.{cls}.{target}"
    if module:
        yield f"{module}.{target}"
    yield target
    head = target.split(".")[0]
    for name, mod in sorted(_sys.modules.items()):
        if name.startswith("dpacct") and hasattr(mod, head):
            yield f"{name}.{target}"


def _documented(env) -> dict[int, str]:
    """id(python object) -> the name under which this site documents it."""
    cache = getattr(env, "_dpacct_by_id", None)
    if cache is None or len(cache[0]) != len(env.domains["py"].objects):
        objects = dict(env.domains["py"].objects)
        by_id: dict[int, str] = {}
        for fullname, entry in objects.items():
            if entry.objtype in ("module", "data") or entry.aliased:
                continue
            obj = _lookup(fullname)
            if obj is not _MISSING and not isinstance(obj, tuple):
                by_id.setdefault(id(obj), fullname)
        cache = (objects, by_id)
        env._dpacct_by_id = cache
    return cache[1]


def _resolve_by_identity(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    for path in _candidates(target, node.get("py:module"), node.get("py:class")):
        obj = _lookup(path)
        if obj is _MISSING:
            continue
        if isinstance(obj, tuple):  # a dataclass field: documented with its class
            return contnode
        fullname = _documented(env).get(id(obj))
        if fullname is None:
            return contnode  # exists, private: code, no link
        entry = env.domains["py"].objects[fullname]
        return make_refnode(
            app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, fullname
        )
    return None


# -- optional user-guide pages --------------------------------------------------------
# Pages of the user guide beyond the three users' (user_guide/ledger_files.md, written
# on another branch) are listed in its toctree when they exist: a toctree ":glob:" that
# matches nothing is a warning, so the entry is added here instead.
_OPTIONAL_GUIDE_PAGES = ["ledger_files"]


def _add_optional_pages(app, docname, source):
    if docname != "user_guide/index":
        return
    present = [p for p in _OPTIONAL_GUIDE_PAGES if (HERE / "user_guide" / f"{p}.md").exists()]
    if present:
        source[0] = source[0].replace("analyst\n```", "analyst\n" + "\n".join(present) + "\n```", 1)


def _reread_guide_index(app, env, added, changed, removed):
    return ["user_guide/index"]  # re-read every build: the optional pages may have come


# -- two autodoc gaps ---------------------------------------------------------------
def _data_comment(app, what, name, obj, options, lines):
    """A constant re-exported by a package (``dpacct.accountant.ADD_REMOVE``) has its
    ``#:`` comment in the module that defines it, where autodoc does not look; without
    it autodoc shows the docstring of ``str``.  Take the comment from that module."""
    if what != "data" or not isinstance(obj, (str, int, float)):
        return
    own = inspect.cleandoc(type(obj).__doc__ or "").split()
    if lines and " ".join(lines).split() != own:
        return
    from sphinx.pycode import ModuleAnalyzer

    attr = name.rsplit(".", 1)[1]
    for modname, module in sorted(_sys.modules.items()):
        if not modname.startswith("dpacct") or getattr(module, attr, _MISSING) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # a module without source: look further
            continue
        if ("", attr) in docs:
            lines[:] = list(docs[("", attr)])
            return
    lines[:] = []  # the docstring of str is never the right one


def _own_init_signature(app, what, name, obj, options, signature, return_annotation):
    """A class whose base is mocked (``OpacusAccountant(IAccountant)``, Opacus mocked
    above) shows the mock's ``(*args, **kwargs)``; show its own ``__init__`` instead."""
    if what != "class" or signature != "(*args, **kwargs)" or "__init__" not in vars(obj):
        return None
    sig = inspect.signature(obj.__init__)
    params = [  # without self, and without annotations (numpydoc lists the types)
        p.replace(annotation=inspect.Parameter.empty) for p in list(sig.parameters.values())[1:]
    ]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty)), None


def setup(app):
    app.connect("autodoc-process-docstring", _data_comment, priority=400)  # before numpydoc
    app.connect("autodoc-process-signature", _own_init_signature)
    app.connect("missing-reference", _resolve_by_identity)
    app.connect("source-read", _add_optional_pages)
    app.connect("env-get-outdated", _reread_guide_index)
