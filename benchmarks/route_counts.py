"""Which dpacct modules one ledger question crosses (issue 36, "one way down").

Traces ``epsilon(1e-5)``, ``delta(8.0)`` and ``delta(e)`` at the ledger's own
``e = epsilon(1e-5)`` (asked before tracing: the same question both ways) of a fresh
ledger with :func:`sys.settrace` and prints the number of distinct dpacct modules
whose functions were entered (test files excluded), with ``-v`` their names.  Two
ledgers: one DP-SGD step repeated 10 000 times (the calibrated run of issue 36), and a
40-phase schedule.  Run it against old and new code alike:
``python -m benchmarks.route_counts -v`` (it imports whichever dpacct the interpreter
has).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any


def traced(fn: Callable[[], Any], root: str) -> list[str]:
    """The repository-relative paths of the modules ``fn()`` enters."""
    seen: set[str] = set()

    def tracer(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(root) and name != __file__ and "/tests/" not in name:
                seen.add(os.path.relpath(name, root))

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return sorted(seen)


def main(argv: list[str]) -> None:
    import dpacct
    from dpacct.accountant import PrivacyAccountant

    root = os.path.dirname(os.path.dirname(os.path.abspath(dpacct.__file__)))

    def one_phase() -> Any:
        acct = PrivacyAccountant(progress=False)
        acct.step(noise_multiplier=0.8825405109352097, sample_rate=0.01, count=10_000)
        return acct

    def schedule() -> Any:
        acct = PrivacyAccountant(progress=False)
        for t in range(40):
            acct.step(noise_multiplier=1.0 + t / 100, sample_rate=0.01, count=250)
        return acct

    queries = (
        ("epsilon", lambda a: a.epsilon(1e-5)),
        ("delta", lambda a: a.delta(8.0)),
        ("delta(epsilon(1e-5))", None),
    )
    for name, make in (("one phase x 10000", one_phase), ("40-phase schedule", schedule)):
        for query, call in queries:
            acct = make()
            if call is None:  # the ledger's own epsilon, asked before tracing
                eps = acct.epsilon(1e-5)
                call = lambda a, eps=eps: a.delta(eps)  # noqa: E731
            mods = traced(lambda acct=acct, call=call: call(acct), root)
            label = query if query.endswith(")") else query + "()"
            print(f"{name}: {label} crosses {len(mods)} modules (route {acct.route})")
            if "-v" in argv:
                print("   ", " ".join(mods))


if __name__ == "__main__":
    main(sys.argv[1:])
