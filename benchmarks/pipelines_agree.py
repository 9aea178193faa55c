"""The two DP-SGD pipelines side by side: the online ledger's fold and the one-shot path.

The row that used to be the suite's slowest test (over 6 minutes under load): 1 500
steps of ``sigma = 1.2 * 0.999^t`` at ``q = 0.01``, folded into
:class:`~dpacct.accountant.pld.incremental.IncrementalEpsilon` in ten batches (each
followed by a query and a hypothetical one), beside the one-shot fast path
(:func:`~dpacct.accountant.pld.schedule_fast.fast_epsilon_bounds`) on the same loss
grid, with every coordinate rounded and with the constant q kept exact, and the
certified lower end of the unrounded steps at a four times finer step.  The test
(tests/test_incremental.py) checks the same relations on a few short schedules.

Run from the repository root::

    python -m benchmarks.pipelines_agree [--steps 1500]

Prints each answer, its CPU seconds (``time.process_time``) and the ratios the test
asserts: ``online / one-shot`` and ``online / same cells`` at most ``1 + 1e-4``,
``lower <= online``.
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args(argv)

    from dpacct.accountant.pld.incremental import IncrementalEpsilon
    from dpacct.accountant.pld.schedule import FAST_STEP, round_schedule
    from dpacct.accountant.pld.schedule_fast import fast_epsilon_bounds

    delta = 1e-5
    sched = [(1.2 * 0.999**t, 0.01, 1) for t in range(args.steps)]
    batch = max(args.steps // 10, 1)
    rows = []

    t0 = time.process_time()
    inc = IncrementalEpsilon(delta)
    for b in range(0, len(sched), batch):
        inc.fold(sched[b : b + batch])
        before = inc.epsilon()
        more = inc.epsilon([(0.5, 0.02, 10)])
        assert more > before and inc.epsilon() == before
    online = inc.epsilon()
    rows.append(("online fold (10 batches, queried)", online, time.process_time() - t0))

    def timed(label, fn):
        t = time.process_time()
        value = fn()
        rows.append((label, value, time.process_time() - t))
        return value

    one_shot = timed(
        "one-shot, every coordinate rounded",
        lambda: fast_epsilon_bounds(
            round_schedule(sched), delta, step=FAST_STEP, lower=False, factor=1
        )[1],
    )
    same = timed(
        "one-shot, constant q exact (same cells)",
        lambda: fast_epsilon_bounds(
            round_schedule(sched, exact_values=64), delta, step=FAST_STEP, lower=False, factor=1
        )[1],
    )
    lower = timed(
        "certified lower end, step / 4",
        lambda: fast_epsilon_bounds(
            round_schedule(sched, upper=False), delta, step=FAST_STEP / 4, upper=False
        )[0],
    )
    print(f"{args.steps} steps of 1.2 * 0.999^t, q 0.01, delta {delta:g}")
    print(f"{'answer':42s} {'epsilon':>14s} {'cpu s':>8s}")
    for label, value, seconds in rows:
        print(f"{label:42s} {value:14.9f} {seconds:8.2f}")
    print(f"online / one-shot   = {online / one_shot:.9f} (at most 1 + 1e-4)")
    print(f"online / same cells = {online / same:.9f} (at most 1 + 1e-4)")
    print(f"lower <= online: {lower <= online}; carried error {inc.remove.carried!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
