"""The benchmark of the watch's cost (benchmarks/opacus_watch.py) runs and measures what it says.

No timing is asserted (the machine is shared): only that the three settings are what
the table calls them and that one short run prints its rows.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from benchmarks import opacus_watch  # noqa: E402
from dpacct._opacus_watch import WatchedBatchSampler  # noqa: E402


def test_the_three_settings_are_what_the_table_says():
    _, _, _, watched = opacus_watch._setup("watched", True)
    engine, _, _, unwatched = opacus_watch._setup("unwatched", True)
    _, _, _, peer = opacus_watch._setup("opacus rdp", False)
    assert type(watched.batch_sampler) is WatchedBatchSampler
    assert type(unwatched.batch_sampler) is not WatchedBatchSampler
    assert engine.accountant._watch is None
    assert type(peer.batch_sampler) is not WatchedBatchSampler
    assert opacus_watch._epoch_cpu(opacus_watch._setup("watched", False)) > 0.0


def test_a_short_run_prints_both_rows(capsys):
    threads = torch.get_num_threads()
    try:
        opacus_watch.main(["--rounds", "1", "--epochs", "1"])
    finally:
        torch.set_num_threads(threads)  # main() holds torch to one thread
    out = capsys.readouterr().out
    assert "| Poisson (Opacus default) |" in out and "| shuffle, poisson_sampling=False |" in out
    assert "the watch alone" in out
