"""A problem that is not built in: least squares with a cosine term, coupled to binary weights.

    G_i(y) = (1/2)(a_i^T y - b_i)^2 + 0.5 sum_j cos(y_j),   H(x, y) = (1/2)||x - y||^2,   F = I_Q.

G is given only as a per-sample torch function: its gradients come from autograd and its
constants L1, L1^i, G^inf are estimated.  The cosine term makes G_i >= -0.5 n, a certified lower
bound we can state."""

import torch

from stam.synthetic.api import TorchFiniteSum, compose
from stam.synthetic.couplings import Quadratic
from stam.synthetic.penalties import QuantizedIndicator


def loss(y, a, b):
    """The part of G_i(y) that depends on the sample (a_i, b_i)."""
    return 0.5 * (a @ y - b) ** 2


def cosine(y):
    """The part of every G_i that does not: computed once per point, not N times."""
    return 0.5 * torch.cos(y).sum()


def build(n=16, N=200, b=10, seed=0, lam=1.0):
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(N, n, generator=gen, dtype=torch.float64) / n**0.5
    targets = A @ torch.sign(torch.randn(n, generator=gen, dtype=torch.float64))
    G = TorchFiniteSum(loss, (A, targets), n, reg=cosine, inf_lower_bound=-0.5 * n, inf_i_lower_bound=-0.5 * n)
    y0 = torch.randn(n, generator=gen, dtype=torch.float64)
    return compose(G, Quadratic(lam), QuantizedIndicator(torch.zeros(n, dtype=torch.long)), b=b, y0=y0, name="cos-regression", quantised=True)


problem = build()
