"""DP-SGD for linear and logistic regression, with online privacy accounting.

:class:`DPSGD` is the algorithm of Abadi et al. 2016 ("Deep Learning with Differential
Privacy", Algorithm 1) for the linear models of :mod:`dpacct.mechanisms.algorithms.noisy_gd`: at
each step
every record joins the minibatch independently with probability ``sample_rate``
(Poisson sampling), per-example gradients are clipped to norm ``clip``, and Gaussian
noise with standard deviation ``sigma * clip`` is added to their sum.  One step is
``poisson_subsample(GaussianMechanism(sigma), sample_rate)`` and a run is its
``steps``-fold composition, accounted by the engine's tightest sound route.
:meth:`DPSGD.fit` also feeds a :class:`~dpacct.accountant.PrivacyAccountant` step by step, and
reports the epsilon spent after each epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dpacct.accountant.ledger import PrivacyAccountant
from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.transformers.subsample import poisson_subsample
from dpacct.accountant.validation import (
    MAX_COUNT,
    check_count,
    check_delta,
    check_flag,
    check_positive,
    check_rng,
    check_sample_rate,
    show_value,
)
from dpacct.mechanisms.algorithms._regression_data import binary_coding, feature_names
from dpacct.mechanisms.algorithms.algorithm import Algorithm, PlannedRelease
from dpacct.mechanisms.algorithms.noisy_gd import (
    FittedLinearModel,
    _augment,
    _check_data,
    _check_sensitivity_fields,
    _clipped_gradient_sum,
    _l2_gradient,
    _project,
    _to_model,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

__all__ = ["DPSGD", "DPSGDFit"]


def _epoch_ends(steps: int, sample_rate: float) -> np.ndarray:
    """Step counts at which each epoch (``1 / sample_rate`` steps) ends; the last is ``steps``.

    Epoch ``k`` ends after ``floor(k / sample_rate)`` steps (forgiving floating-point
    error, as ``dpacct.calibrators.steps_from_epochs``); a final partial epoch ends at ``steps``.
    """
    full = math.floor(steps * sample_rate * (1.0 + 1e-12))
    ends = np.floor(np.arange(1, full + 1) / sample_rate * (1.0 + 1e-12)).astype(np.int64)
    ends = ends[(ends >= 1) & (ends <= steps)]
    if ends.size == 0 or ends[-1] != steps:
        ends = np.append(ends, steps)
    return np.unique(ends)


@dataclass(frozen=True, eq=False)
class DPSGDFit(FittedLinearModel):
    """The model fitted by :meth:`DPSGD.fit`, with the privacy spent along the way.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    coef, intercept, loss
        As :class:`~dpacct.mechanisms.algorithms.noisy_gd.FittedLinearModel`.
    epoch_steps : numpy.ndarray
        Number of steps taken at the end of each epoch (the last entry is ``steps``).
    epsilon_per_epoch : numpy.ndarray or None
        Epsilon spent (at ``delta``, from the online accountant, including whatever the
        accountant held before the fit) after each epoch; None when no delta was given.
    delta : float or None
        The delta of ``epsilon_per_epoch``.
    accountant : PrivacyAccountant
        The ledger the fit fed, one entry per merged run of identical steps.
    label_coding, history, feature_names_in_
        Keyword-only, as :class:`~dpacct.mechanisms.algorithms.noisy_gd.FittedLinearModel`.

    Examples
    --------
    >>> import numpy as np
    >>> fit = DPSGDFit(coef=np.array([1.0]), intercept=0.0, loss="logistic",
    ...                epoch_steps=np.array([10]), epsilon_per_epoch=None, delta=None,
    ...                accountant=PrivacyAccountant())
    >>> fit.predict(np.array([[2.0], [-1.0]]))
    array([1., 0.])
    """

    epoch_steps: np.ndarray
    epsilon_per_epoch: np.ndarray | None
    delta: float | None
    accountant: PrivacyAccountant = field(repr=False)


@register_mechanism("dp_sgd")
@dataclass(frozen=True, repr=False)
class DPSGD(Algorithm):
    """DP-SGD (Abadi et al. 2016, Algorithm 1) for linear or logistic regression.

    Same models and losses as :class:`~dpacct.mechanisms.algorithms.noisy_gd.NoisyGD` (squared loss
    ``(x.theta - y)^2 / 2``, logistic loss with labels coded {0, 1} or {-1, +1}, or
    softmax cross-entropy over ``n_classes`` classes, ridge penalty ``l2/2 ||coef||^2``,
    intercept as a constant feature 1).  Each step:

    1. Poisson sampling: each record joins the batch ``B`` with probability
       ``sample_rate = q``, independently;
    2. the per-example gradients ``x_i r_i^T`` are clipped to L2 (Frobenius) norm
       ``clip = C`` and summed (one matrix product over the batch), and
       ``N(0, (sigma C)^2 I)`` is added;
    3. ``theta <- P(theta - learning_rate * (noisy sum / (q n) + l2 * coef))``, dividing by
       the expected batch size ``q n`` (the dataset size ``n`` is treated as public, as
       in Abadi et al. 2016), ``P`` the projection onto ``||theta|| <= theta_bound``
       when one is given.

    The returned model is the average of the iterates (``average=True``, default) or the
    last one.

    **Privacy.**  Under adding or removing one record each step is the Poisson-subsampled
    Gaussian mechanism ``poisson_subsample(GaussianMechanism(sigma), q)`` (the clipped
    sum has L2 sensitivity ``C``), and the run is
    ``compose([poisson_subsample(GaussianMechanism(sigma), q)], counts=[steps])``.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0 (noise std over the clipping norm).
    sample_rate : float
        Poisson sampling probability per step, in (0, 1].
    loss : {"linear", "logistic", "softmax"}
        Model family.
    steps : int, optional
        Number of steps, >= 1.
    epochs : float, optional
        Instead of ``steps``: ``steps = floor(epochs / sample_rate)`` (an epoch is
        ``1 / sample_rate`` steps, whatever the dataset size).  Both may be given only
        if they agree (as after ``dataclasses.replace``).
    clip : float
        Per-example clipping norm ``C`` > 0 (default 1).
    theta_bound : float, optional
        Radius of the ball the iterates are projected onto.
    learning_rate : float
        Step size, > 0 (default 1).
    l2 : float
        Ridge penalty on the coefficients, >= 0.
    fit_intercept, average : bool
        As in :class:`~dpacct.mechanisms.algorithms.noisy_gd.NoisyGD`.
    n_classes : int, optional
        Number of classes ``K >= 2`` for ``loss="softmax"`` (required there).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(1000, 2))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = (X @ np.array([3.0, -3.0]) + 0.3 * rng.normal(size=1000) > 0).astype(float)
    >>> sgd = DPSGD(sigma=1.0, sample_rate=0.05, epochs=5, loss="logistic",
    ...             learning_rate=4.0)
    >>> sgd.steps
    100
    >>> fit = sgd.fit(X, y, rng=rng, delta=1e-5)
    >>> bool(fit.accuracy(X, y) > 0.9)
    True
    >>> fit.epoch_steps
    array([ 20,  40,  60,  80, 100])
    >>> bool(np.all(np.diff(fit.epsilon_per_epoch) > 0))
    True
    >>> bool(abs(fit.epsilon_per_epoch[-1] - sgd.epsilon(1e-5)) < 1e-6)
    True
    """

    sigma: float
    sample_rate: float
    loss: Literal["linear", "logistic"]
    steps: int | None = None
    epochs: float | None = None
    clip: float = 1.0
    theta_bound: float | None = None
    learning_rate: float = 1.0
    l2: float = 0.0
    fit_intercept: bool = True
    average: bool = True
    n_classes: int | None = None

    def __post_init__(self) -> None:
        if self.clip is None:
            raise ValueError("clip must lie in (0, inf), got None")
        _check_sensitivity_fields(self)
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        q = check_sample_rate(self.sample_rate)
        object.__setattr__(self, "sample_rate", q)
        object.__setattr__(self, "average", check_flag("average", self.average))
        if self.steps is None and self.epochs is None:
            raise TypeError("one of steps or epochs is required")
        steps = None if self.steps is None else check_count(self.steps, "steps")
        if self.epochs is not None:
            epochs = check_positive("epochs", self.epochs)
            object.__setattr__(self, "epochs", epochs)
            raw = epochs / q
            if not raw * (1.0 + 1e-12) < MAX_COUNT:
                raise ValueError(
                    "epochs must give at most 2**63 - 1 steps (epochs / sample_rate below "
                    f"about 9.2e18), got epochs={show_value(epochs)} at sample_rate={show_value(q)}"
                )
            from_epochs = math.floor(raw * (1.0 + 1e-12))
            if from_epochs < 1:
                raise ValueError(
                    f"epochs must give at least one step: epochs / sample_rate = {raw:g} < 1"
                )
            if steps is not None and steps != from_epochs:
                raise ValueError(
                    f"steps and epochs disagree: epochs={show_value(epochs)} at "
                    f"sample_rate={show_value(q)} is "
                    f"{from_epochs} steps, got steps={show_value(steps)}; give one of them"
                )
            steps = from_epochs
        object.__setattr__(self, "steps", steps)

    # ---------------------------------------------------------------- privacy
    @property
    def step_mechanism(self) -> Mechanism:
        """One step: ``poisson_subsample(GaussianMechanism(sigma), sample_rate)``.

        The very object of :attr:`plan` (cached), whose sample rate draws each batch and
        whose base Gaussian adds each step's noise.
        """
        return self.plan[0].mechanism

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """``steps`` Poisson-subsampled Gaussian releases of the clipped gradient sum.

        At sensitivity ``clip``.
        """
        assert self.steps is not None and self.clip is not None
        step = poisson_subsample(GaussianMechanism(sigma=self.sigma), self.sample_rate)
        return (PlannedRelease("clipped gradient sum", step, self.steps, sensitivity=self.clip),)

    # ---------------------------------------------------------------- running
    def fit(
        self,
        X: object,
        y: object,
        *,
        rng: np.random.Generator,
        delta: float | None = None,
        accountant: PrivacyAccountant | None = None,
    ) -> DPSGDFit:
        """Run DP-SGD on ``(X, y)``, recording every step in a privacy accountant.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Features, finite.
        y : array_like, shape (n,)
            Targets (linear), labels in {0, 1} or {-1, +1} (logistic), or class
            indices in ``{0, ..., n_classes - 1}`` (softmax).
        rng : numpy.random.Generator
            Source of the batches and of the noise.
        delta : float, optional
            In (0, 1): report the epsilon spent after each epoch at this delta.
        accountant : PrivacyAccountant, optional
            Ledger to feed (default: a new one).  With a budget (a privacy filter) the
            fit stops with :class:`~dpacct.accountant.BudgetExceededError` before a step that
            would overspend.

        Returns
        -------
        DPSGDFit
            The averaged (or last) iterate, the accountant and ``epsilon_per_epoch``.
        """
        rng = check_rng(rng)
        names = feature_names(X)
        X, yy = _check_data(X, y, self.loss, n_classes=self.n_classes)
        coding = binary_coding(y) if self.loss == "logistic" else "01"
        if delta is not None:
            delta = check_delta(delta, what="DP-SGD (a subsampled Gaussian)")
        if accountant is None:
            accountant = PrivacyAccountant()
        elif not isinstance(accountant, PrivacyAccountant):
            raise TypeError(
                f"accountant must be a PrivacyAccountant, got {type(accountant).__name__}"
            )
        assert self.steps is not None
        n = X.shape[0]
        q = self.sample_rate
        Xa = _augment(X, self.fit_intercept)
        row_norms = np.linalg.norm(Xa, axis=1)
        shape = (Xa.shape[1],) if self.loss != "softmax" else (Xa.shape[1], self.n_classes)
        theta = np.zeros(shape)
        total = np.zeros_like(theta)
        scale = 1.0 / (q * n)
        ends = _epoch_ends(self.steps, q)
        eps_path: list[float] = []
        next_end = 0
        label = "clipped gradient sum"
        step_mechanism = self.step_mechanism
        session = self.releases(rng)
        for t in range(1, self.steps + 1):
            # the ledger records the planned mechanism itself, before the step runs
            accountant.record(step_mechanism)
            batch = session.poisson_sample(label, n)
            if batch.any():
                g = _clipped_gradient_sum(Xa[batch], yy[batch], theta, self.loss, self.clip,
                                          row_norms[batch])
            else:
                g = np.zeros_like(theta)
            g = session.release(label, g)
            step = g * scale + _l2_gradient(theta, self.l2, self.fit_intercept)
            theta = _project(theta - self.learning_rate * step, self.theta_bound)
            total += theta
            if t == ends[next_end]:
                if delta is not None:
                    eps_path.append(float(accountant.epsilon(delta=delta)))
                next_end += 1
        session.finish()
        final = total / self.steps if self.average else theta
        model = _to_model(final, self.fit_intercept, self.loss, coding)
        return DPSGDFit(
            coef=model.coef,
            intercept=model.intercept,
            loss=model.loss,
            label_coding=coding,
            epoch_steps=ends,
            epsilon_per_epoch=None if delta is None else np.array(eps_path),
            delta=delta,
            accountant=accountant,
            feature_names_in_=names,
        )
