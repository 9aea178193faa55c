"""benchmarks/dpsgd_floor.py: the recorded transforms are the call's, recording leaves
the answer and numpy as they were, and the replay runs exactly those transforms."""

from __future__ import annotations

import json
import textwrap
from collections import Counter

import numpy as np

from benchmarks.dpsgd_floor import categories, record, replay_script


def test_record_keeps_the_answer_and_restores_numpy(tmp_path):
    """q 0.01, sigma 1.1, T 100: the recorded epsilon is the library's (a fresh,
    unrecorded mechanism), every transform length is 5-smooth, forward and inverse
    transforms both occur, and numpy.fft is itself again afterwards."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    before = (np.fft.rfft, np.fft.irfft)
    got = record(0.01, 1.1, 100)
    assert (np.fft.rfft, np.fft.irfft) == before
    fresh = compose([poisson_subsample(GaussianMechanism(sigma=1.1), sample_rate=0.01)],
                    counts=[100])
    assert got["answer"] == fresh.epsilon(1e-5)
    kinds = Counter(k for k, _, _ in got["calls"])
    assert kinds["r"] > 0 and kinds["i"] > 0
    for _, n, _ in got["calls"]:
        m = n
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        assert m == 1, n
    # the replay makes one transform per recorded call
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(got["calls"][:6]))
    imports, body = replay_script(str(path))
    scope: dict = {}
    exec(imports + "def run():\n" + textwrap.indent(body, "    "), scope)
    assert scope["run"]() == (6, None)


def test_categories_sort_instructions_by_library():
    costs = Counter({
        "void pocketfft::detail::rfftp<double>::exec<double>(double*, double, bool) const": 5,
        "__ieee754_exp_fma": 3, "DOUBLE_add_X86_V3": 2, "_PyEval_EvalFrameDefault'2": 7,
        "__memcpy_avx_unaligned_erms": 1, "xsf::cephes::erfc(double)": 4, "mystery": 11,
    })
    assert categories(costs) == {
        "other": 11, "Python interpreter": 7, "pocketfft (transforms, plans)": 5,
        "scipy.special": 4, "libm (exp, log, pow)": 3, "numpy (loops, dispatch, arrays)": 2,
        "libc (memcpy, memset, malloc)": 1,
    }
