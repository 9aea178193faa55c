"""Tests for the ``dpacct`` command line, run as a newcomer would: in a subprocess.

Every error must be one line on stderr with a non-zero exit status and no traceback;
``--json`` output must agree with the library.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
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


def in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """Run ``dpacct ARGS`` through :func:`dpacct.cli.main` in this process.

    The console script and ``python -m dpacct`` are ``sys.exit(main())``, so this is their
    code path (exit status, stdout, stderr) without a new interpreter's start-up (about
    0.7 s CPU each).  A few tests above and below still run the real subprocess.  A
    warning raised on the way is what a user's terminal would show on stderr, but
    pytest's warning capture would swallow it here: every warning (``always``, none
    filtered) is recorded and written into the returned stderr, after the command's own.
    """
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(list(args))
    captured = capsys.readouterr()
    shown = "".join(
        warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line) for w in caught
    )
    return subprocess.CompletedProcess(["dpacct", *args], code, captured.out, captured.err + shown)


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


def test_sample_rate_as_a_fraction_is_the_runs_own_rate(capsys):
    # 0.0043 is 256/60000 rounded (0.8 % higher): the fraction gives the MNIST run's number
    assert main(["epsilon", "-q", "256/60000", "--sigma", "1.1", "--steps", "14063",
                 "--delta", "1e-5", "--json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    run = compose([poisson_subsample(GaussianMechanism(sigma=1.1), 256 / 60_000)], counts=[14_063])
    assert data["sample_rate"] == 256 / 60_000
    assert data["epsilon"] == pytest.approx(run.epsilon(1e-5), rel=1e-12)
    rounded = compose([poisson_subsample(GaussianMechanism(sigma=1.1), 0.0043)], counts=[14_063])
    assert data["epsilon"] < rounded.epsilon(1e-5)


@pytest.mark.parametrize("text", ["1/0", "a/3", "3/x"])
def test_sample_rate_fraction_errors_are_one_line(text):
    out = dpacct("epsilon", "-q", text, "--sigma", "1", "--steps", "10", "--delta", "1e-5")
    assert_one_line_error(out, "--sample-rate", "fraction")


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


def test_ledger_subcommand(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DPACCT_DEBUG", raising=False)
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=1000)
    path = tmp_path / "ledger.json"
    acct.save(path)
    assert main(["ledger", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["steps"] == 1000
    assert data["epsilon"] == pytest.approx(acct.epsilon(1e-5))
    path.write_text(path.read_text().replace("1000", "10"))
    out = in_process(capsys, "ledger", str(path))
    assert_one_line_error(out, "checksum mismatch")
    assert out.returncode == 1


def test_ledger_subcommand_reads_a_signed_ledger_with_its_key_file(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DPACCT_LEDGER_KEY", raising=False)
    monkeypatch.delenv("DPACCT_DEBUG", raising=False)
    secret = "a key of at least sixteen bytes"
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=500)
    path = tmp_path / "ledger.json"
    acct.save(path, key=secret)
    key_file = tmp_path / "key.txt"
    key_file.write_text(secret + "\n")  # an editor's trailing newline is not the key's
    assert main(["ledger", str(path), "--key-file", str(key_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 500
    # without the key, or with another one, the signed file is refused (exit 1, one line)
    assert_one_line_error(in_process(capsys, "ledger", str(path)), "key")
    (tmp_path / "other.txt").write_text("another key, sixteen bytes or more")
    out = in_process(capsys, "ledger", str(path), "--key-file", str(tmp_path / "other.txt"))
    assert_one_line_error(out, "not signed with this key")
    assert secret not in out.stderr
    # an unsigned ledger under a key needs --allow-unsigned, and its checksum still counts
    plain = tmp_path / "plain.json"
    acct.save(plain)
    assert in_process(capsys, "ledger", str(plain), "--key-file", str(key_file)).returncode == 1
    assert main(["ledger", str(plain), "--key-file", str(key_file), "--allow-unsigned"]) == 0
    out = in_process(capsys, "ledger", str(path), "--key-file", str(tmp_path / "missing"))
    assert_one_line_error(out, "--key-file")


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


# ----------------------------------------------------------------------------------
# the silent trap: calibrating without a step count
# ----------------------------------------------------------------------------------


def test_calibrate_without_steps_is_refused_as_in_python(capsys, monkeypatch):
    monkeypatch.delenv("DPACCT_DEBUG", raising=False)
    """Issue 21: no --steps/--epochs used to calibrate ONE step (a third of the noise)."""
    with pytest.raises(TypeError) as info:
        noise_multiplier(3.0, 1e-5, 0.01)
    out = in_process(
        capsys, "calibrate", "--epsilon", "3", "--delta", "1e-5", "--sample-rate", "0.01"
    )
    assert_one_line_error(out, "dpacct calibrate: error:", str(info.value), "--steps", "--epochs")
    assert out.returncode == 2


@pytest.mark.parametrize(
    "argv",
    [
        # every way to leave the count out while solving for the noise multiplier
        "calibrate --epsilon 3 --delta 1e-5 --sample-rate 0.01",
        "calibrate --epsilon 3 --delta 1e-5",
        "calibrate --epsilon 3 --delta 1e-5 --tolerance 0.01",
        "calibrate --advantage 0.1 --sample-rate 0.01",
        "calibrate --advantage 0.1",
        "calibrate --tpr 0.1 --fpr 0.01 -q 0.01",
    ],
)
def test_every_missing_step_count_is_refused(argv, capsys):
    assert main(argv.split()) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("dpacct calibrate: error: one of steps or epochs is required")
    assert "--steps or --epochs" in captured.err


def test_risk_calibration_needs_steps_in_python_too():
    # the attack-risk calibrators have no default step count either
    from dpacct.calibrators.risk import risk_noise_multiplier

    with pytest.raises(TypeError, match="steps"):
        risk_noise_multiplier(sample_rate=0.01, advantage=0.1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        # a risk target with a delta: the delta would be silently ignored
        ("calibrate --advantage 0.1 --delta 1e-5 --sigma 1 --steps 10", "not both"),
        ("calibrate --tpr 0.1 --fpr 0.01 --epsilon 1 --sigma 1 --steps 10", "not both"),
        ("calibrate --epsilon 1 --sigma 1 --steps 10", "give --epsilon and --delta"),
        ("calibrate --delta 1e-5 --sigma 1 --steps 10", "give --epsilon and --delta"),
        # --epochs cannot fix the steps while the sample rate is solved for
        ("calibrate --advantage 0.1 --sigma 1 --epochs 10", "give --steps to solve"),
        ("calibrate --epsilon 1 --delta 1e-5 --sigma 1 --epochs 10", "give --steps to solve"),
        # max_steps has no tolerance: refused rather than ignored
        ("calibrate --epsilon 1 --delta 1e-5 --sigma 1 --tolerance 0.1", "--tolerance"),
        ("calibrate --epsilon 1 --delta 1e-5 --sigma 1 -q 0.1 --steps 5", "nothing to solve"),
    ],
)
def test_calibrate_omissions_and_conflicts_are_usage_errors(argv, fragment, capsys):
    assert main(argv.split()) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpacct calibrate: error: ") and fragment in err, err


def test_calibrate_sample_rate_defaults_to_full_batches_as_in_python(capsys):
    """Without --sample-rate, q = 1 (as noise_multiplier's and max_steps' default): the
    most privacy loss per step, so the answer errs on the safe side."""
    from dpacct.calibrators import max_steps

    assert main("calibrate --epsilon 1 --delta 1e-5 --steps 4 --json".split()) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sample_rate"] == 1.0
    assert data["noise_multiplier"] == noise_multiplier(1.0, 1e-5, steps=4)
    assert main("calibrate --epsilon 1 --delta 1e-5 --sigma 10 --json".split()) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == max_steps(1.0, 1e-5, 10.0) == 7


@pytest.mark.slow
def test_calibrate_tolerance_reaches_the_risk_calibrator(capsys):
    from dpacct.calibrators.risk import risk_max_sample_rate

    argv = "calibrate --advantage 0.1 --sigma 1 --steps 10 --tolerance 0.01 --json".split()
    assert main(argv) == 0
    q = json.loads(capsys.readouterr().out)["sample_rate"]
    assert q == risk_max_sample_rate(noise_multiplier=1.0, steps=10, advantage=0.1, rtol=0.01)


# ----------------------------------------------------------------------------------
# every subcommand refuses what its Python function refuses, with the same message
# ----------------------------------------------------------------------------------

_NP_SCALAR = re.compile(r"np\.\w+\(([^()]*)\)")
# the "--json" flag changes nothing in validation; a saved ledger for the ledger rows
LEDGER_1000 = "LEDGER_1000"
LEDGER_EMPTY = "LEDGER_EMPTY"


def _plain(text: str) -> str:
    """``np.float64(2.0)`` -> ``2.0`` (the command line prints numbers plainly)."""
    return _NP_SCALAR.sub(r"\1", text)


def _reason(text: str) -> str:
    """What is wrong, without the parameter's name: from the first ' must ' on."""
    i = text.find(" must ")
    return text[i:] if i >= 0 else text


