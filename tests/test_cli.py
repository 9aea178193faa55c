"""Tests for the ``dpacct`` command line, run as a newcomer would: in a subprocess.

Every error must be one line on stderr with a non-zero exit status and no traceback;
``--json`` output must agree with the library.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.ledger import PrivacyAccountant
from dpacct.calibrators import noise_multiplier
from dpacct.cli import main, parse_mechanism_spec
from dpacct.mechanisms import GaussianMechanism

ROOT = Path(__file__).resolve().parents[1]


def dpacct(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m dpacct ARGS`` from the repository root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DPACCT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "dpacct", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def assert_one_line_error(out: subprocess.CompletedProcess, *fragments: str) -> None:
    assert out.returncode != 0
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ----------------------------------------------------------------------------------
# the documented commands
# ----------------------------------------------------------------------------------


def test_epsilon_readme_example():
    out = dpacct(
        "epsilon", "--noise-multiplier", "1.1", "--sample-rate", "0.0043",
        "--steps", "14063", "--delta", "1e-5",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("epsilon = ")
    assert "14063 steps" in out.stdout and out.stderr == ""


def test_epsilon_json_agrees_with_the_library():
    out = dpacct(
        "epsilon", "--sigma", "1.1", "-q", "0.0043", "--steps", "1.4063e4",
        "--delta", "1e-5", "--json", "--bounds",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.1), 0.0043)], counts=[14_063])
    assert data["steps"] == 14_063
    assert data["epsilon"] == pytest.approx(run.epsilon(1e-5), rel=1e-12)
    assert data["lower"] <= data["epsilon"] == data["upper"]


def test_calibrate_design_example_json():
    out = dpacct(
        "calibrate", "--epsilon", "3", "--delta", "1e-5", "--sample-rate", "0.01",
        "--steps", "10000", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["solved_for"] == "noise_multiplier"
    assert data["noise_multiplier"] == noise_multiplier(3.0, 1e-5, 0.01, 10_000)
    assert 3.0 * (1 - 1e-3) <= data["epsilon"] <= 3.0


def test_calibrate_text_output(capsys):
    # in-process: the same code path as the console script, faster than a subprocess
    assert main(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("noise multiplier = 3.7306")
    assert "analytic Gaussian" in text


def test_calibrate_solves_for_whatever_is_left_out(capsys):
    assert main(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--sigma", "10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["solved_for"] == "steps" and data["steps"] == 7
    args = ["calibrate", "--epsilon", "3", "--delta", "1e-5", "--sigma", "1", "--steps", "1000"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["solved_for"] == "sample_rate" and 0 < data["sample_rate"] < 1
    assert 3.0 * (1 - 1e-3) <= data["epsilon"] <= 3.0


def test_compare_table_json_and_plot(tmp_path):
    png = tmp_path / "curves.png"
    out = dpacct(
        "compare", "--mechanism", "gaussian:sigma=1", "--mechanism", "gaussian:sigma=2",
        "-m", "gaussian:sigma=2,q=0.05,steps=100", "--plot", str(png),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["mechanism", "eps(d=1e-05)"]
    assert any(line.startswith("gaussian:sigma=2,q=0.05,steps=100") for line in lines)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_json(capsys):
    assert main(["compare", "-m", "gaussian:sigma=1", "--delta", "1e-6", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = data["mechanisms"][0]
    assert row["epsilon"][0] == pytest.approx(GaussianMechanism(sigma=1.0).epsilon(1e-6))
    assert row["rdp"] == pytest.approx([1.0, 4.0, 16.0])  # alpha / (2 sigma^2)


def test_compare_tradeoff_is_a_valid_lower_bound(capsys):
    # the subsampled mechanism's curve (dual of its PLD delta) never exceeds the exact
    # trade-off curve of the full-batch Gaussian it is amplified from, and lies below 1-a
    args = ["compare", "-m", "gaussian:sigma=2,q=0.1,steps=10", "--fpr", "0.05", "0.2", "--json"]
    assert main(args) == 0
    beta = json.loads(capsys.readouterr().out)["mechanisms"][0]["tradeoff"]
    assert 0 <= beta[0] <= 0.95 and 0 <= beta[1] <= 0.8


def test_no_arguments_runs_the_demo(capsys):
    out = dpacct()
    assert out.returncode == 0, out.stderr
    assert "delta = 1e-05" in out.stdout
    assert "gaussian:sigma=1" in out.stdout
    assert "dpacct calibrate" in out.stdout
    assert main(["demo", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["mechanisms"]
    assert rows[0]["epsilon"] == pytest.approx(GaussianMechanism(sigma=1.0).epsilon(1e-5))


def test_ledger_subcommand(tmp_path, capsys):
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=1000)
    path = tmp_path / "ledger.json"
    acct.save(path)
    assert main(["ledger", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["steps"] == 1000
    assert data["epsilon"] == pytest.approx(acct.epsilon(1e-5))
    path.write_text(path.read_text().replace("1000", "10"))
    out = dpacct("ledger", str(path))
    assert_one_line_error(out, "checksum mismatch")
    assert out.returncode == 1


def test_help_exits_cleanly(capsys):
    out = dpacct("--help")
    assert out.returncode == 0 and "calibrate" in out.stdout
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--help"])
    assert info.value.code == 0
    assert "--noise-multiplier" in capsys.readouterr().out


# ----------------------------------------------------------------------------------
# bad input: one line, non-zero exit, no traceback
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments", "code"),
    [
        (
            ["epsilon", "--noise-multiplier", "-1", "--steps", "10", "--delta", "1e-5"],
            ["noise_multiplier must lie in (0, inf)"],
            1,
        ),
        (["epsilon", "--noise-multiplier", "1", "--steps", "10"], ["--delta"], 2),
        (["compare", "-m", "gaussian:b=2"], ["unknown parameter 'b'", "sigma"], 1),
        (["frobnicate"], ["invalid choice"], 2),
    ],
)
def test_bad_input_is_one_line_error(args, fragments, code):
    out = dpacct(*args)
    assert_one_line_error(out, *fragments)
    assert out.returncode == code


@pytest.mark.parametrize(
    ("args", "fragment", "code"),
    [
        (
            ["epsilon", "--sigma", "1", "--steps", "10", "-q", "1.5", "--delta", "1e-5"],
            "sample_rate must lie in (0, 1]",
            1,
        ),
        (["epsilon", "--sigma", "1", "--steps", "abc", "--delta", "1e-5"], "--steps", 2),
        (["epsilon", "--sigma", "1", "--delta", "1e-5"], "--steps --epochs", 2),
        (["calibrate", "--epsilon", "0.01", "--delta", "1e-5", "--sigma", "1"], "out of reach", 1),
        (
            ["calibrate", "--epsilon", "1", "--delta", "2", "--steps", "1"],
            "delta must lie in (0, 1)",
            1,
        ),
        (
            ["calibrate", "--epsilon", "nan", "--delta", "1e-5", "--steps", "1"],
            "epsilon must lie in (0, inf)",
            1,
        ),
        (
            "calibrate --epsilon 1 --delta 1e-5 --sigma 1 -q 0.1 --steps 5".split(),
            "nothing to solve for",
            2,
        ),
        (["compare", "-m", "nosuch:x=1"], "unknown mechanism 'nosuch'", 1),
        (["compare", "-m", "gaussian:sigma=0"], "sigma must lie in (0, inf)", 1),
        (["compare", "-m", "gaussian:sigma"], "key=value", 1),
        (["ledger", "/nonexistent/ledger.json"], "No such file", 1),
    ],
)
def test_bad_input_in_process(args, fragment, code, capsys):
    """The same code path as the console script, without a subprocess per case."""
    assert main(args) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], captured.err
    assert "Traceback" not in captured.err


def test_mechanism_specs():
    assert parse_mechanism_spec("gaussian:sigma=2") == GaussianMechanism(sigma=2.0)
    assert parse_mechanism_spec("Gaussian : sigma = 2") == GaussianMechanism(sigma=2.0)
    run = parse_mechanism_spec("gaussian:sigma=1,sample_rate=0.5,count=3")
    assert run == compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.5)], [3])
    with pytest.raises(ValueError, match="given twice"):
        parse_mechanism_spec("gaussian:sigma=1,sigma=2")
    with pytest.raises(ValueError, match="not both"):
        parse_mechanism_spec("gaussian:sigma=1,q=0.1,sample_rate=0.1")
