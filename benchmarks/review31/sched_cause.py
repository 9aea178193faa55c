# ruff: noqa: E402
import sys
import warnings

warnings.simplefilter("ignore")
from dpacct.accountant import PrivacyAccountant
from dpacct.accountant.pld import block_rules as br
from dpacct.accountant.pld import incremental as inc

mode = sys.argv[1]
if mode == "nocap":
    br.SMALL_DELTA = 0.0
elif mode == "coarse":
    inc._history_step = lambda items, budget: br._coarse_step(items)
elif mode == "nocap_coarse":
    br.SMALL_DELTA = 0.0
    inc._history_step = lambda items, budget: br._coarse_step(items)
a = PrivacyAccountant(progress=False)
for k in range(25):
    a.step(noise_multiplier=1.0 + k / 50, sample_rate=0.01, count=10)
print(mode, a.epsilon(1e-9), a.epsilon(3e-9), a.epsilon(6e-9))
