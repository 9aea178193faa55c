"""Set-up shared by the Opacus integration tests: a toy data set and a linear model made
private by Opacus with dpacct's accountant (import after ``pytest.importorskip("opacus")``).
"""

from __future__ import annotations

import warnings

import torch
from opacus import PrivacyEngine
from torch.utils.data import TensorDataset

from dpacct.opacus import MECHANISM


def toy_data(n: int, features: int = 4) -> TensorDataset:
    """``n`` standard-normal rows (seed 0), labelled by the sign of the first feature."""
    x = torch.randn(n, features, generator=torch.Generator().manual_seed(0))
    return TensorDataset(x, (x[:, 0] > 0).float())


def make_private(loader, sigma: float, *, features: int = 4, lr: float = 0.5):
    """``(engine, model, optimizer, loader)``: a seeded ``Linear(features, 1)`` trained by
    SGD, made private on ``loader``'s own batches (``poisson_sampling=False``) at noise
    ``sigma`` and clipping norm 1, accounted by dpacct."""
    torch.manual_seed(0)
    model = torch.nn.Linear(features, 1)
    engine = PrivacyEngine(accountant=MECHANISM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(
            module=model,
            optimizer=torch.optim.SGD(model.parameters(), lr=lr),
            data_loader=loader,
            noise_multiplier=sigma,
            max_grad_norm=1.0,
            poisson_sampling=False,
        )
    return engine, model, opt, loader
