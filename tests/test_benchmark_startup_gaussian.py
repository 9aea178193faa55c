"""benchmarks/startup.py's rows, benchmarks/gaussian_answers.py's comparison and
benchmarks/normal_tails_errors.py's measurement (issue 37, session 47), on small inputs:
the logic of the scripts, not their numbers."""

from __future__ import annotations

import math
import os

from benchmarks import gaussian_answers as ga
from benchmarks import normal_tails_errors as nte
from benchmarks import startup


def test_the_in_process_row_reports_the_childs_own_cpu():
    one = startup.run_once("print('inproc=0.125 4.5')\n", dict(os.environ))
    assert one["cpu"] == 0.125 and one["answer"] == "4.5"
    assert "dpacct" in startup.INPROC and "process_time" in startup.INPROC


def test_questions_are_seeded_and_cover_every_kind():
    qs = ga.questions(12, 3)
    assert qs == ga.questions(12, 3)
    assert {q[0] for q in qs} == {"epsilon", "bounds", "delta", "compose", "analytic"}
    assert all(0.02 <= q[1] <= 2000.0 for q in qs)


def test_compare_counts_moves_and_flags_an_unsound_answer():
    sigma, delta = 1.0, 1e-5
    qs = [("epsilon", sigma, delta, 0.0), ("epsilon", sigma, delta, 0.0),
          ("delta", sigma, 1.0, 0.0)]
    truth_d1 = 0.12693673750664397  # the exact delta(1) at sigma 1
    old = [4.377178095681302, 4.377178095681302, 0.12693673750664664]
    new = [4.377178095681302, 4.0, truth_d1 * (1 - 1e-12)]  # too small twice: unsound
    rep = ga.compare(qs, old, new)
    assert rep["equal"] == 1 and rep["differ"] == 2 and rep["lower"] == 2
    assert [row[0] for row in rep["unsound"]] == ["epsilon", "delta"]
    rep = ga.compare(qs[:1], old[:1], [math.nextafter(old[0], math.inf)])
    assert rep["higher"] == 1 and rep["unsound"] == []


def test_the_error_measurement_runs_on_a_few_points():
    import numpy as np

    rng = np.random.default_rng(0)
    e = nte.erfcx_errors(nte.erfcx_points(rng, 40))
    assert 0.0 <= e["ours"] < 32.0 and 0.0 <= e["scipy"] < 32.0
    lg = nte.log_ndtr_errors(nte.log_ndtr_points(rng, 60))
    assert 0.0 <= lg["ours"] < 0.5 and 0.0 <= lg["scipy"] < 0.5
