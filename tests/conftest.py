"""Shared fixtures of the test suite."""

from __future__ import annotations

import os

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles.  Neither lets a test's outcome depend on the machine's load: no
# per-example deadline (200 ms by default, which a loaded 2-core machine exceeds) and no
# ``too_slow`` health check (it times the data generation).  Each test's own
# ``@settings(max_examples=...)`` still decides how many examples it draws.
#
# * ``ci`` (the default, what ``python -m pytest -n auto`` runs): a fresh random search on
#   every run, so that CI keeps exploring new examples;
# * ``repro`` (``HYPOTHESIS_PROFILE=repro``): derandomised and without the example
#   database, so that two runs (or old and new code) draw the same examples.
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("repro", settings.get_profile("ci"), derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _mpmath_precision_restored():
    """Undo a test's change of mpmath's global precision when it ends.

    Reference values set ``mpmath.mp.dps`` at module level or inside a test; a test that
    raised it to 60 made a later module's ``findroot`` miss its (dps-scaled) tolerance
    when both ran in one process, so whether a test passed depended on xdist's split.
    """
    prec = mpmath.mp.prec
    yield
    mpmath.mp.prec = prec


@pytest.fixture(scope="session")
def cancer():
    """Breast cancer (scikit-learn's bundled copy), standardised with training
    statistics (treated as public), rows scaled to unit norm (a per-record
    transformation).

    Returns ``(Xtr, Xte, ytr, yte, majority, nonprivate)``: the splits, the test
    accuracy of predicting the majority class, and that of a non-private logistic
    regression.
    """
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    mu, sd = Xtr.mean(0), Xtr.std(0)

    def prep(A):
        A = (A - mu) / sd
        return A / np.linalg.norm(A, axis=1, keepdims=True)

    Xtr, Xte = prep(Xtr), prep(Xte)
    majority = max(yte.mean(), 1 - yte.mean())
    nonprivate = LogisticRegression(C=1e4, max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
    return Xtr, Xte, ytr.astype(float), yte.astype(float), majority, nonprivate


def pytest_configure(config):
    """``DPACCT_TEST_CPU_DIR=DIR``: record every test's CPU seconds (its own and its child
    processes') into ``DIR/<worker>.jsonl`` (``benchmarks/suite_cpu.py``, which also
    reports them: ``python -m benchmarks.suite_cpu DIR``).  Off by default."""
    if os.environ.get("DPACCT_TEST_CPU_DIR") and not config.pluginmanager.has_plugin("suite_cpu"):
        from benchmarks import suite_cpu

        config.pluginmanager.register(suite_cpu, "suite_cpu")
