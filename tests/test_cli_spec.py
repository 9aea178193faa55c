"""Mechanism specs of the command line (``dpacct._cli_spec``): ``name:key=value,...``
parsed into the library's mechanisms, with suggestions for near misses."""

from __future__ import annotations

import json
import re

import pytest

from dpacct._cli_spec import did_you_mean
from dpacct.accountant import compose, poisson_subsample
from dpacct.cli import main, parse_mechanism_spec
from dpacct.mechanisms import GaussianMechanism


def test_mechanism_specs():
    assert parse_mechanism_spec("gaussian:sigma=2") == GaussianMechanism(sigma=2.0)
    assert parse_mechanism_spec("Gaussian : sigma = 2") == GaussianMechanism(sigma=2.0)
    run = parse_mechanism_spec("gaussian:sigma=1,sample_rate=0.5,count=3")
    assert run == compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.5)], [3])
    with pytest.raises(ValueError, match="given twice"):
        parse_mechanism_spec("gaussian:sigma=1,sigma=2")
    with pytest.raises(ValueError, match="not both"):
        parse_mechanism_spec("gaussian:sigma=1,q=0.1,sample_rate=0.1")


@pytest.mark.parametrize(
    ("spec", "suggestion"),
    [
        ("gausian:sigma=1", "did you mean 'gaussian'?"),
        ("laplase:b=1", "did you mean 'laplace'?"),
        ("randomised_response:p=0.75", "did you mean 'randomizedresponse'?"),
        ("gaussian:sigam=1", "did you mean 'sigma'?"),
        ("laplace:bb=1", "did you mean 'b'?"),
        ("gaussian:sigma=1,stesp=10", "did you mean 'steps'?"),
    ],
)
def test_did_you_mean(spec, suggestion, capsys):
    with pytest.raises(ValueError, match=re.escape(suggestion)):
        parse_mechanism_spec(spec)
    assert main(["compare", "-m", spec]) == 1
    assert suggestion in capsys.readouterr().err


def test_no_suggestion_for_a_name_unlike_any():
    with pytest.raises(ValueError) as info:
        parse_mechanism_spec("zzzz:x=1")
    assert "did you mean" not in str(info.value) and "available: " in str(info.value)


def test_a_spec_takes_the_constructor_names_not_the_stored_fields(capsys):
    # ExponentialMechanism takes epsilon and stores it as epsilon0 (epsilon is a method)
    from dpacct.mechanisms import ExponentialMechanism

    assert main(["compare", "-m", "exponential:epsilon=1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["mechanisms"][0]
    assert row["epsilon"] == [pytest.approx(ExponentialMechanism(epsilon=1.0).epsilon(1e-5))]


def test_did_you_mean_picks_the_close_name_only():
    choices = ["gaussian", "laplace", "randomizedresponse"]
    assert "'gaussian'" in did_you_mean("gausian", choices)
    assert did_you_mean("zzzz", choices) == ""


def test_spec_steps_compose_the_subsampled_step():
    # steps= is count= of a Poisson-subsampled Gaussian: the DP-SGD run of the README
    run = parse_mechanism_spec("gaussian:sigma=1.1,q=0.01,steps=100")
    assert run == compose([poisson_subsample(GaussianMechanism(sigma=1.1), 0.01)], [100])
