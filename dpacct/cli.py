"""The ``dpacct`` command line.

Subcommands::

    dpacct epsilon   --noise-multiplier 1.1 --sample-rate 0.0043 --steps 14063 --delta 1e-5
    dpacct calibrate --epsilon 3 --delta 1e-5 --sample-rate 0.01 --steps 10000
    dpacct compare   --mechanism gaussian:sigma=1 --mechanism laplace:b=2 --plot curves.png
    dpacct ledger    ledger.json --delta 1e-5
    dpacct sampler   --sigma 1 --delta 1e-5 --scheme shuffle --dataset-size 60000 --batch-size 600
    dpacct demo      (also what ``dpacct`` alone runs)

``calibrate`` solves for whichever of ``--noise-multiplier``, ``--steps`` and
``--sample-rate`` is left out; to solve for the noise multiplier it needs ``--steps`` or
``--epochs``, as :func:`~dpacct.calibrators.noise_multiplier` does.  Every subcommand
takes ``--json`` for scripts.  Errors are one line on stderr, ``dpacct SUBCOMMAND: error:
...``, and a non-zero exit status (2 for usage errors, 1 for values the library rejects or
targets it cannot reach); set ``DPACCT_DEBUG=1`` to see tracebacks.  The values go to the
library as given and its own checks speak (``delta = 0`` included: pure DP), so the
command line accepts and refuses exactly what the Python functions do.

Mechanism specs (``compare``) read ``NAME[:key=value,key=value...]``: ``NAME`` is a
mechanism of the zoo (``gaussian``, ``laplace``, ``randomized_response`` or ``rr``, ...,
any class exported by :mod:`dpacct.mechanisms`), the keys are its constructor's parameters,
plus two transformers applied in this order: ``q=`` (or ``sample_rate=``) for Poisson
subsampling and ``steps=`` (or ``count=``) for composition.  One DP-SGD run is
``gaussian:sigma=1.1,q=0.0043,steps=14063`` (see :mod:`dpacct._cli_spec`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpacct._cli_compare import cmd_compare
from dpacct._cli_output import emit_json, fmt, json_float, plain_numbers, plural, table
from dpacct._cli_sampler import add_parser as add_sampler_parser
from dpacct._cli_spec import _zoo, parse_mechanism_spec

__all__ = ["main", "parse_mechanism_spec"]

DEMO_DELTA = 1e-5


class _UsageError(Exception):
    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (raised, not printed-and-exited).

    A value that reads as a negative number (``-1e-5``, ``-inf``, not only ``-1`` and
    ``-0.5`` as argparse has it) is a value, not an option, so that ``--delta -1e-5``
    reaches the library's check instead of "expected one argument".
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(
            r"^-(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE
        )

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(self.prog, message)


# ----------------------------------------------------------------------------------
# argument types: numbers only; their ranges are the library's to check
# ----------------------------------------------------------------------------------


def _real(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _rate(text: str) -> float:
    """A sampling rate as a number (0.0043) or as a fraction ``batch/dataset`` (256/60000).

    The fraction is divided exactly and rounded once, so ``256/60000`` is the rate of the
    run itself, not a rounded decimal (``0.0043`` is 0.8 % above 256 / 60 000).
    """
    if "/" not in text:
        return _real(text)
    num, _, den = text.partition("/")
    try:
        return float(Fraction(num.strip()) / Fraction(den.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(
            f"not a number or a fraction BATCH/DATASET with a nonzero denominator: {text!r}"
        ) from None


def _count(text: str) -> int | float:
    """A count as written: an int (also from 1e4 or 10_000), else the float.

    A float that is not a whole number (2.5, inf, nan) goes to the library as it is, so
    that :func:`~dpacct.accountant.validation.check_count` says what is wrong with it.
    """
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


# ----------------------------------------------------------------------------------
# subcommands
# ----------------------------------------------------------------------------------


def _describe_run(sigma: float, q: float, steps: int) -> str:
    run = f"{plural(steps, 'step')} of the Gaussian mechanism with noise multiplier {sigma:.6g}"
    return f"{run} (no subsampling)" if q == 1.0 else f"{run}, Poisson sampling rate {q:.6g}"


def _cmd_epsilon(args: argparse.Namespace) -> int:
    from dpacct.calibrators.dpsgd import dpsgd_mechanism, resolve_steps

    q = args.sample_rate
    steps = resolve_steps(args.steps, args.epochs, q)
    mech = dpsgd_mechanism(args.noise_multiplier, q, steps)
    t0 = time.perf_counter()
    eps = float(mech.epsilon(args.delta))
    lower = upper = None
    if args.bounds:
        lower, upper = (float(v) for v in mech.epsilon_bounds(args.delta))
    seconds = time.perf_counter() - t0
    from dpacct.accountant.queries.attack_risk import advantage, tpr_at

    fprs = (0.001, 0.01, 0.1)
    adv = float(advantage(mech))
    tprs = [float(v) for v in tpr_at(mech, list(fprs))]
    if args.json:
        out = {
            "advantage": adv,
            "tpr_at_fpr": {str(a): t for a, t in zip(fprs, tprs, strict=True)},
            "epsilon": json_float(eps),
            "delta": args.delta,
            "noise_multiplier": args.noise_multiplier,
            "sample_rate": q,
            "steps": steps,
            "seconds": round(seconds, 4),
        }
        if args.bounds:
            out["lower"], out["upper"] = json_float(lower), json_float(upper)  # type: ignore[arg-type]
        emit_json(out)
        return 0
    print(f"epsilon = {fmt(eps, 6)} at delta = {args.delta:g}")
    print(f"  {_describe_run(args.noise_multiplier, q, steps)}")
    if args.bounds:
        print(f"  certified bracket of the true epsilon: [{fmt(lower, 6)}, {fmt(upper, 6)}]")
    print(f"  attack risk (certified upper bounds): advantage TPR - FPR <= {adv:.6g}")
    for a, t in zip(fprs, tprs, strict=True):
        print(f"    TPR at FPR {a:g} <= {t:.6g}")
    return 0


_PROG_CALIBRATE = "dpacct calibrate"
_STEPS_HINT = "give --steps or --epochs (--steps 1 for a single release)"


def _resolve_steps(args: argparse.Namespace, q: float) -> int:
    """The step count, by the library's own :func:`~dpacct.calibrators.dpsgd.resolve_steps`.

    Its refusal of a missing count (the one :func:`~dpacct.calibrators.noise_multiplier`
    raises) becomes a usage error that names the flags: no silent single step.
    """
    from dpacct.calibrators.dpsgd import resolve_steps

    try:
        return resolve_steps(args.steps, args.epochs, q)
    except TypeError as exc:
        if args.steps is None and args.epochs is None:
            raise _UsageError(_PROG_CALIBRATE, f"{exc}: {_STEPS_HINT}") from None
        raise


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """``calibrate``: solve for the one of sigma, steps, sample rate that is left out.

    Omissions, as the Python calibrators treat them: the steps (or epochs) are required
    to solve for the noise multiplier (no default; one step would be a silent trap);
    the sample rate defaults to 1 (full batches, as in :func:`noise_multiplier`,
    :func:`max_steps`: the most privacy loss per step, so the answer errs on the safe
    side); ``--epochs`` cannot fix the steps while the sample rate is solved for.
    """
    from dpacct.calibrators.dpsgd import max_sample_rate, max_steps, noise_multiplier
    from dpacct.calibrators.risk import (
        risk_max_sample_rate,
        risk_max_steps,
        risk_noise_multiplier,
    )

    have_sigma = args.noise_multiplier is not None
    have_steps = args.steps is not None or args.epochs is not None
    have_rate = args.sample_rate is not None
    risk = args.tpr is not None or args.fpr is not None or args.advantage is not None
    if risk and (args.epsilon is not None or args.delta is not None):
        raise _UsageError(
            _PROG_CALIBRATE,
            "give either --epsilon with --delta or an attack-risk target (--tpr with --fpr, "
            "or --advantage), not both",
        )
    if not risk and (args.epsilon is None or args.delta is None):
        raise _UsageError(
            _PROG_CALIBRATE,
            "give --epsilon and --delta, or an attack-risk target (--tpr with --fpr, or "
            "--advantage)",
        )
    if have_sigma and have_steps and have_rate:
        raise _UsageError(
            _PROG_CALIBRATE,
            "nothing to solve for: leave out one of --noise-multiplier, --steps/--epochs, "
            "--sample-rate (or use 'dpacct epsilon' to evaluate)",
        )
    if have_sigma and not have_steps and args.tolerance is not None:
        raise _UsageError(_PROG_CALIBRATE, "--tolerance does not apply to a number of steps")
    if have_sigma and have_steps and args.epochs is not None:
        raise _UsageError(
            _PROG_CALIBRATE,
            "--epochs fixes the number of steps through the sample rate; give --steps to "
            "solve for --sample-rate",
        )
    rtol = {} if args.tolerance is None else {"rtol": args.tolerance}
    target = {"tpr": args.tpr, "fpr": args.fpr, "advantage": args.advantage}
    q = args.sample_rate if have_rate else 1.0
    sigma = args.noise_multiplier
    if not have_sigma:
        solve = "noise_multiplier"
        steps = _resolve_steps(args, q)
        if risk:
            res = risk_noise_multiplier(
                sample_rate=q, steps=steps, full_output=True, **target, **rtol
            )
        else:
            res = noise_multiplier(args.epsilon, args.delta, q, steps, full_output=True, **rtol)
        sigma = float(res.parameter)
    elif not have_steps:
        solve = "steps"
        if risk:
            res = risk_max_steps(noise_multiplier=sigma, sample_rate=q, full_output=True, **target)
        else:
            res = max_steps(args.epsilon, args.delta, sigma, q, full_output=True)
        steps = int(res.parameter)
    else:
        solve = "sample_rate"
        steps = _resolve_steps(args, 1.0)
        if risk:
            res = risk_max_sample_rate(
                noise_multiplier=sigma, steps=steps, full_output=True, **target, **rtol
            )
        else:
            res = max_sample_rate(args.epsilon, args.delta, sigma, steps, full_output=True, **rtol)
        q = float(res.parameter)
    return (_report_risk if risk else _report_calibration)(args, solve, sigma, q, steps, res)


def _report_calibration(args, solve: str, sigma: float, q: float, steps: int, res) -> int:
    out = {
        "solved_for": solve,
        "noise_multiplier": sigma,
        "sample_rate": q,
        "steps": steps,
        "epsilon": res.epsilon,
        "target_epsilon": args.epsilon,
        "delta": args.delta,
        "evaluations": res.evaluations,
        "seconds": round(res.seconds, 4),
    }
    if args.json:
        emit_json(out)
        return 0
    label = {"noise_multiplier": "noise multiplier", "steps": "steps", "sample_rate": "sample rate"}
    value = {"noise_multiplier": f"{sigma:.6g}", "steps": f"{steps}", "sample_rate": f"{q:.6g}"}
    print(f"{label[solve]} = {value[solve]}")
    print(f"  epsilon = {res.epsilon:.6g} at delta = {args.delta:g} (target {args.epsilon:g})")
    print(f"  {_describe_run(sigma, q, steps)}")
    if solve == "noise_multiplier" and q == 1.0:
        print("  (exact analytic Gaussian calibration, Balle & Wang 2018)")
    if solve == "steps":
        print(f"  ({plural(steps + 1, 'step')} would exceed the target)")
    if solve == "sample_rate" and res.at_domain_edge:
        print("  (full batches already meet the target)")
    return 0


def _report_risk(args, solve: str, sigma: float, q: float, steps: int, res) -> int:
    out = {
        "solved_for": solve,
        "noise_multiplier": sigma,
        "sample_rate": q,
        "steps": steps,
        "metric": res.metric,
        "risk": res.risk,
        "target": res.target,
        "fpr": res.fpr,
        "evaluations": res.evaluations,
        "seconds": round(res.seconds, 4),
    }
    if args.json:
        emit_json(out)
        return 0
    what = f"TPR at FPR {res.fpr:g}" if res.metric == "tpr" else "advantage TPR - FPR"
    print(f"{solve.replace('_', ' ')} = {res.parameter:.6g}")
    print(f"  best attack's {what} <= {res.risk:.6g} (target {res.target:g}; certified)")
    print(f"  {_describe_run(sigma, q, steps)}")
    return 0


def _cmd_ledger(args: argparse.Namespace) -> int:
    from dpacct.accountant.ledger import PrivacyAccountant

    key = None
    if args.key_file is not None:
        try:
            with open(args.key_file, "rb") as fh:
                # one trailing newline is an editor's, not the key's
                key = fh.read().removesuffix(b"\n")
        except OSError as exc:
            raise ValueError(f"--key-file: cannot read {args.key_file!r}: {exc.strerror}") from None
    acct = PrivacyAccountant.load(args.path, key=key, allow_unsigned=args.allow_unsigned)
    eps = acct.epsilon(args.delta)  # the library checks delta, also for an empty ledger
    if args.json:
        emit_json(
            {
                "path": args.path,
                "entries": [
                    {"mechanism": plain_numbers(repr(m)), "count": c} for m, c in acct.entries
                ],
                "steps": acct.steps,
                "epsilon": json_float(eps),
                "delta": args.delta,
                "budget": None if acct.budget is None else list(acct.budget),
            }
        )
        return 0
    n = len(acct.entries)
    print(f"{args.path}: {plural(n, 'entry', 'entries')}, {plural(acct.steps, 'record')}")
    for m, c in acct.entries:
        print(f"  {c:>10} x {plain_numbers(repr(m))}")
    print(f"epsilon spent = {fmt(eps, 6)} at delta = {args.delta:g}")
    if acct.budget is not None:
        print(f"budget: epsilon {acct.budget[0]:g} at delta {acct.budget[1]:g}")
    return 0


def _demo_rows() -> list[tuple[str, str, Any]]:
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    rows: list[tuple[str, str, Any]] = [
        (
            "gaussian:sigma=1",
            "one Gaussian release, noise multiplier 1",
            GaussianMechanism(sigma=1.0),
        ),
        (
            "gaussian:sigma=10,steps=100",
            "noisy GD: 100 full-batch steps, noise multiplier 10",
            compose([GaussianMechanism(sigma=10.0)], counts=[100]),
        ),
        (
            "gaussian:sigma=1.1,q=0.004267,steps=14063",
            "DP-SGD on MNIST: batch 256 of 60 000, 60 epochs, noise multiplier 1.1",
            compose(
                [poisson_subsample(GaussianMechanism(sigma=1.1), 256 / 60_000)], counts=[14_063]
            ),
        ),
    ]
    zoo = _zoo()
    for key, spec, text in (
        ("laplace", "laplace:b=10,steps=10", "10 Laplace releases, scale 10"),
        ("randomizedresponse", "rr:p=0.75", "randomized response, truthful w.p. 0.75"),
    ):
        if key in zoo:
            try:
                rows.append((spec, text, parse_mechanism_spec(spec)))
            except ValueError:  # pragma: no cover - a zoo class with other parameters
                pass
    return rows


def _cmd_demo(args: argparse.Namespace) -> int:
    rows = []
    for spec, text, mech in _demo_rows():
        t0 = time.perf_counter()
        eps = float(mech.epsilon(DEMO_DELTA))
        rows.append(
            {"spec": spec, "description": text, "epsilon": eps, "seconds": time.perf_counter() - t0}
        )
    if getattr(args, "json", False):
        emit_json(
            {
                "delta": DEMO_DELTA,
                "mechanisms": [{**r, "epsilon": json_float(r["epsilon"])} for r in rows],
            }
        )
        return 0
    print(f"dpacct: epsilon at delta = {DEMO_DELTA:g} of a few mechanisms\n")
    print(
        table(
            ["mechanism", "epsilon", "what it is"],
            [[r["spec"], fmt(r["epsilon"], 4), r["description"]] for r in rows],
            left=(0, 2),
        )
    )
    print(
        "\nNext steps:\n"
        "  dpacct epsilon --noise-multiplier 1.1 --sample-rate 0.0043 --steps 14063 --delta 1e-5\n"
        "  dpacct calibrate --epsilon 3 --delta 1e-5 --sample-rate 0.01 --steps 10000\n"
        "  dpacct compare -m gaussian:sigma=1 -m laplace:b=2 --plot curves.png\n"
        "  dpacct --help"
    )
    return 0


# ----------------------------------------------------------------------------------
# parser and entry point
# ----------------------------------------------------------------------------------


def _dpsgd_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The DP-SGD run flags of ``epsilon`` and ``calibrate``."""
    p.add_argument(
        "--noise-multiplier",
        "--sigma",
        dest="noise_multiplier",
        type=_real,
        required=required,
        metavar="SIGMA",
        help="noise standard deviation over the clipping norm",
    )
    p.add_argument(
        "--sample-rate",
        "-q",
        dest="sample_rate",
        type=_rate,
        default=1.0 if required else None,
        metavar="Q",
        help="Poisson sampling rate per step, batch size / dataset size, as a number or a "
        "fraction such as 256/60000 (default 1: "
        "full batches" + ("" if required else ", unless solved for") + ")",
    )
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--steps", type=_count, help="number of steps")
    group.add_argument(
        "--epochs", type=_real, help="passes over the data (steps = epochs / sample rate)"
    )


