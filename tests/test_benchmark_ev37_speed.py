"""Session 30's issue-37 speed experiments: their helper logic (cheap; no subprocess
timing, no callgrind)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.special

from benchmarks import ev37_dpsgd_parts as parts
from benchmarks import ev37_startup_stub as stub


def _side(total, **cats):
    return {"answer": "x", "total": total, "categories": cats}


def test_gaps_per_category_against_the_floor():
    rows = {"floor": _side(100, fft=60, numpy=40),
            "library": _side(185, fft=80, numpy=50, interp=55)}
    got = parts.gaps(rows, "floor")
    assert got["floor"] == {"total": 0, "fft": 0, "numpy": 0}
    assert got["library"] == {"total": 85, "fft": 20, "interp": 55, "numpy": 10}
    with pytest.raises(ValueError, match="floor must be one of"):
        parts.gaps(rows, "nope")


def test_parse_floor_and_variant_names():
    assert parts.parse_floor("1e4:-14:122880, 1e6:-12:61440") == {
        "1e4": (-14, 122_880), "1e6": (-12, 61_440)}
    for bad in ("1e4:-14", "1e4:3:100", "1e5:-14:100", "1e4:-14:1"):
        with pytest.raises(ValueError):
            parts.parse_floor(bad)
    with pytest.raises(ValueError, match="variant must be one of"):
        parts.child_script("nope")
    # every variant but the library's is flagged unsound, and patches before the call
    for name in parts.VARIANTS:
        src = parts.child_script(name)
        compile(src, name, "exec")
        assert (name == "library") != ("(unsound)" in name)
        assert src.index("compose(") > src.index("sys.argv")
        if name != "library":
            assert src.index("CERTIFY_ROUNDOFF = False") < src.index("m.epsilon")


def test_plain_products_patch_convolves():
    """The ``plain products`` variant's stand-in is a convolution (against np.convolve)."""
    ns: dict = {}
    code = parts.VARIANTS["no certificate + plain products (unsound)"]
    import dpacct.accountant.pld.pld_fft as pf

    kept = (pf.CERTIFY_ROUNDOFF, pf._accurate_convolve)
    try:
        exec(code, ns)
        rng = np.random.default_rng(7)
        a, b = rng.random(300), rng.random(170)
        np.testing.assert_allclose(pf._accurate_convolve(a, b), np.convolve(a, b),
                                   rtol=1e-12, atol=1e-12)
        assert pf.CERTIFY_ROUNDOFF is False
    finally:
        pf.CERTIFY_ROUNDOFF, pf._accurate_convolve = kept


@pytest.mark.parametrize("source", [stub.STUB_SPECIAL, stub.STUB_SCIPY], ids=["special", "scipy"])
def test_stub_functions_match_scipy(monkeypatch, source):
    """The stand-ins compute what scipy does (to 1e-12 relative: the experiment times
    the same work), on arrays and scalars, deep in the tails too."""
    monkeypatch.setitem(sys.modules, "scipy.special", sys.modules["scipy.special"])
    monkeypatch.setitem(sys.modules, "scipy", sys.modules["scipy"])
    exec(source, {})
    fake = sys.modules["scipy.special"]
    assert fake is not scipy.special
    x = np.array([-40.0, -31.0, -29.0, -8.0, -1.5, 0.0, 0.3, 2.0, 7.0])
    np.testing.assert_allclose(fake.ndtr(x), scipy.special.ndtr(x), rtol=1e-12, atol=0)
    np.testing.assert_allclose(fake.log_ndtr(x), scipy.special.log_ndtr(x), rtol=1e-10)
    y = np.array([0.0, 0.5, 3.0, 24.0, 26.0, 300.0])
    np.testing.assert_allclose(fake.erfcx(y), scipy.special.erfcx(y), rtol=1e-9)
    p = np.array([1e-300, 1e-12, 1e-5, 0.3, 0.999])
    np.testing.assert_allclose(fake.ndtri(p), scipy.special.ndtri(p), rtol=1e-12)
    assert isinstance(fake.ndtr(0.25), float)
    with pytest.raises(RuntimeError, match=r"stub scipy\.special\.gammaln"):
        fake.gammaln(3.0)
    if source is stub.STUB_SCIPY:
        assert sys.modules["scipy"].special is fake


def test_parse_importtime_top_level_only():
    text = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |     _io\n"
        "import time:       300 |        900 |   numpy.core\n"
        "import time:       200 |       5000 | numpy\n"
        "import time:        50 |         50 | dpacct\n"
        "something else\n"
    )
    assert stub.parse_importtime(text) == [(200, 5000, "numpy"), (50, 50, "dpacct")]


def test_measure_rejects_no_rounds():
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        stub.measure(0)


def test_online_rows_ask_what_they_say():
    """Each online row steps 10 000 times with the decaying sigma (or Opacus' constant)
    and asks 100 / 1 / 0 times (run on a counting stand-in for the accountant)."""
    import textwrap

    from benchmarks import ev37_online_parts as online

    class Counting:
        def __init__(self, *a, **k):
            self.sigmas, self.asked, self.kwargs = [], 0, k

        def step(self, noise_multiplier, sample_rate):
            assert sample_rate == 0.01
            self.sigmas.append(noise_multiplier)

        def epsilon(self, delta):
            assert delta == 1e-5
            self.asked += 1
            return 1.0

        get_epsilon = epsilon

    made = []

    def make(*a, **k):
        made.append(Counting(*a, **k))
        return made[-1]

    want = {"decaying, every 100": 100, "decaying, steps + 1 query": 1,
            "decaying, steps only": 0, "opacus constant, every 100": 100}
    assert set(online.ROWS) == set(want)
    want.update({"decaying, every 100, budget 8": 100, "decaying, every 100, budget 20": 100})
    assert set(online.BUDGET_ROWS) == set(want) - set(online.ROWS) | {
        "opacus constant, every 100"}
    for name, (_, body) in {**online.ROWS, **online.BUDGET_ROWS}.items():
        ns = {"PrivacyAccountant": make, "RDPAccountant": make}
        exec("def run():\n" + textwrap.indent(body, "    "), ns)
        ns["run"]()
        acct = made[-1]
        assert acct.asked == want[name] and len(acct.sigmas) == 10_000
        if "budget" in name:
            assert acct.kwargs["budget_epsilon"] == float(name.split()[-1])
        if name.startswith("decaying"):
            assert acct.sigmas[0] == 2.0 and acct.sigmas[-1] == 2.0 * 0.9999**9999
        else:
            assert set(acct.sigmas) == {1.0}
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        online.run(0)
