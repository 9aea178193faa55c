"""The discrete-sampling benchmark's table: one row a scale, every time a number."""

from __future__ import annotations

import math

from benchmarks import discrete_sampling


def test_table_has_a_row_per_scale_and_finite_times(capsys):
    assert discrete_sampling.main(["--n", "300", "--repeats", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and not line.startswith("| scale") and "---" not in line]
    assert [r.split("|")[1].strip() for r in rows] == list(discrete_sampling.SCALES)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert int(cells[1]) == 300
        assert float(cells[2]) >= 0 and float(cells[3]) >= 0
        assert math.isnan(float(cells[4])) or float(cells[4]) >= 0
