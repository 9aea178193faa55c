"""The README-speed and first-call benchmark rows (issue 37) are well formed: every
claim is a runnable expression with a positive claimed time, and the first-call JSON
records carry the fields ``benchmarks.alternate`` compares.  No timing is asserted."""

from __future__ import annotations

import pytest

from benchmarks import random_allocation, readme_speeds


def test_every_readme_claim_is_one_expression_with_a_positive_time():
    names = [name for name, _, _, _ in readme_speeds.CLAIMS]
    assert len(set(names)) == len(names)
    for name, where, claim, code in readme_speeds.CLAIMS:
        assert claim > 0 and where, name
        compile(code, name, "eval")  # the child evaluates it: a statement would fail


@pytest.mark.parametrize(
    ("answer", "fields"),
    [
        (0.45, {"epsilon"}),
        ([0.44, 0.45], {"lower", "upper"}),
        ([15.8, 1.42, 1.42], {"epsilon", "epsilon_balls_in_bins", "epsilon_random_allocation"}),
    ],
)
def test_first_call_records_name_the_answers_alternate_compares(answer, fields):
    runs = [{"answer": answer, "cpu": c, "wall": 2 * c, "mb": 100.0} for c in (0.5, 0.7, 0.6)]
    rec = random_allocation.flat_record({"workload": "w", "new": runs, "old": [], "peer": None})
    assert set(rec) == {"workload", "cpu", "wall", "peak_mb"} | fields
    assert rec["cpu"] == 0.6 and rec["wall"] == 1.2 and rec["peak_mb"] == 100.0


def test_a_claim_is_measured_in_cpu_and_wall_seconds():
    # the README's seconds are wall-clock; batched transforms run on every core, so a
    # row reports both (no timing asserted: only that both clocks are read)
    root = str(readme_speeds._imported_checkout())
    rec = readme_speeds.measure("dp.GaussianMechanism(sigma=1.0).epsilon(1e-5)", 1, root)
    assert set(rec) == {"answer", "first", "best", "first_wall", "best_wall"}, rec
    assert 4.0 < rec["answer"] < 5.0
    assert min(rec["first"], rec["best"], rec["first_wall"], rec["best_wall"]) >= 0.0


def test_the_processor_line_names_the_vector_extension():
    line = readme_speeds._processor()
    assert line.startswith("processor ")
    assert any(v in line for v in ("AVX-512", "AVX2", "no AVX2", "processor ?"))
