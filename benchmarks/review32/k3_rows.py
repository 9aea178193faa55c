# ruff: noqa: E402
import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
from dpacct.accountant import random_allocation
from dpacct.mechanisms import GaussianMechanism

sigma, T, ep = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0 = time.process_time()
ra = (
    random_allocation(GaussianMechanism(sigma), T, k=3, epochs=ep)
    if ep > 1
    else random_allocation(GaussianMechanism(sigma), T, k=3)
)
out = {"eps6": float(ra.epsilon(1e-6))}
out["cpu_eps"] = time.process_time() - t0
lo, hi = ra.epsilon_bounds(1e-6)
out["lo6"], out["hi6"] = float(lo), float(hi)
out["eps9"] = float(ra.epsilon(1e-9))
out["d"] = [float(x) for x in ra.delta([1.5, 2.0, 2.5, 3.0])]
out["cpu"] = time.process_time() - t0
print(json.dumps(out))