# long function: the argparse declaration of every subcommand and flag, read top to bottom as
# the CLI's reference; a split per subcommand would scatter the shared flags
def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dpacct",
        description="Differential-privacy accounting and calibration: sound, tight epsilon "
        "for DP-SGD and friends.",
        epilog="Run 'dpacct SUBCOMMAND --help' for the options of each subcommand; "
        "'dpacct' alone runs the demo.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")

    p = sub.add_parser(
        "epsilon",
        help="epsilon spent by DP-SGD (or noisy GD) at a delta",
        description="Epsilon of Poisson-subsampled Gaussian steps (DP-SGD) at a delta.",
    )
    _dpsgd_args(p, required=True)
    p.add_argument("--delta", type=_real, required=True, help="target delta, e.g. 1e-5")
    p.add_argument(
        "--bounds", action="store_true", help="also print the certified bracket of the true epsilon"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_epsilon)

    p = sub.add_parser(
        "calibrate",
        help="noise multiplier, steps or sample rate that meets a target epsilon",
        description="Solve for whichever of --noise-multiplier, --steps/--epochs and "
        "--sample-rate is left out, so that epsilon at --delta meets --epsilon (or the "
        "attack risk meets --tpr at --fpr, or --advantage).  Solving for the noise multiplier "
        "needs --steps or --epochs (--steps 1: one release, the exact analytic Gaussian "
        "without --sample-rate).",
    )
    p.add_argument("--epsilon", type=_real, help="target epsilon")
    p.add_argument("--delta", type=_real, help="target delta, e.g. 1e-5")
    p.add_argument("--tpr", type=_real, help="attack-risk target: best attack's TPR at --fpr")
    p.add_argument("--fpr", type=_real, help="false-positive rate of the --tpr target")
    p.add_argument("--advantage", type=_real, help="attack-risk target: TPR - FPR of any attack")
    _dpsgd_args(p, required=False)
    p.add_argument(
        "--tolerance",
        type=_real,
        help="relative tolerance: the epsilon reached lies in [target (1 - tol), target] "
        "(default 1e-3; 1e-4 for an attack-risk target)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_calibrate)

    p = sub.add_parser(
        "compare",
        help="compare mechanisms' privacy curves side by side (table, optional plot)",
        description="Epsilon(delta), Renyi DP and f-DP trade-off of several mechanisms.  "
        "Mechanism spec: NAME[:key=value,...], e.g. gaussian:sigma=1, laplace:b=2, "
        "gaussian:sigma=1.1,q=0.004,steps=14063 (q= Poisson subsampling, steps= composition).",
    )
    p.add_argument(
        "--mechanism",
        "-m",
        action="append",
        required=True,
        metavar="SPEC",
        help="a mechanism spec (repeat for each mechanism)",
    )
    p.add_argument(
        "--delta",
        type=_real,
        action="append",
        help="delta for the epsilon column (repeatable; default 1e-5)",
    )
    p.add_argument(
        "--alpha",
        type=_real,
        nargs="+",
        default=[2.0, 8.0, 32.0],
        help="Renyi orders (default 2 8 32)",
    )
    p.add_argument(
        "--fpr",
        type=_real,
        nargs="+",
        default=[0.01, 0.1],
        help="type I errors for the trade-off (default 0.01 0.1)",
    )
    p.add_argument(
        "--plot", metavar="PATH", help="write the three curves to an image (needs matplotlib)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "ledger",
        help="epsilon spent by a saved PrivacyAccountant ledger",
        description="Load a ledger saved by PrivacyAccountant.save (its checksum, or its "
        "HMAC-SHA256 signature when it was saved with a key, verified) and print what it "
        "spent.  The key comes from --key-file or the environment variable "
        "DPACCT_LEDGER_KEY.",
    )
    p.add_argument("path", help="ledger JSON file")
    p.add_argument(
        "--key-file",
        metavar="PATH",
        help="file holding the key a signed ledger was saved with (one trailing newline "
        "is ignored); wins over DPACCT_LEDGER_KEY",
    )
    p.add_argument(
        "--allow-unsigned",
        action="store_true",
        help="with a key, also accept a ledger that carries only an unkeyed checksum",
    )
    p.add_argument("--delta", type=_real, default=DEMO_DELTA, help="delta (default 1e-5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_ledger)

    add_sampler_parser(sub, _real, _count)

    p = sub.add_parser("demo", help="epsilon of a few mechanisms at delta = 1e-5 (the default)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_demo)
    return parser


def _version() -> str:
    from dpacct import __version__

    return __version__


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 error, 2 usage error).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; 2 for a usage error (a missing, unknown or conflicting flag, a
        value that is not a number); 1 when the library refuses a value or cannot reach
        a target (its own message, one line on stderr).

    Examples
    --------
    >>> main(["epsilon", "--noise-multiplier", "2", "--steps", "1", "--delta", "1e-5"])
    epsilon = 1.99309 at delta = 1e-05
      1 step of the Gaussian mechanism with noise multiplier 2 (no subsampling)
      attack risk (certified upper bounds): advantage TPR - FPR <= 0.197413
        TPR at FPR 0.001 <= 0.00479556
        TPR at FPR 0.01 <= 0.0338989
        TPR at FPR 0.1 <= 0.217239
    0
    """
    parser = _build_parser()
    args_list = list(sys.argv[1:] if argv is None else argv)
    prog = "dpacct"
    try:
        args, extra = parser.parse_known_args(args_list)
        if getattr(args, "command", None):
            prog = f"dpacct {args.command}"
        if extra:  # named after the subcommand they were given to
            raise _UsageError(prog, f"unrecognized arguments: {' '.join(extra)}")
        func = getattr(args, "func", None)
        if func is None:  # plain `dpacct`
            return _cmd_demo(argparse.Namespace(json=False))
        return int(func(args))
    except _UsageError as exc:
        text = plain_numbers(_one_line(str(exc)))
        print(f"{exc.prog}: error: {text} (see '{exc.prog} --help')", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dpacct: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        if os.environ.get("DPACCT_DEBUG"):
            raise
        known = (ValueError, TypeError, OSError, RuntimeError, ArithmeticError, ImportError)
        kind = "error" if isinstance(exc, known) else f"internal error ({type(exc).__name__})"
        # the library's own message, as the Python call raises it (numbers made plain)
        text = plain_numbers(_one_line(str(exc))) or type(exc).__name__
        print(f"{prog}: {kind}: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
