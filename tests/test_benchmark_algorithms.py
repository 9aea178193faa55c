"""The runner of ``python -m benchmarks.algorithms``: discovery, checks, the table.

The topics are replaced by fake modules in a temporary package, so these tests run no
benchmark.
"""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

algorithms = pytest.importorskip("benchmarks.algorithms")
common = pytest.importorskip("benchmarks.algos._common")

GOOD = dict(workflow="fake workflow", metric="error (lower is better)", dpacct=0.25,
            dpacct_spread="IQR 0.2-0.3", peer="fakelib 1.0", peer_value=0.5,
            peer_spread="IQR 0.4-0.6", seeds=7, verdict="better", why="")


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package ``fakealgos`` with two topics, a helper and a failing topic."""
    pkg = tmp_path / "fakealgos"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_helper.py").write_text("raise RuntimeError('helpers are not topics')\n")
    (pkg / "alpha.py").write_text(textwrap.dedent(f"""
        CALLS = []
        def rows(seeds=100, quick=False):
            CALLS.append((seeds, quick))
            return [dict({GOOD!r}, seeds=seeds)]
    """))
    (pkg / "beta.py").write_text(textwrap.dedent(f"""
        def rows(seeds=100, quick=False):
            r = dict({GOOD!r}, workflow="a | b", verdict="worse", why="proof: see x",
                     peer_value=None, peer_spread="")
            return [r]
    """))
    (pkg / "gamma.py").write_text(
        "def rows(seeds=100, quick=False):\n    raise OSError('no data')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "fakealgos"
    for name in [m for m in sys.modules if m == "fakealgos" or m.startswith("fakealgos.")]:
        del sys.modules[name]


def test_discovery_finds_topics_and_skips_helpers(fake_package):
    assert algorithms.discover(fake_package) == ["alpha", "beta", "gamma"]


def test_the_real_package_has_the_moved_topics():
    topics = algorithms.discover()
    for name in ("census_noisy_gd", "noisy_gd_speed", "quantiles", "regression", "theil_sen"):
        assert name in topics
    assert not any(t.startswith("_") for t in topics)


def test_collect_passes_seeds_and_quick_and_turns_a_failure_into_an_error_row(fake_package):
    rows = algorithms.collect(["alpha", "beta", "gamma"], seeds=7, quick=True,
                              package=fake_package)
    assert sys.modules[f"{fake_package}.alpha"].CALLS == [(7, True)]
    assert [r["topic"] for r in rows] == ["alpha", "beta", "gamma"]
    assert rows[0]["seeds"] == 7
    assert rows[2]["verdict"] == algorithms.ERROR
    assert "OSError: no data" in rows[2]["why"]


def test_table_has_one_line_per_row_with_both_sides_and_escaped_cells(fake_package):
    rows = algorithms.collect(["alpha", "beta"], seeds=7, quick=False, package=fake_package)
    lines = algorithms.format_table(rows).splitlines()
    assert len(lines) == 2 + 2
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == list(algorithms.COLUMNS)
    alpha = lines[2]
    assert "| 0.25 [IQR 0.2-0.3] | 0.5 [IQR 0.4-0.6] | fakelib 1.0 | 7 | better |" in alpha
    beta = lines[3]
    assert beta.startswith("| a \\| b |")          # a pipe in a cell does not split it
    assert "| - | fakelib 1.0 |" in beta            # no peer value: a dash, no spread
    assert beta.rstrip().endswith("| worse | proof: see x |")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(verdict="worse", why="  "), "says not why"),
        (dict(verdict="good"), "verdict must be one of"),
        (dict(seeds=0), "seeds must be a positive int"),
    ],
)
def test_malformed_rows_are_refused_with_the_topic_named(change, message):
    with pytest.raises(ValueError, match=message) as info:
        algorithms.check_row(dict(GOOD, **change), "topicname")
    assert "topicname" in str(info.value)


def test_a_row_missing_keys_is_refused_naming_them():
    bad = {k: v for k, v in GOOD.items() if k not in ("why", "peer_spread")}
    with pytest.raises(ValueError, match=r"lacks \['peer_spread', 'why'\]"):
        algorithms.check_row(bad, "t")


def test_main_prints_the_table_writes_json_and_fails_on_an_error_row(
        fake_package, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(algorithms, "PACKAGE", fake_package)
    out_json = tmp_path / "rows.json"
    status = algorithms.main(["--seeds", "4", "--only", "alpha", "--json", str(out_json)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "(4 seeds)" in printed and "fake workflow" in printed
    data = json.loads(out_json.read_text())
    assert data["seeds"] == 4 and [r["topic"] for r in data["rows"]] == ["alpha"]
    assert algorithms.main(["--quick"]) == 1          # gamma fails: exit status 1
    assert "(5 seeds, quick)" in capsys.readouterr().out



def test_main_refuses_an_unknown_topic(capsys):
    with pytest.raises(SystemExit):
        algorithms.main(["--only", "no_such_topic"])
    assert "unknown topic" in capsys.readouterr().err


def test_row_helper_takes_medians_and_iqr_and_judges_direction():
    ours = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    r = common.row("w", "m", ours, "peer 1", ours * 2)
    assert (r["dpacct"], r["peer_value"], r["seeds"]) == (3.0, 6.0, 5)
    assert r["dpacct_spread"] == "IQR 2-4"          # numpy's linear quartiles of 1..5
    tight = 1.0 + 1e-3 * np.linspace(-1.0, 1.0, 101)
    assert common.row("w", "m", tight, "p", tight * 2)["verdict"] == "better"
    assert common.row("w", "m", tight, "p", tight * 2,
                      lower_is_better=False)["verdict"] == "worse"
    assert common.row("w", "m", tight, "p", tight * 1.01)["verdict"] == "parity"
    assert common.row("w", "m", ours, "p not installed", None)["verdict"] == common.NO_PEER


def test_verdict_reads_seed_noise_as_parity():
    """Medians 10 % apart are parity when the seeds' spread makes that noise (two standard
    errors of the difference), a verdict when the spread is small."""
    rng = np.random.default_rng(0)
    wide = rng.normal(1.0, 1.0, size=20)
    shifted = wide * 1.0 + 0.1
    assert common.row("w", "m", shifted, "p", wide, rtol=0.0)["verdict"] == "parity"
    tight = 1.0 + 1e-3 * rng.normal(size=20)
    assert common.row("w", "m", tight + 0.1, "p", tight, rtol=0.0)["verdict"] == "worse"
    # the band by hand: 2 * hypot(se, se) with se = 1.2533 * IQR / 1.349 / sqrt(n)
    q1, q3 = np.quantile(wide, [0.25, 0.75])
    se = 1.2533 * (q3 - q1) / 1.349 / np.sqrt(20)
    assert common.median_se(wide) == pytest.approx(se, rel=1e-12)
    assert common.verdict(1.0, 1.0 + 2 * np.hypot(se, se) * 0.99, rtol=0.0,
                          band=2 * np.hypot(se, se)) == "parity"


# ----------------------------------------------------------------------------------
# the regression and census topics, quick
# ----------------------------------------------------------------------------------


def _check_topic_rows(rows):
    for r in rows:
        algorithms.check_row(r, "topic")
        assert r["verdict"] in (*common.VERDICTS, common.NO_PEER)


def test_california_housing_is_the_tutorials_data():
    """The tutorial prints a non-private training MSE of 0.6053084771039058 and a trivial
    (predict-the-mean) MSE of 1.331547558951559 for its preprocessing."""
    regression = pytest.importorskip("benchmarks.algos.regression")
    X, y = regression.california_housing()
    assert X.shape == (20_640, 8)
    assert np.allclose(np.linalg.norm(X, axis=1), 1.0)
    assert y.min() >= 0.0 and y.max() == 5.0
    theta = np.linalg.solve(X.T @ X, X.T @ y)
    assert np.mean((y - X @ theta) ** 2) == pytest.approx(0.6053084771039058, rel=1e-12)
    assert np.mean((y - y.mean()) ** 2) == pytest.approx(1.331547558951559, rel=1e-12)


class _ZeroNoise:
    """A generator stand-in whose every normal draw is 0 (to read the ridge off)."""

    def normal(self, size=None):
        return 0.0 if size is None else np.zeros(size)


def test_tutorial_adassp_ridge_is_the_tutorials_rule():
    """The re-implemented peer without noise at lambda_min = 0: the ridge is
    1.96 sqrt(d) * 2 * scale (the X^T X multiplier is 2 scale), so theta = X^T y / ridge;
    with lambda_min far above it, no ridge."""
    regression = pytest.importorskip("benchmarks.algos.regression")
    d, scale = 4, 0.5
    XTy = np.arange(1.0, d + 1)
    theta = regression.tutorial_adassp(np.zeros((d, d)), XTy, 0.0, scale, _ZeroNoise())
    assert theta == pytest.approx(XTy / (1.96 * np.sqrt(d) * 2.0 * scale), rel=1e-14)
    big = 1e3 * np.eye(d)
    theta = regression.tutorial_adassp(big, XTy, 1e3, scale, _ZeroNoise())
    assert theta == pytest.approx(XTy / 1e3, rel=1e-14)


def test_regression_topic_quick():
    regression = pytest.importorskip("benchmarks.algos.regression")
    rows = regression.rows(seeds=3, quick=True)
    _check_topic_rows(rows)
    names = " ".join(r["workflow"] for r in rows)
    assert "ridge_constant='tutorial'" in names and "NoisyGD" in names
    if common.peer_version("autodp") is not None:
        calib = [r for r in rows if r["workflow"].startswith("autodp NoisyGD calibration")]
        assert calib and calib[0]["verdict"] == "parity"
    else:
        assert all(r["peer"].endswith("not installed") or "dpacct" in r["peer"]
                   or "not installed" in r["peer"] for r in rows)


def test_census_topic_quick():
    pytest.importorskip("pandas")
    census = pytest.importorskip("benchmarks.algos.census_noisy_gd")
    rows = census.rows(seeds=3, quick=True)
    _check_topic_rows(rows)
    sigma = rows[0]
    assert sigma["dpacct"] < sigma["peer_value"]        # the engine needs less noise


def test_auc_is_the_mann_whitney_statistic():
    census = pytest.importorskip("benchmarks.algos.census_noisy_gd")
    y = np.array([1, 1, -1, -1, 1, -1])
    s = np.array([0.9, 0.4, 0.4, 0.1, 0.8, 0.7])
    # by hand: positive-negative pairs ordered right, ties one half
    pairs = [(p, q) for p in s[y > 0] for q in s[y < 0]]
    expected = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in pairs) / len(pairs)
    assert census.auc(y, s) == pytest.approx(expected, rel=1e-15)
