"""Explicit conversions between neighbouring relations (never a relabel).

A mechanism's parameters are per unit of sensitivity *under its relation*.  For a
noise-adding mechanism the replace-one sensitivity of a query is at most twice its
add/remove sensitivity: replacing record ``x`` by ``x'`` is removing ``x`` and then
adding ``x'``, and the triangle inequality bounds the move of the query by the sum of
the two (for a sum of clipped per-example gradients with clip norm ``C``: ``C`` under
add/remove, ``2C`` under replace-one, attained by ``g(x') = -g(x)``).  So the same
noise is worth half as much per unit of replace-one sensitivity, and
:func:`replace_one` states the conversion with that factor (or a smaller one the
caller can justify for their query, e.g. ``1`` for a histogram count under
replace-one when the record's old and new bins coincide -- which the caller must
prove).

:func:`fixed_size_gaussian_step` is the common case in one call: one DP-SGD step on a
batch of fixed size drawn without replacement, with the noise multiplier the training
loop uses.
"""

from __future__ import annotations

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.relations import ADD_REMOVE
from dpacct.accountant.transformers.subsample import subsample_without_replacement
from dpacct.accountant.validation import (
    check_finite,
    check_positive,
    check_sample_rate,
    show_value,
)

from .gaussian import GaussianMechanism, ReplaceOneGaussianMechanism
from .laplace import LaplaceMechanism, ReplaceOneLaplaceMechanism  # noqa: F401 (doctests)

__all__ = ["fixed_size_gaussian_step", "replace_one"]


def replace_one(mechanism: Mechanism, *, sensitivity_factor: float = 2.0) -> Mechanism:
    """The replace-one description of an add/remove noise-adding mechanism.

    Parameters
    ----------
    mechanism : GaussianMechanism or LaplaceMechanism
        Noise per unit of *add/remove* sensitivity.
    sensitivity_factor : float
        Replace-one sensitivity over add/remove sensitivity of the query, in [1, 2];
        default 2 (the triangle inequality, always valid).  A smaller factor is a claim
        about the query that the caller must prove.

    Returns
    -------
    ReplaceOneGaussianMechanism or ReplaceOneLaplaceMechanism
        The same noise, per unit of replace-one sensitivity: ``sigma / factor`` (or
        ``b / factor``).

    Raises
    ------
    TypeError
        ``mechanism`` is not a Gaussian or Laplace mechanism (others have no noise scale
        to convert: subsampled or composed mechanisms do not scale this way).
    ValueError
        ``mechanism`` is not under the add/remove relation, or ``sensitivity_factor``
        is outside [1, 2].

    Examples
    --------
    >>> replace_one(GaussianMechanism(sigma=1.2))
    ReplaceOneGaussianMechanism(sigma=0.6)
    >>> replace_one(LaplaceMechanism(b=3.0)).pure_epsilon  # 2 / 3 rounded up: twice 1 / 3
    0.6666666666666667
    """
    factor = check_finite("sensitivity_factor", sensitivity_factor)
    if not 1.0 <= factor <= 2.0:
        raise ValueError(
            f"sensitivity_factor must lie in [1, 2] (replace-one over add/remove "
            f"sensitivity; 2 by the triangle inequality), got {show_value(factor)}"
        )
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    if mechanism.neighbouring != ADD_REMOVE:
        raise ValueError(
            f"replace_one converts an add/remove mechanism; {mechanism!r} is already "
            f"accounted under {mechanism.neighbouring!r}"
        )
    if mechanism.noise_parameter == "sigma":  # declared by GaussianMechanism, not inherited
        return ReplaceOneGaussianMechanism(sigma=mechanism.sigma / factor)
    if mechanism.noise_parameter == "b":  # declared by LaplaceMechanism, not inherited
        return ReplaceOneLaplaceMechanism(b=mechanism.b / factor)
    raise TypeError(
        f"replace_one converts GaussianMechanism and LaplaceMechanism (noise per unit of "
        f"sensitivity), got {type(mechanism).__name__}; describe other mechanisms under "
        f"the replace-one relation directly"
    )


def fixed_size_gaussian_step(noise_multiplier: float, sample_rate: float) -> Mechanism:
    """One DP-SGD step on a fixed-size batch drawn without replacement.

    The training loop adds ``N(0, (noise_multiplier * C)^2)`` noise to the sum of
    per-example gradients clipped at ``C``; the batch is ``sample_rate * n`` records
    drawn uniformly without replacement.  That relation is replace-one (the batch size
    is public), under which the clipped sum moves by up to ``2C``, so the step is
    ``subsample_without_replacement(ReplaceOneGaussianMechanism(noise_multiplier / 2),
    sample_rate)``: a PLD bracket on one symmetric dominating pair per step (Balle,
    Barthe, Gaboardi 2018, Table 1; Dong, Roth, Su 2019, Theorem 4.2; the argument in
    ``docs/theory/fixed_size.md``), and the RDP bound of Wang, Balle, Kasiviswanathan
    2019, Theorem 9; the smaller wins.  The bracket is that of a pair that dominates the
    run.  A ledger of these composes only with other replace-one entries.

    This is for batches drawn independently at every step.  Shuffling the dataset once
    per epoch and cutting it into batches is another scheme (each record in exactly one
    batch per epoch): see :mod:`dpacct.accountant.transformers.shuffling`.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the clipping norm, > 0.
    sample_rate : float
        Batch size over dataset size, in (0, 1].

    Examples
    --------
    >>> step = fixed_size_gaussian_step(noise_multiplier=1.0, sample_rate=0.01)
    >>> step.base, step.sample_rate
    (ReplaceOneGaussianMechanism(sigma=0.5), 0.01)
    >>> step.neighbouring, step.route
    ('replace-one', 'pld')
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    base = replace_one(GaussianMechanism(sigma=sigma))
    return subsample_without_replacement(base, check_sample_rate(sample_rate))