def _gaussian_epsilon(sigma, q, steps, delta):
    from dpacct.calibrators.dpsgd import dpsgd_mechanism

    return dpsgd_mechanism(sigma, q, steps).epsilon(delta)


def _epochs_epsilon(sigma, q, epochs, delta):
    from dpacct.calibrators.dpsgd import dpsgd_mechanism, steps_from_epochs

    return dpsgd_mechanism(sigma, q, steps_from_epochs(epochs, q)).epsilon(delta)


def _risk(fn, **kwargs):
    from dpacct.calibrators import risk

    return getattr(risk, fn)(**kwargs)


def _spec(text):
    return parse_mechanism_spec(text)


#: placeholder in a row's argv -> path of a saved ledger (filled by the ``ledgers`` fixture)
_LEDGER_PATHS: dict[str, str] = {}


def _ledger(which, delta):
    return PrivacyAccountant.load(_LEDGER_PATHS[which]).epsilon(delta)


NAN, INF = float("nan"), float("inf")
BIG = 10**30  # written out in full on the command line

# (id, python call, argv, same): same = "exact" (the Python message appears verbatim in
# the CLI's), or "reason" (the same reason, the parameter named as the CLI names it)
SIDE_BY_SIDE = [
    # --- dpacct epsilon == dpsgd_mechanism(sigma, q, steps).epsilon(delta)
    *[
        (
            f"epsilon-sigma={s}",
            lambda s=s: _gaussian_epsilon(float(s), 0.01, 10, 1e-5),
            f"epsilon --sigma {s} -q 0.01 --steps 10 --delta 1e-5",
            "exact",
        )
        for s in ("-1", "0", "nan", "inf")
    ],
    *[
        (
            f"epsilon-q={q}",
            lambda q=q: _gaussian_epsilon(1.0, float(q), 10, 1e-5),
            f"epsilon --sigma 1 -q {q} --steps 10 --delta 1e-5",
            "exact",
        )
        for q in ("0", "-0.1", "1.5", "nan", "inf")
    ],
    *[
        (
            f"epsilon-steps={n}",
            lambda n=n: _gaussian_epsilon(1.0, 0.01, n, 1e-5),
            f"epsilon --sigma 1 -q 0.01 --steps {n} --delta 1e-5",
            "exact",
        )
        for n in (0, -3, 2.5, NAN, INF, BIG)
    ],
    *[
        (
            f"epsilon-epochs={e}",
            lambda e=e: _epochs_epsilon(1.0, 0.1, e, 1e-5),
            f"epsilon --sigma 1 -q 0.1 --epochs {e} --delta 1e-5",
            "exact",
        )
        for e in (-1.0, 0.0, NAN, 0.01)
    ],
    *[
        (
            f"epsilon-delta={d}",
            lambda d=d: _gaussian_epsilon(1.0, 0.01, 10, d),
            f"epsilon --sigma 1 -q 0.01 --steps 10 --delta {d}",
            "exact",
        )
        # 0 = pure DP: the Gaussian has no pure epsilon, and the library says so
        for d in (-1e-5, 0.0, 1.0, 2.0, NAN, INF)
    ],
    # --- dpacct calibrate == noise_multiplier / max_steps / max_sample_rate / risk_*
    *[
        (
            f"calibrate-epsilon={e}",
            lambda e=e: noise_multiplier(e, 1e-5, 0.01, 100),
            f"calibrate --epsilon {e} --delta 1e-5 -q 0.01 --steps 100",
            "exact",
        )
        for e in (-1.0, 0.0, NAN, INF)
    ],
    *[
        (
            f"calibrate-delta={d}",
            lambda d=d: noise_multiplier(1.0, d, 0.01, 100),
            f"calibrate --epsilon 1 --delta {d} -q 0.01 --steps 100",
            "exact",
        )
        for d in (-1e-5, 1.0, NAN)
    ],
    (
        "calibrate-q=1.5",
        lambda: noise_multiplier(1.0, 1e-5, 1.5, 100),
        "calibrate --epsilon 1 --delta 1e-5 -q 1.5 --steps 100",
        "exact",
    ),
    (
        "calibrate-steps=2.5",
        lambda: noise_multiplier(1.0, 1e-5, 0.01, 2.5),
        "calibrate --epsilon 1 --delta 1e-5 -q 0.01 --steps 2.5",
        "exact",
    ),
    (
        "calibrate-steps=0",
        lambda: noise_multiplier(1.0, 1e-5, 0.01, 0),
        "calibrate --epsilon 1 --delta 1e-5 -q 0.01 --steps 0",
        "exact",
    ),
    (
        "calibrate-epochs=-1",
        lambda: noise_multiplier(1.0, 1e-5, 0.01, epochs=-1.0),
        "calibrate --epsilon 1 --delta 1e-5 -q 0.01 --epochs -1",
        "exact",
    ),
    (
        "calibrate-tolerance=0.7",
        lambda: noise_multiplier(1.0, 1e-5, 0.01, 100, rtol=0.7),
        "calibrate --epsilon 1 --delta 1e-5 -q 0.01 --steps 100 --tolerance 0.7",
        "exact",
    ),
    (
        "calibrate-missing-steps",
        lambda: noise_multiplier(1.0, 1e-5, 0.01),
        "calibrate --epsilon 1 --delta 1e-5 -q 0.01",
        "exact",
    ),
    (
        "max_steps-sigma=-1",
        lambda: __import__("dpacct").calibrators.max_steps(1.0, 1e-5, -1.0),
        "calibrate --epsilon 1 --delta 1e-5 --sigma -1",
        "exact",
    ),
    (
        "max_steps-q=2",
        lambda: __import__("dpacct").calibrators.max_steps(1.0, 1e-5, 1.0, 2.0),
        "calibrate --epsilon 1 --delta 1e-5 --sigma 1 -q 2",
        "exact",
    ),
    (
        "max_sample_rate-steps=0",
        lambda: __import__("dpacct").calibrators.max_sample_rate(1.0, 1e-5, 1.0, 0),
        "calibrate --epsilon 1 --delta 1e-5 --sigma 1 --steps 0",
        "exact",
    ),
    (
        "max_sample_rate-sigma=nan",
        lambda: __import__("dpacct").calibrators.max_sample_rate(1.0, 1e-5, NAN, 10),
        "calibrate --epsilon 1 --delta 1e-5 --sigma nan --steps 10",
        "exact",
    ),
    *[
        (
            f"risk-advantage={a}",
            lambda a=a: _risk("risk_noise_multiplier", sample_rate=0.01, steps=10, advantage=a),
            f"calibrate --advantage {a} -q 0.01 --steps 10",
            "exact",
        )
        for a in (-0.1, 0.0, 1.0, 1.5, NAN)
    ],
    (
        "risk-tpr<fpr",
        lambda: _risk("risk_noise_multiplier", sample_rate=0.01, steps=10, tpr=0.005, fpr=0.01),
        "calibrate --tpr 0.005 --fpr 0.01 -q 0.01 --steps 10",
        "exact",
    ),
    (
        "risk-fpr=1",
        lambda: _risk("risk_noise_multiplier", sample_rate=0.01, steps=10, tpr=0.5, fpr=1.0),
        "calibrate --tpr 0.5 --fpr 1 -q 0.01 --steps 10",
        "exact",
    ),
    (
        "risk-tpr-without-fpr",
        lambda: _risk("risk_max_steps", noise_multiplier=1.0, sample_rate=0.01, tpr=0.1),
        "calibrate --tpr 0.1 --sigma 1 -q 0.01",
        "exact",
    ),
    (
        "risk-sigma=0",
        lambda: _risk("risk_max_steps", noise_multiplier=0.0, sample_rate=0.01, advantage=0.1),
        "calibrate --advantage 0.1 --sigma 0 -q 0.01",
        "exact",
    ),
    (
        "risk-steps=2.5",
        lambda: _risk("risk_max_sample_rate", noise_multiplier=1.0, steps=2.5, advantage=0.1),
        "calibrate --advantage 0.1 --sigma 1 --steps 2.5",
        "exact",
    ),
    # --- dpacct compare == parse_mechanism_spec(spec) and its epsilon / rdp / tradeoff
    *[
        (f"compare-spec={s}", lambda s=s: _spec(s), f"compare -m {s}", "exact")
        for s in (
            "gaussian:sigma=-1",
            "gaussian:sigma=nan",
            "gaussian:sigma=inf",
            "laplace:b=0",
            "rr:p=1.5",
            "gaussian:sigma=1,q=0",
            "gaussian:sigma=1,q=1.5",
            "gaussian:sigma=1,steps=0",
            "gaussian:sigma=1,steps=2.5",
            "gaussian:sigma",
            "gausian:sigma=1",
            "gaussian:sigam=1",
            "gaussian:sigma=x",
            "nosuch:x=1",
            "gaussian:sigma=1,sigma=2",
            "gaussian:sigma=1,q=0.1,sample_rate=0.1",
            "9gaussian",
        )
    ],
    *[
        # the spec's steps= is checked under its own name; compose() calls it counts[0]
        (
            f"compare-steps={n}",
            lambda n=n: compose([GaussianMechanism(sigma=1.0)], counts=[n]),
            f"compare -m gaussian:sigma=1,steps={n}",
            "reason",
        )
        for n in (0, -1, 2.5)
    ],
    *[
        (
            f"compare-delta={d}",
            lambda d=d: GaussianMechanism(sigma=1.0).epsilon(d),
            f"compare -m gaussian:sigma=1 --delta {d}",
            "exact",
        )
        for d in (-1e-5, 0.0, 1.0, NAN)
    ],
    *[
        (
            f"compare-alpha={a}",
            lambda a=a: GaussianMechanism(sigma=1.0).rdp([a]),
            f"compare -m gaussian:sigma=1 --alpha {a}",
            "exact",
        )
        for a in (1.0, 0.5, -2.0, NAN)
    ],
    *[
        (
            f"compare-fpr={f}",
            lambda f=f: GaussianMechanism(sigma=1.0).tradeoff([f]),
            f"compare -m gaussian:sigma=1 --fpr {f}",
            "exact",
        )
        for f in (-0.1, 2.0, NAN)
    ],
    # --- dpacct ledger == PrivacyAccountant.load(path).epsilon(delta)
    *[
        (
            f"ledger-delta={d}-{which}",
            lambda d=d, which=which: _ledger(which, d),
            f"ledger {which} --delta {d}",
            "exact",
        )
        for which in (LEDGER_1000, LEDGER_EMPTY)
        for d in (-1e-5, 1.0, 2.0, NAN)
    ],
]


