"""The Opacus run under a non-Poisson data path (dpacct._opacus_scheme), without training:
the per-step arrays, the run's mechanism against the Gaussian closed form, the summary's
lines."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from oracles import gaussian_epsilon

from dpacct._opacus_data_path import DataPath
from dpacct._opacus_passes import PassLog
from dpacct._opacus_scheme import (
    epsilon_lines,
    per_step,
    scheme_bounds,
    scheme_mechanism,
)
from dpacct.accountant.bracket import DOMINATING_PAIR, MECHANISM, Bracket

SHUFFLE = DataPath("shuffle", "RandomSampler", 10, 0.1, 24)
TAIL = " at delta = 1e-05 (20 steps)"


def test_per_step_repeats_the_history_and_counts_accumulated_batches():
    sigmas, batches = per_step(SHUFFLE, [(1.0, 0.1, 2), (2.0, 0.2, 1), (3.0, 0.25, 1)])
    assert sigmas.tolist() == [1.0, 1.0, 2.0, 3.0]
    assert batches.tolist() == [1, 1, 2, 3]  # ceil(q T): 0.25 * 10 batches is 3


def test_shuffled_passes_are_the_gaussian_of_their_combined_mu():
    """Two whole shuffled passes at noise 2: each record is in one batch per pass, so the
    run is the Gaussian of ``mu = sqrt(2) / 2`` (Dong, Roth & Su 2022, Cor. 3.3); its
    upper end is above the closed form and within 1e-3 of it."""
    history = [(2.0, 0.1, 20)]
    mech = scheme_mechanism(SHUFFLE, history, PassLog())
    assert mech.sigma == pytest.approx(math.sqrt(2.0), rel=1e-12)
    exact = gaussian_epsilon(math.sqrt(2.0) / 2.0, 1e-5)
    lower, upper = scheme_bounds(SHUFFLE, history, PassLog(), 1e-5, need_lower=False)
    assert lower == 0.0 and exact <= upper <= exact * (1 + 1e-3)
    assert scheme_mechanism(SHUFFLE, [], PassLog()) is None


def test_epsilon_lines_say_what_the_number_bounds():
    def unused() -> float:
        raise AssertionError("a Poisson run prints no Poisson comparison")

    assert epsilon_lines(None, (None, 1.25), TAIL, None, unused) == [
        f"epsilon <= 1.25 (add/remove neighbours){TAIL}"
    ]
    note = "Opacus divides by the expected batch size"
    poisson = DataPath("poisson", "UniformWithReplacementSampler", 10, 0.1)
    assert epsilon_lines(poisson, (None, 1.25), TAIL, note, unused) == [
        note,
        f"epsilon <= 1.25 (zero-out neighbours){TAIL}",
    ]
    pair = epsilon_lines(SHUFFLE, Bracket(0.5, 1.25, DOMINATING_PAIR), TAIL, None, lambda: 0.75)
    assert "brackets a dominating pair of the run, not the run itself" in pair[0]
    assert pair[1] == "Poisson sampling would give 0.75: not a guarantee for this run"
    proved = epsilon_lines(SHUFFLE, Bracket(0.5, 1.25, MECHANISM), TAIL, None, lambda: 0.75)
    assert proved[0].startswith("epsilon in [0.5, 1.25] (proved bracket")
    no_lower = epsilon_lines(SHUFFLE, (0.0, 1.25), TAIL, None, lambda: 0.75)
    assert len(no_lower) == 2 and no_lower[0].startswith("epsilon <= 1.25")
