"""The mechanism registry and the JSON form of mechanisms
(``dpacct.accountant.serialization``): round trips, clear refusals, canonical text and
its checksum, and no zoo import until a zoo type is read."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpacct.accountant import (
    Capabilities,
    Mechanism,
    compose,
    poisson_subsample,
    random_allocation,
    subsample_without_replacement,
)
from dpacct.accountant.serialization import (
    canonical_json,
    from_dict,
    register_mechanism,
    registered_mechanisms,
    sha256_of,
    to_dict,
)
from dpacct.mechanisms import GaussianMechanism, ReplaceOneGaussianMechanism

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5


@dataclasses.dataclass(frozen=True)
class _Unregistered(Mechanism):
    """A test mechanism: pure epsilon-DP with a closed-form RDP curve."""

    eps: float

    declares = Capabilities(rdp=True)

    def _rdp(self, alpha):
        return 0 * alpha + self.eps


def test_serialization_round_trips_the_engine_types():
    mechs = [
        GaussianMechanism(sigma=0.7),
        poisson_subsample(GaussianMechanism(sigma=1.3), 0.02),
        subsample_without_replacement(ReplaceOneGaussianMechanism(sigma=2.0), 0.1),
        compose(
            [poisson_subsample(GaussianMechanism(sigma=1.0), 0.01), GaussianMechanism(5.0)], [9, 2]
        ),
        compose(
            [compose([GaussianMechanism(sigma=3.0)], [2]), GaussianMechanism(sigma=4.0)], [3, 1]
        ),
    ]
    for mech in mechs:
        data = to_dict(mech)
        text = canonical_json(data)
        back = from_dict(json.loads(text))
        assert back == mech and type(back) is type(mech)
        assert back.epsilon(DELTA) == mech.epsilon(DELTA)


def test_random_allocation_round_trips_with_its_direct_flag():
    # issue 39 (c): the class was not registered (to_dict raised TypeError), and the
    # flag decides the answer (2-of-3, delta 1e-5: 2.5224 direct, 2.5473 without)
    for direct in (True, False):
        mech = random_allocation(GaussianMechanism(sigma=2.0), 3, k=2, direct=direct)
        data = json.loads(canonical_json(to_dict(mech)))
        assert data["type"] == "random_allocation" and data["params"]["direct"] is direct
        back = from_dict(data)
        assert back == mech and back.direct is direct
        assert back.epsilon(DELTA) == mech.epsilon(DELTA)
    on, off = (
        random_allocation(GaussianMechanism(sigma=2.0), 3, k=2, direct=d) for d in (True, False)
    )
    assert on.epsilon(DELTA) < off.epsilon(DELTA) - 0.02


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "pure_dp", "params": {"epsilon": -1.0}}, r"'pure_dp'.*epsilon must lie in"),
        ({"type": "pure_dp", "params": {}}, r"'pure_dp'.*missing parameter 'epsilon'"),
        ({"type": "exponential", "params": {"epsilon": 1.0}}, r"missing parameter 'bounded_range'"),
    ],
)
def test_custom_serialisers_reject_bad_parameters(data, message):
    from dpacct.accountant.serialization import from_dict

    with pytest.raises(ValueError, match=message):
        from_dict(data)


def test_registry_refuses_clashes_and_non_mechanisms():
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism("gaussian", _Unregistered)
    with pytest.raises(TypeError, match="Mechanism subclass"):
        register_mechanism("not_a_mechanism", dict)
    with pytest.raises(ValueError, match="unknown mechanism type"):
        from_dict({"type": "no_such_type", "params": {}})
    with pytest.raises(ValueError, match="exactly the keys"):
        from_dict({"type": "gaussian"})


def test_accountant_does_not_import_the_zoo_at_import_time():
    """The engine never imports the zoo: a DP-SGD ledger and the engine's own Gaussian
    are read back without it; a zoo type name is found through the ``dpacct.mechanisms``
    entry-point group (the plugin registry), which imports the zoo then."""
    code = (
        "import sys, dpacct.accountant, dpacct.accountant.ledger, "
        "dpacct.accountant.serialization;"
        "assert 'dpacct.mechanisms' not in sys.modules, 'accountant imported mechanisms';"
        "from dpacct.accountant import PrivacyAccountant;"
        "a = PrivacyAccountant(); a.step(noise_multiplier=1.0, sample_rate=0.01, count=10);"
        "a.epsilon(1e-5);"
        "from dpacct.accountant.serialization import from_dict;"
        "m = from_dict({'type': 'gaussian', 'params': {'sigma': 2.0}});"
        "assert 'dpacct.mechanisms' not in sys.modules, 'reading gaussian imported the zoo';"
        "lap = from_dict({'type': 'laplace', 'params': {'b': 2.0}});"
        "assert 'dpacct.mechanisms' in sys.modules; print(m); print(lap)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["GaussianMechanism(sigma=2.0)", "LaplaceMechanism(b=2.0)"]


def test_registry_lookup_suggests_the_close_type_name():
    from dpacct.accountant.serialization import from_dict

    with pytest.raises(
        ValueError, match=r"unknown mechanism type 'gausian'; did you mean 'gaussian'"
    ):
        from_dict({"type": "gausian", "params": {"sigma": 1.0}})
    with pytest.raises(ValueError) as info:
        from_dict({"type": "qqqqqq", "params": {}})
    assert "did you mean" not in str(info.value)


def test_canonical_json_is_sorted_compact_ascii_and_its_checksum_is_sha256_of_it():
    data = {"b": [1, 2.5], "a": {"y": None, "x": "é"}}
    text = canonical_json(data)
    # written out by hand: sorted keys, no spaces, non-ASCII escaped
    assert text == '{"a":{"x":"\\u00e9","y":null},"b":[1,2.5]}'
    assert json.loads(text) == data
    assert sha256_of(data) == "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()
    assert sha256_of({"a": 1}) != sha256_of({"a": 2})
    with pytest.raises(ValueError):
        canonical_json({"a": float("nan")})


def test_the_registry_lists_the_engine_types_and_a_registered_one():
    names = registered_mechanisms()
    assert isinstance(from_dict({"type": "gaussian", "params": {"sigma": 2.0}}), names["gaussian"])
    register_mechanism("test_serialization_unregistered", _Unregistered, replace=True)
    assert registered_mechanisms()["test_serialization_unregistered"] is _Unregistered
    back = from_dict(to_dict(_Unregistered(eps=0.25)))
    assert back == _Unregistered(eps=0.25)
    # pure 0.25-DP at any order: the RDP curve survives the round trip
    assert float(back.rdp(4.0)) == 0.25


def test_laplace_composition_round_trips_and_bad_dicts_are_refused():
    """Session 38: runs of one Laplace mechanism (``"laplace_composition"``), both
    neighbouring relations, through the registry; bad parameters named."""
    from dpacct.mechanisms import (
        LaplaceComposition,
        LaplaceMechanism,
        ReplaceOneLaplaceMechanism,
    )

    for mech in (LaplaceMechanism(b=20.0), ReplaceOneLaplaceMechanism(b=3.0)):
        run = LaplaceComposition(parts=((mech, 100),))
        data = to_dict(run)
        assert data["type"] == "laplace_composition"
        assert data["params"]["count"] == 100
        back = from_dict(json.loads(json.dumps(data)))
        assert type(back) is LaplaceComposition and back == run
        assert back.epsilon(1e-6) == run.epsilon(1e-6)
    good = to_dict(LaplaceComposition(parts=((LaplaceMechanism(b=2.0), 5),)))
    bad_params = [
        ({"count": 5}, "mechanism"),
        ({**good["params"], "extra": 1}, "mechanism"),
        ({**good["params"], "count": 0}, "count"),
        ({**good["params"], "count": 2.5}, "count"),
        ({**good["params"], "count": True}, "count"),
        ({**good["params"], "mechanism": to_dict(GaussianMechanism(sigma=1.0))}, "Laplace"),
    ]
    for params, word in bad_params:
        with pytest.raises(ValueError, match=word):
            from_dict({"type": "laplace_composition", "params": params})
    with pytest.raises(ValueError, match="b"):
        from_dict({"type": "laplace_composition",
                   "params": {**good["params"], "mechanism": {"type": "laplace",
                                                             "params": {"b": -1.0}}}})
