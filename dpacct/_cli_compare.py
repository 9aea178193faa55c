"""``dpacct compare``: several mechanisms' privacy curves side by side, and the plot.

The values are the library's: ``Mechanism.epsilon(delta)``, ``Mechanism.rdp(alpha)`` and
the f-DP trade-off curve (exact, or the dual of a sound ``delta(epsilon)``); the library
validates every argument (``delta = 0`` goes through to it: pure DP).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dpacct._cli_output import emit_json, fmt, json_float, table
from dpacct._cli_spec import parse_mechanism_spec

if TYPE_CHECKING:  # numpy is imported where it is used: ``dpacct --help`` needs none
    import numpy as np

#: delta of the table's epsilon column and of the plot's RDP markers by default
DEFAULT_DELTA = 1e-5

#: log-log slope of an RDP curve above which the plot explains the rise: a mechanism
#: without subsampling grows at most like alpha (slope 1: the Gaussian; pure DP is
#: bounded); a subsampled one rises far faster where amplification ends
STEEP_SLOPE = 3.0


def tradeoff(mech, fpr: np.ndarray) -> np.ndarray:
    """The f-DP trade-off curve at ``fpr``: :meth:`Mechanism.tradeoff`, the one route.

    The exact curve where the mechanism knows it, else the lower end of
    :func:`~dpacct.accountant.tradeoff_bounds` (a certified lower bound on beta).

    Examples
    --------
    >>> import numpy as np
    >>> from dpacct.mechanisms import GaussianMechanism
    >>> beta = tradeoff(GaussianMechanism(sigma=1.0), np.array([0.0, 1.0]))
    >>> [round(float(b), 6) for b in beta]
    [1.0, 0.0]
    """
    import numpy as np

    return np.atleast_1d(np.asarray(mech.tradeoff(fpr), dtype=float))


def rdp_or_none(mech, alphas: Sequence[float] | np.ndarray) -> np.ndarray | None:
    """The RDP curve at ``alphas`` (validated by the library), or None when it has none."""
    import numpy as np

    try:
        return np.atleast_1d(np.asarray(mech.rdp(alphas), dtype=float))
    except NotImplementedError:
        return None


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``dpacct compare`` (table, ``--json``, ``--plot``)."""
    from dpacct.accountant.validation import check_fpr

    specs = args.mechanism
    mechs = [parse_mechanism_spec(s) for s in specs]
    deltas = args.delta or [DEFAULT_DELTA]
    alphas = list(args.alpha)
    fprs = check_fpr(list(args.fpr))  # as a Python caller passes them to Mechanism.tradeoff
    results = []
    for spec, mech in zip(specs, mechs, strict=True):
        # every argument goes to the library as given: it validates delta (0 = pure
        # DP) and the orders, and says why when it cannot answer
        eps = [float(mech.epsilon(d)) for d in deltas]
        rdp = rdp_or_none(mech, alphas)
        beta = [float(b) for b in tradeoff(mech, fprs)]
        results.append(
            {
                "mechanism": spec,
                "repr": repr(mech),
                "epsilon": eps,
                "rdp": None if rdp is None else rdp.tolist(),
                "tradeoff": beta,
            }
        )
    plot_path = _plot(args.plot, specs, mechs) if args.plot else None
    if args.json:
        emit_json(
            {
                "deltas": [float(d) for d in deltas],
                "alphas": [float(a) for a in alphas],
                "fpr": fprs.tolist(),
                "mechanisms": [
                    {**r, "epsilon": [json_float(e) for e in r["epsilon"]]} for r in results
                ],
                "plot": plot_path,
            }
        )
        return 0
    header = (
        ["mechanism"]
        + [f"eps(d={d:g})" for d in deltas]
        + [f"RDP a={a:g}" for a in alphas]
        + [f"beta(a={f:g})" for f in fprs]
    )
    rows = []
    for r in results:
        rdp = r["rdp"] or [None] * len(alphas)
        rows.append(
            [r["mechanism"]]
            + [fmt(e) for e in r["epsilon"]]
            + [fmt(v) for v in rdp]
            + [fmt(b, 4) for b in r["tradeoff"]]
        )
    print(table(header, rows))
    print(
        "eps: smallest provable epsilon at delta; RDP: Renyi-DP epsilon at order a; "
        "beta: type II error floor at type I error a (f-DP trade-off)"
    )
    if plot_path:
        print(f"curves written to {plot_path}")
    return 0


def best_order(alphas: np.ndarray, rdp: np.ndarray, delta: float) -> int | None:
    """Index of the order whose RDP -> (epsilon, delta) conversion is smallest.

    The order that sets epsilon at ``delta`` (on this grid; the library refines between
    orders): orders far above it never matter at that delta.  None if no order is finite.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([2.0, 8.0, 16.0, 32.0])
    >>> int(best_order(a, a / 2.0, 1e-5))  # Gaussian, sigma = 1: optimum near alpha = 5.8
    1
    """
    import numpy as np

    from dpacct.accountant.rdp.conversion import rdp_to_epsilon_at_orders

    eps = np.array(
        [
            rdp_to_epsilon_at_orders(alphas[i : i + 1], rdp[i : i + 1], delta)
            for i in range(len(alphas))
        ]
    )
    return int(np.argmin(eps)) if np.isfinite(eps).any() else None


