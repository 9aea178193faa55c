"""``dpacct sampler``: the sampler check on the command line (table, --json, --plot, errors).

The JSON must agree with :func:`dpacct.sampler_report`, whose values are checked against
independent oracles in ``tests/test_sampler.py``; errors follow the CLI's
convention (one line on stderr; 2 for usage errors, 1 for values the library refuses).
"""

from __future__ import annotations

import json

import pytest
from test_cli import assert_one_line_error, in_process

import dpacct as dp
from dpacct.cli import main

# --k 1: the random-allocation row as one allocation per epoch, composed over the two
# epochs.  The default k = epochs = 2 takes the direct k = 2 route, whose law costs about
# 12 s CPU to build at sigma 1, T 100 (once per process); tests/test_sampler.py covers it.
ARGS = ["sampler", "--sigma", "1", "--delta", "1e-5", "--dataset-size", "10000",
        "--batch-size", "100", "--epochs", "2", "--k", "1"]  # fmt: skip


def test_json_agrees_with_the_library(capsys):
    assert main([*ARGS, "--scheme", "shuffle", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    lib = dp.sampler_report(
        1.0, 1e-5, scheme="shuffle", dataset_size=10_000, batch_size=100, epochs=2, k=1
    )
    assert data["scheme"] == "shuffle" and data["steps"] == 200
    assert [r["scheme"] for r in data["rows"]] == [r.scheme for r in lib.rows]
    for row, mine in zip(data["rows"], lib.rows, strict=True):
        assert row["epsilon"] == pytest.approx(mine.epsilon, rel=1e-12, abs=0)
        assert row["matches"] is (mine.scheme == "shuffle")


def test_table_says_which_row_is_the_guarantee(capsys):
    assert main([*ARGS, "--scheme", "poisson"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "your sampler: poisson" in lines[0]
    (poisson,) = [ln for ln in lines if ln.startswith("poisson")]
    assert poisson.endswith("guarantee (your sampler)")
    (shuffle,) = [ln for ln in lines if ln.startswith("shuffle")]
    assert shuffle.endswith("not a guarantee for this run")


def test_plot_writes_an_image(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "schemes.png"
    assert main([*ARGS, "--scheme", "balls-in-bins", "--plot", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plot"] == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_scheme_is_the_librarys_error(capsys):
    out = in_process(
        capsys, "sampler", "--sigma", "1", "--delta", "1e-5", "-q", "0.01", "--scheme", "weighted"
    )
    assert out.returncode == 1
    assert_one_line_error(out, "dpacct sampler: error:", "scheme must be one of", "'weighted'")


def test_missing_description_and_missing_flags(capsys):
    out = in_process(capsys, "sampler", "--sigma", "1", "--delta", "1e-5", "--scheme", "poisson")
    assert out.returncode == 1
    assert_one_line_error(out, "dpacct sampler: error:", "describe the sampler")
    out = in_process(capsys, "sampler", "--sigma", "1", "--delta", "1e-5")
    assert out.returncode == 2
    assert_one_line_error(out, "dpacct sampler: error:", "--scheme")
    out = in_process(capsys, "sampler", "--sigma", "x", "--delta", "1e-5", "--scheme", "poisson")
    assert out.returncode == 2
    assert_one_line_error(out, "not a number")


def test_bad_delta_reaches_the_library(capsys):
    out = in_process(capsys, *ARGS, "--scheme", "shuffle", "--delta", "-1e-5")
    assert out.returncode == 1
    assert_one_line_error(out, "delta")
