"""The seeded random phase schedules that ``sched_rows2.py`` and ``sched_rows3.py`` feed
to the ledger (one generator, so both scripts draw the same kind of schedule)."""

import numpy as np


def seeded_phase_schedule(rng: np.random.Generator, max_phases: int):
    """One schedule: 3 to ``max_phases`` phases of 2-20 steps each, sigma uniform in a
    random sub-range of [0.6, 3], q log-uniform in a random sub-range of [5e-4, 0.05].

    Returns ``(schedule, shape)``: the ``(sigma, q, steps)`` triples and the drawn
    parameters ``[phases, steps, sigma_lo, sigma_hi, q_lo, q_hi]``.
    """
    nph = int(rng.integers(3, max_phases))
    k = int(rng.integers(2, 21))
    lo_s, hi_s = sorted(rng.uniform(0.6, 3.0, 2))
    lq = sorted(rng.uniform(np.log(5e-4), np.log(0.05), 2))
    sig = rng.uniform(lo_s, hi_s, nph)
    q = np.exp(rng.uniform(lq[0], lq[1], nph))
    sched = [(float(a), float(b), k) for a, b in zip(sig, q, strict=True)]
    shape = [nph, k, float(lo_s), float(hi_s), float(np.exp(lq[0])), float(np.exp(lq[1]))]
    return sched, shape