def steep_rise(alphas: np.ndarray, rdp: np.ndarray) -> int | None:
    """Index of the order where the RDP curve rises steepest, if steeper than STEEP_SLOPE.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.geomspace(2.0, 64.0, 11)
    >>> steep_rise(a, a / 2.0) is None  # the Gaussian: slope 1
    True
    """
    import numpy as np

    ok = np.isfinite(rdp) & (rdp > 0)
    if ok.sum() < 2:
        return None
    la, lr = np.log(alphas[ok]), np.log(rdp[ok])
    slope = np.diff(lr) / np.diff(la)
    i = int(np.argmax(slope))
    return int(np.flatnonzero(ok)[i + 1]) if slope[i] > STEEP_SLOPE else None


def _plot(path: str, specs: list[str], mechs: list) -> str:
    from dpacct.accountant.extras import import_optional

    fig = figure(specs, mechs)
    fig.savefig(path, dpi=120)
    import_optional("matplotlib.pyplot", extra="plot", feature="dpacct compare --plot").close(fig)
    return path


def figure(specs: list[str], mechs: list):
    """The three panels: epsilon(delta), Renyi DP (with notes) and the f-DP trade-off.

    On the RDP panel a dot marks the order that sets epsilon at ``DEFAULT_DELTA``, and a
    curve that rises steeper than ``STEEP_SLOPE`` (a subsampled mechanism where
    amplification ends) is annotated there and explained under the panel.
    """
    import numpy as np

    from dpacct.accountant.extras import import_optional

    feature = "dpacct compare --plot"
    import_optional("matplotlib", extra="plot", feature=feature).use("Agg")
    plt = import_optional("matplotlib.pyplot", extra="plot", feature=feature)
    transforms = import_optional("matplotlib.transforms", extra="plot", feature=feature)
    blended_transform_factory = transforms.blended_transform_factory
    deltas = np.geomspace(1e-10, 1e-2, 9)
    # dense enough that a subsampled mechanism's rise (a factor 1e4 within a few
    # orders) is drawn as the curve it is, not as a cliff between two samples
    alphas = np.geomspace(1.1, 256.0, 240)
    fpr = np.linspace(0.0, 1.0, 101)
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.4))
    rdp_ax = axes[1]
    notes = []
    for spec, mech in zip(specs, mechs, strict=True):
        axes[0].plot(deltas, [float(mech.epsilon(d)) for d in deltas], marker="o", ms=3, label=spec)
        rdp = rdp_or_none(mech, alphas)
        if rdp is not None:
            finite = np.isfinite(rdp)
            (line,) = rdp_ax.plot(alphas[finite], rdp[finite], label=spec)
            best = best_order(alphas, rdp, DEFAULT_DELTA)
            if best is not None:
                rdp_ax.plot(alphas[best], rdp[best], "o", color=line.get_color(), ms=6)
            jump = steep_rise(alphas, rdp)
            if jump is not None:
                rdp_ax.annotate(
                    f"alpha ~ {alphas[jump]:.3g}",
                    xy=(alphas[jump], rdp[jump]),
                    xytext=(alphas[jump] * 2.2, rdp[jump] / 30.0),
                    fontsize=8,
                    color=line.get_color(),
                    arrowprops={"arrowstyle": "->", "color": line.get_color()},
                )
                notes.append(
                    f"{spec}: the steep rise near alpha ~ {alphas[jump]:.3g} is real, not a "
                    "numerical glitch:\nabove that order subsampling stops amplifying privacy, "
                    "and the RDP climbs to\nsteps x (the full-batch RDP - log(1/q))"
                )
            if not finite.all():
                notes.append(f"{spec}: RDP infinite from alpha = {alphas[~finite][0]:.3g} on")
        axes[2].plot(fpr, tradeoff(mech, fpr), label=spec)
    notes.append(
        f"dots: the order that sets epsilon at delta = {DEFAULT_DELTA:g} (the conversion "
        "picks the best order)"
    )
    text = "\n".join(dict.fromkeys(notes))
    rdp_ax.text(
        0.5,
        0.015,
        text,
        # centred under the RDP panel, at the bottom of the figure
        transform=blended_transform_factory(rdp_ax.transAxes, fig.transFigure),
        ha="center",
        va="bottom",
        fontsize=7.5,
    )
    axes[0].set(xscale="log", xlabel="delta", ylabel="epsilon", title="epsilon(delta)")
    rdp_ax.set(
        xscale="log", yscale="log", xlabel="order alpha", ylabel="RDP epsilon", title="Renyi DP"
    )
    axes[2].plot(fpr, 1.0 - fpr, color="grey", lw=0.8, ls="--", label="no privacy loss")
    axes[2].set(
        xlabel="type I error",
        ylabel="type II error",
        title="f-DP trade-off",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.subplots_adjust(bottom=0.14 + 0.03 * (text.count("\n") + 1))
    return fig