@pytest.fixture
def ledgers(tmp_path, monkeypatch):
    """Paths of a saved ledger with 1000 steps and of an empty one."""
    full = PrivacyAccountant()
    full.step(noise_multiplier=1.0, sample_rate=0.01, count=1000)
    paths = {LEDGER_1000: tmp_path / "full.json", LEDGER_EMPTY: tmp_path / "empty.json"}
    full.save(paths[LEDGER_1000])
    PrivacyAccountant().save(paths[LEDGER_EMPTY])
    for k, v in paths.items():
        monkeypatch.setitem(_LEDGER_PATHS, k, str(v))
    return _LEDGER_PATHS


@pytest.mark.parametrize(
    ("call", "argv", "same"), [c[1:] for c in SIDE_BY_SIDE], ids=[c[0] for c in SIDE_BY_SIDE]
)
def test_cli_refuses_what_python_refuses(call, argv, same, ledgers, capsys):
    """Python raises ValueError/TypeError; the CLI exits non-zero with one line
    ``dpacct CMD: error: ...`` that carries the Python message (numbers printed plainly)."""
    argv = [ledgers.get(a, a) for a in argv.split()]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    python_message = _plain(" ".join(str(info.value).split()))
    code = main(argv)
    captured = capsys.readouterr()
    assert code in (1, 2), captured.err
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith(f"dpacct {argv[0]}: error: "), lines[0]
    assert "np.float" not in lines[0]
    expected = python_message if same == "exact" else _reason(python_message)
    assert expected in lines[0], f"\npython: {python_message}\ncli:    {lines[0]}"


