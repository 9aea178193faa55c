"""docs/user_guide/batch_samplers.md: its table and plot numbers stay reproducible.

The page's numbers are written by ``python -m benchmarks.samplers_plot`` into
docs/_static/batch_samplers.json (and the PNG, and the page's table).  These tests
check that the table is the JSON's, and recompute the JSON's row at the table's sigma
through the same public calls (the random-allocation rows in the slow test).
"""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import samplers_plot as sp

DATA = json.loads(sp.JSON.read_text(encoding="utf-8"))
ROW = next(r for r in DATA["rows"] if r["sigma"] == sp.TABLE_SIGMA)
RTOL = 1e-6


def test_the_page_table_is_the_json():
    text = sp.PAGE.read_text(encoding="utf-8")
    table = text.split(sp.TABLE_START + "\n", 1)[1].split("\n" + sp.TABLE_END, 1)[0]
    assert table == sp.page_table(DATA)


def test_the_prose_numbers_are_the_json():
    """The fixed-bin paragraph quotes two numbers of the sigma = 1 row."""
    text = " ".join(sp.PAGE.read_text(encoding="utf-8").split())
    assert f"{ROW['fixed_bins_lower']:.2f} at $\\sigma = 1$" in text
    assert f"per-epoch number ({ROW['balls-in-bins']:.2f})" in text


def test_the_page_shows_the_plot_and_the_index_links_it():
    assert "../_static/batch_samplers.png" in sp.PAGE.read_text(encoding="utf-8")
    assert sp.PNG.stat().st_size > 10_000
    index = (sp.PAGE.parent / "index.md").read_text(encoding="utf-8")
    assert "batch_samplers" in index


def test_the_plotted_sigmas_are_the_scripts():
    assert [r["sigma"] for r in DATA["rows"]] == list(sp.SIGMAS)
    assert DATA["run"] == {
        "dataset_size": sp.DATASET,
        "batch_size": sp.BATCH,
        "epochs": sp.EPOCHS,
        "delta": sp.DELTA,
        "bandmf_bands": sp.BANDS,
    }


def test_the_cheap_rows_recompute():
    """Poisson, shuffling, BandMF and the fixed-bin bracket at the table's sigma, by the
    calls sampler_report and the script make (no random-allocation law: fast)."""
    from dpacct.accountant import random_allocation_lower_epsilon, shuffled_batches
    from dpacct.calibrators import dpsgd_mechanism
    from dpacct.mechanisms import GaussianMechanism, amplified_bandmf

    s, t, e, d = sp.TABLE_SIGMA, sp.DATASET // sp.BATCH, sp.EPOCHS, sp.DELTA
    q = sp.BATCH / sp.DATASET
    shuffled = shuffled_batches(GaussianMechanism(sigma=s), t, e, d)
    live = {
        "poisson": dpsgd_mechanism(s, q, t * e).epsilon(d),
        "shuffle": shuffled.upper,
        "shuffle_lower": shuffled.lower,
        "bandmf": amplified_bandmf(s, t * e, num_bands=sp.BANDS, sample_rate=sp.BANDS * q)
        .epsilon(d),
        "fixed_bins": GaussianMechanism(sigma=s / math.sqrt(e)).epsilon(d),
        "fixed_bins_lower": random_allocation_lower_epsilon(s / math.sqrt(e), t, d),
    }
    for key, value in live.items():
        assert float(value) == pytest.approx(ROW[key], rel=RTOL), key


def test_the_rows_are_ordered_as_the_page_says():
    """What the page states from the numbers: the fixed-bin lower bound is far above
    the per-epoch balls-in-bins upper bound, and shuffling's proved bound above
    Poisson, at every plotted sigma; balls-in-bins is at or below its own upper bound."""
    for r in DATA["rows"]:
        assert r["fixed_bins_lower"] > r["balls-in-bins"]
        assert r["shuffle"] > r["poisson"]
        assert r["balls-in-bins_lower"] <= r["balls-in-bins"]
        assert r["shuffle_lower"] <= r["shuffle"]
        assert r["fixed_bins_lower"] <= r["fixed_bins"]


@pytest.mark.slow
def test_every_row_at_the_tables_sigma_recomputes():
    live = sp.epsilons(sp.TABLE_SIGMA)
    for key, value in live.items():
        assert value == pytest.approx(ROW[key], rel=RTOL), key


def test_the_k2_variant_is_quoted_and_is_the_balls_in_bins_number():
    """The random-allocation paragraph quotes the k = 2 variant (2 of each 2 T steps,
    where random_allocation tries its direct route) at sigma 0.6 and 1, and says it is
    the balls-in-bins number at every plotted sigma (the direct bound does not win)."""
    text = " ".join(sp.PAGE.read_text(encoding="utf-8").split())
    low = next(r for r in DATA["rows"] if r["sigma"] == 0.6)
    assert f"({low['random-allocation_k2']:.3f} at $\\sigma = 0.6$, " in text
    assert f"{ROW['random-allocation_k2']:.3f} at $\\sigma = 1$)" in text
    for r in DATA["rows"]:
        assert r["random-allocation_k2"] == pytest.approx(r["balls-in-bins"], rel=RTOL)
