"""The per-record overhead benchmark (benchmarks/per_record.py) runs and measures what it
says: its two settings train with the samplers they name, on a small n."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from benchmarks import per_record
from dpacct._opacus_per_record import PerRecordPoissonSampler

pytestmark = [
    pytest.mark.filterwarnings("ignore:Full backward hook:UserWarning"),
    pytest.mark.slow,
]


def test_both_settings_step_and_the_per_record_one_uses_its_sampler(monkeypatch):
    monkeypatch.setattr(per_record, "N", 1024)
    monkeypatch.setattr(per_record, "BATCH", 64)
    spec = per_record.MODELS[0]
    data = per_record._data(spec[1], spec[3])
    ours = per_record._setup("per-record", spec, data)
    peer = per_record._setup("opacus poisson", spec, data)
    sampler = ours["loader"].batch_sampler
    assert isinstance(getattr(sampler, "_inner", sampler), PerRecordPoissonSampler)
    assert per_record._steps_cpu(ours, 20) > 0 and per_record._steps_cpu(peer, 20) > 0
    assert int(ours["per_record"].filter.state().steps.max()) == 20
    assert per_record._refresh_cpu(ours) > 0
