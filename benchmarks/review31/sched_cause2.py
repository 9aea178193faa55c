# ruff: noqa: E402
import math
import sys
import warnings

warnings.simplefilter("ignore")
from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.pld import block_rules as br
from dpacct.accountant.pld import incremental as inc

mode = sys.argv[1]
if "coarse" in mode:
    inc._history_step = lambda items, budget: br._coarse_step(items)
if "noround" in mode:
    from dpacct.accountant.pld import groups as _g
    from dpacct.accountant.pld import online_direction as _od
    from dpacct.accountant.pld import pld_fft as _pf

    _orig = _pf._spectral_error

    def _no_roundoff(spec, n_, mults, norms, fwd=math.inf):
        return 0.0, _orig(spec, n_, 0, 0.0, 0.0)[1], 0.0

    for _m in (_g, _od, _pf):
        if hasattr(_m, "_spectral_error"):
            _m._spectral_error = _no_roundoff
a = PrivacyAccountant(progress=False)
for k in range(25):
    a.step(noise_multiplier=1.0 + k / 50, sample_rate=0.01, count=10)
print(mode, a.epsilon(1e-9), a.epsilon(6e-9), a.epsilon(1e-5))