# ----------------------------------------------------------------------------------
# delta = 0 (pure DP) goes to the library as given
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        "compare -m laplace:b=2 --delta 0 --json",
        "compare -m gaussian:sigma=1 --delta 0 --json",
        "epsilon --sigma 1 --steps 10 --delta 0 --json",
        "calibrate --epsilon 1 --delta 0 --steps 1 --json",
    ],
)
def test_delta_zero_is_forwarded_to_the_library(argv, capsys):
    """The CLI has no delta check of its own: it answers what the Python call answers."""
    from dpacct.calibrators.dpsgd import dpsgd_mechanism
    from dpacct.mechanisms import LaplaceMechanism

    python = {
        "compare -m laplace": lambda: LaplaceMechanism(b=2.0).epsilon(0.0),
        "compare -m gaussian": lambda: GaussianMechanism(sigma=1.0).epsilon(0.0),
        "epsilon": lambda: dpsgd_mechanism(1.0, 1.0, 10).epsilon(0.0),
        "calibrate": lambda: noise_multiplier(1.0, 0.0, 1.0, 1),
    }
    call = next(f for k, f in python.items() if argv.startswith(k))
    code = main(argv.split())
    captured = capsys.readouterr()
    try:
        expected = call()
    except (ValueError, TypeError) as exc:
        assert code == 1
        assert " ".join(str(exc).split()) in captured.err
    else:
        assert code == 0, captured.err
        data = json.loads(captured.out)
        got = data["mechanisms"][0]["epsilon"][0] if "mechanisms" in data else data["epsilon"]
        assert got == pytest.approx(expected)


