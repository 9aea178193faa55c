"""Review 32: Monte Carlo of the exact DP-MF balls-in-bins pair, against a certified delta(1).

``P = N(0, sigma^2 I_n)``, ``Q`` the uniform mixture over the ``k`` bins of ``N(C x_s,
sigma^2 I_n)``, with ``C`` the banded Toeplitz strategy and ``x_s`` the indicator of the steps
``s, s + k, ...``. Written from the pair's definition (docs/theory/dpmf_balls_in_bins.md, "The
pair"), not from the library. Both directions use an explicit generator. An ESTIMATE.

    python benchmarks/review32/dpmf_mc.py
"""

import math

import numpy as np
from scipy.special import logsumexp

N, K, SIGMA, EPS = 26, 9, 2.526842624855865, 1.0
COL = [0.7473940755965004, 0.6111262657968509, 0.26062767124088954]
CERTIFIED = {"main": 0.0017994379423163476, "ws32-dpmf 66d4226": 0.001668407725335089}


def main(samples=2_000_000, chunk=200_000):
    c = np.zeros((N, N))
    for lag, v in enumerate(COL):
        c += v * np.eye(N, k=-lag)
    x = np.zeros((N, K))
    x[np.arange(N), np.arange(N) % K] = 1.0
    modes = c @ x  # column s: C x_s
    half = 0.5 * (modes * modes).sum(0) / SIGMA**2
    rng = np.random.Generator(np.random.PCG64(3244))
    rem, add = [], []
    for _ in range(samples // chunk):
        y = rng.standard_normal((chunk, N)) * SIGMA
        logz = logsumexp(y @ modes / SIGMA**2 - half, axis=1) - math.log(K)  # log dQ/dP at y ~ P
        z = np.exp(logz)
        add.append(np.maximum(1.0 - math.exp(EPS) * z, 0.0))  # E_P[(1 - e^eps Z)_+]
        # remove: E_Q[(1/Z ... )] is E_P[(Z - e^eps)_+]; sample it under Q instead (lower variance)
        s = rng.integers(K, size=chunk)
        yq = rng.standard_normal((chunk, N)) * SIGMA + modes[:, s].T
        lq = logsumexp(yq @ modes / SIGMA**2 - half, axis=1) - math.log(K)
        rem.append(np.maximum(1.0 - np.exp(EPS - lq), 0.0))  # E_Q[(1 - e^eps / Z)_+]
    for name, v in (("remove", np.concatenate(rem)), ("add", np.concatenate(add))):
        m, se = v.mean(), v.std() / math.sqrt(v.size)
        print(f"{name}: delta_hat({EPS}) = {m:.4e} +- {se:.1e}")
    print("certified delta(1):", CERTIFIED)


if __name__ == "__main__":
    main()
