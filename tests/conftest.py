"""Shared fixtures of the test suite."""

from __future__ import annotations

import os
from pathlib import Path

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


def _cpu_has_avx512() -> bool:
    try:
        return "avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: the pins below are not known to move there
        return True


#: tests whose pinned floats were recorded on an AVX-512 machine. On an AVX2-only CPU
#: (session 38's machine, AMD EPYC) numpy's SIMD exp / log and the FFTs give other last
#: bits, and these answers move by 1e-16 to 6e-7 relative; e1dbbcf, the landed main,
#: fails the same ones there (checked with numpy 2.1.3, 2.3.5, 2.4.6 and scipy 1.16.3,
#: 1.17.1). AVX-512 CPUs differ among themselves too: session 46's Intel Xeon failed
#: seven of them by 5e-15 to 1.4e-11 relative (review29's T 1e4 upper end
#: 5.192605208116863 against the pinned 5.192605208042421), so those seven now hold
#: their pins to tests/pins.py's 1e-10 relative; the rest stay exact where recorded.
MOVED_WITHOUT_AVX512 = (
    "tests/test_notebooks.py::test_notebook_runs_and_reproduces_its_stored_outputs[05_synthetic_data.ipynb]",
    "tests/test_notebooks.py::test_notebook_runs_and_reproduces_its_stored_outputs[01_quickstart.ipynb]",
    "tests/test_pld_pair.py::test_subsampled_laplace_one_step_regression_and_quadrature",
    "tests/test_pld_pair.py::test_subsampled_laplace_composition_regression_and_independent_pair",
    "tests/test_pld_pair.py::test_random_allocation_regression_and_attack_lower_bound",
    "tests/test_filters.py::test_a_repeated_record_is_certified_to_the_largest_count_that_fits",
    "tests/test_review21_phases.py::test_twenty_random_phases_no_looser_than_main",
    "tests/test_review23_online_mixed_timing.py::"
    "test_mixed_online_ledger_answers_do_not_depend_on_when_it_was_asked",
    "tests/test_review26_oneshot_main_bar.py::"
    "test_oneshot_epsilon_on_large_counts_no_looser_than_mains",
    "tests/test_review29_bounds_lower_exact.py::"
    "test_lower_end_at_or_below_the_exact_epsilon_and_never_below_mains",
    "tests/test_review29_online_near_gaussian.py::"
    "test_online_ledger_brackets_the_gaussian_closed_form",
    "tests/test_review31_sched_small_delta.py::test_phase_ledger_no_looser_than_main_at_small_delta",
    "tests/test_schedule_oneshot.py::test_long_phases_keep_mains_passes",
)


def pytest_collection_modifyitems(config, items):
    if _cpu_has_avx512():
        return
    mark = pytest.mark.xfail(
        strict=False,
        reason="pinned on an AVX-512 machine; moves on AVX2 (conftest MOVED_WITHOUT_AVX512)",
    )
    for item in items:
        if item.nodeid.startswith(MOVED_WITHOUT_AVX512):
            item.add_marker(mark)
