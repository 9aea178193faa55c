"""``dpacct sampler``: the sampler check before training, as a table, JSON or a plot.

The numbers are :func:`~dpacct.calibrators.sampler_report`'s; every value goes to it as
given, so the command line accepts and refuses what the Python call does.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from dpacct._cli_output import emit_json, json_float

_FEATURE = "dpacct sampler --plot"


def add_parser(sub: Any, real: Callable[[str], float], count: Callable[[str], Any]) -> None:
    """Add the ``sampler`` subcommand to ``sub`` (argparse subparsers)."""
    p = sub.add_parser(
        "sampler",
        help="check the sampler before training: epsilon of each batching scheme side by side",
        description="Epsilon of the same DP-SGD run under each batching scheme (Poisson, "
        "shuffled fixed-size batches, balls-in-bins, random allocation, fixed-size batches "
        "without replacement) and which one your sampler is: only that row is a guarantee "
        "for your run.  Describe the sampler by --sample-rate, or by --dataset-size and "
        "--batch-size.",
    )
    p.add_argument(
        "--noise-multiplier",
        "--sigma",
        dest="noise_multiplier",
        type=real,
        required=True,
        metavar="SIGMA",
        help="noise standard deviation over the clipping norm",
    )
    p.add_argument("--delta", type=real, required=True, help="target delta, e.g. 1e-5")
    p.add_argument(
        "--scheme",
        required=True,
        help="your sampler: poisson, shuffle, balls-in-bins, random-allocation or fixed-size",
    )
    p.add_argument(
        "--sample-rate", "-q", dest="sample_rate", type=real, metavar="Q", help="Poisson rate"
    )
    p.add_argument("--dataset-size", dest="dataset_size", type=count, metavar="N")
    p.add_argument("--batch-size", dest="batch_size", type=count, metavar="B")
    p.add_argument("--epochs", type=count, default=1, help="passes over the data (default 1)")
    p.add_argument(
        "--k",
        type=count,
        help="random allocation: each record in k steps of k epochs (default: the epochs)",
    )
    p.add_argument("--plot", metavar="PATH", help="write a bar chart (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_sampler)


def cmd_sampler(args: argparse.Namespace) -> int:
    """Run ``dpacct sampler`` (table, ``--json``, ``--plot``)."""
    from dpacct.accountant.extras import import_optional
    from dpacct.calibrators.sampler import sampler_report

    report = sampler_report(
        args.noise_multiplier,
        args.delta,
        scheme=args.scheme,
        sample_rate=args.sample_rate,
        dataset_size=args.dataset_size,
        batch_size=args.batch_size,
        epochs=args.epochs,
        k=args.k,
    )
    if args.plot:
        import_optional("matplotlib", extra="plot", feature=_FEATURE).use("Agg")
        plt = import_optional("matplotlib.pyplot", extra="plot", feature=_FEATURE)
        ax = report.plot()
        ax.figure.savefig(args.plot, dpi=120)
        plt.close(ax.figure)
    if args.json:
        out = report.as_dict()
        for row in out["rows"]:
            row["epsilon"] = json_float(row["epsilon"])
        if args.plot:
            out["plot"] = args.plot
        emit_json(out)
        return 0
    print(repr(report))
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0