def test_compare_delta_zero_prints_the_pure_epsilon_of_laplace(capsys):
    # Laplace with scale b is (1/b)-DP: epsilon(0) = 1/b = 0.5 (closed form)
    assert main(["compare", "-m", "laplace:b=2", "--delta", "0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["deltas"] == [0.0]
    assert data["mechanisms"][0]["epsilon"][0] == pytest.approx(0.5, rel=1e-9)


def test_delta_zero_for_a_mechanism_without_pure_epsilon_names_it(capsys):
    # the Gaussian has no pure epsilon: the CLI says so in the library's words
    assert main(["compare", "-m", "gaussian:sigma=1", "--delta", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dpacct compare: error:") and "pure_epsilon" in err


# ----------------------------------------------------------------------------------
# plurals
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("records", "words"), [(1, "1 entry, 1 record"), (7, "1 entry, 7 records")]
)
def test_ledger_counts_in_the_right_number(records, words, tmp_path, capsys):
    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=records)
    path = tmp_path / "ledger.json"
    acct.save(path)
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{path}: {words}"
    acct.step(noise_multiplier=2.0, sample_rate=0.01)
    acct.save(path)
    assert main(["ledger", str(path)]) == 0
    assert f": 2 entries, {records + 1} records" in capsys.readouterr().out
    PrivacyAccountant().save(path)
    assert main(["ledger", str(path)]) == 0
    assert ": 0 entries, 0 records" in capsys.readouterr().out


def test_calibrate_steps_note_in_the_right_number(capsys):
    # max_steps = 1 here: "(2 steps would exceed the target)", and the run reads "1 step"
    assert main("calibrate --epsilon 2 --delta 1e-5 --sigma 2".split()) == 0
    out = capsys.readouterr().out
    assert out.startswith("steps = 1\n") and "  1 step of" in out and "(2 steps would" in out


@pytest.mark.parametrize(
    "command", ["demo", "epsilon --sigma 1 --steps 3 --delta 1e-5", "ledger x"]
)
def test_unknown_flags_are_named_after_their_subcommand(command, capsys):
    argv = [*command.split(), "--frobnicate"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dpacct {argv[0]}: error: unrecognized arguments: --frobnicate")
