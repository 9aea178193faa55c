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
    for name in ("noisy_gd_speed", "quantiles", "theil_sen"):
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
    assert r["verdict"] == "better"
    assert common.row("w", "m", ours, "p", ours * 2, lower_is_better=False)["verdict"] == "worse"
    assert common.row("w", "m", ours, "p", ours * 1.01)["verdict"] == "parity"
    assert common.row("w", "m", ours, "p not installed", None)["verdict"] == common.NO_PEER
