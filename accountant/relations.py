"""Neighbouring relations: which pairs of datasets a privacy guarantee is about.

Two relations are in use:

* :data:`ADD_REMOVE` -- ``D'`` is ``D`` with one record added or removed (the default
  of every mechanism, and the relation of Poisson subsampling);
* :data:`REPLACE_ONE` -- ``D'`` is ``D`` with one record's value replaced (the relation
  of sampling a fixed-size batch without replacement, and of local randomized
  response, whose "dataset" is one person's value).

A guarantee for one relation says nothing exact about the other, so the engine never
relabels: transformers check the relation they are proved for
(:func:`require_relation`), composition refuses mixtures, and a change of relation is
an explicit conversion that states its price (for a noise-adding mechanism:
replacing a record moves a query by at most twice its add/remove sensitivity, by the
triangle inequality, so the noise per unit of replace-one sensitivity is half the
add/remove one; see :func:`dpacct.mechanisms.replace_one`).
"""

from __future__ import annotations

__all__ = ["ADD_REMOVE", "REPLACE_ONE", "require_relation"]

#: one record added to or removed from the dataset
ADD_REMOVE = "add/remove"
#: one record's value replaced by another
REPLACE_ONE = "replace-one"


def require_relation(mechanism: object, relation: str, *, where: str, why: str) -> None:
    """Raise a ``ValueError`` unless ``mechanism`` is accounted under ``relation``.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism a transformer is about to wrap.
    relation : str
        The relation the transformer's theorem is proved for.
    where : str
        The transformer's name, for the message.
    why : str
        The theorem (or a hint on the explicit conversion), for the message.

    Examples
    --------
    >>> class Local:
    ...     neighbouring = REPLACE_ONE
    >>> require_relation(Local(), ADD_REMOVE, where="poisson_subsample", why="...")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: poisson_subsample needs a mechanism accounted under the 'add/remove' ...
    """
    got = getattr(mechanism, "neighbouring", None)
    if got != relation:
        raise ValueError(
            f"{where} needs a mechanism accounted under the {relation!r} neighbouring "
            f"relation, got {type(mechanism).__name__} under {got!r}: {why}"
        )
