"""``benchmarks.answers_side_by_side``: every call is named once, and a call that fails
in one checkout is reported as text (the other checkout's answers are still printed)."""

from __future__ import annotations

from benchmarks import answers_side_by_side as sbs


def test_calls_are_named_and_callable():
    calls = sbs._calls()
    assert len(calls) >= 15 and all(callable(c) for c in calls.values())


def test_a_failing_call_is_reported_as_text(monkeypatch):
    def broken():
        raise ValueError("not in this checkout")

    monkeypatch.setattr(sbs, "_calls", lambda: {"ok": lambda: (1.0, 2.0), "broken": broken})
    out = sbs.answers()
    assert out["ok"] == [1.0, 2.0]
    assert out["broken"] == "ValueError: not in this checkout"
