"""STAM for binary-weight networks, eq. (alg:stamm) as derived from Algorithm 1 (eq. (algalg1)).

Model eq. (stam): ``min_{W, W~} L(W) + (lam/2)||W - W~||^2 + I_Q(W~)``, i.e. problem (model) with
``y = W`` (the network's float weights, the parameters), ``G = L``, ``H(x, y) = (lam/2)||x - y||^2``
(:class:`stam.operators.QuadraticCoupling`) and ``F = I_Q`` (:class:`stam.operators.IndicatorQ`,
one block per layer).  The step is THE shared update :func:`stam.steps.stam_step` with the
paper's names ``x = U``, ``u = V``, ``z = X``::

    W^{t+1} = ((beta - lam) W^t + lam U^t - grad L(W^t)) / beta      # eq. (algy); U^t, not W~^t
    U^{t+1} = (gamma lam W^{t+1} + X^t) / (gamma lam + 1)            # eq. (algx)
    V^{t+1} = Proj_Q(2 U^{t+1} - X^t)                                # eq. (algu)
    X^{t+1} = X^t + V^{t+1} - U^{t+1}                                # eq. (algz)

(The printed eq. (alg:stamm) has ``lam W~^t`` and ``grad L(W^T)`` in the first line; Algorithm 1
gives ``lam U^t`` = ``lam x^t`` and ``grad L(W^t)``, see ``stam paper-check``.)  The binary weights
are ``V`` (in Q); the float weights are ``W``, which the parameters hold.  Float parameters take
the y-step with H = 0: ``p <- p - (g + wd p) / beta``.

Start rule (:func:`stam.steps.stam_init`, ``z^{-1} = W^0``): ``U^0 = W^0``, ``V^0 = Proj_Q(W^0)``,
``X^0 = V^0``.  Optimiser (:class:`stam.dnn.optim.STAM`): state ``U``, ``V``, ``X`` per quantised
parameter; its ``lr`` is ``1/beta``, kept in step with ``beta`` (a ``torch.optim.lr_scheduler``
sets ``lr``); ``stationarity_proxies()`` gives the last step's :meth:`STAMRule.proxies`.
"""

from __future__ import annotations

from stam.operators import Composite, IndicatorQ, QuadraticCoupling
from stam.rules.base import UpdateRule
from stam.steps import STAMState, as_batch_scalar, stam_finish, stam_half_step, stam_init, stam_point, stam_step


def _ops(lam, q=None) -> Composite:
    """The operators of eq. (stam): H = (lam/2)||x - y||^2, F = I_Q (``q``; default: one block,
    one layer)."""
    return Composite(QuadraticCoupling(lam), q if q is not None else IndicatorQ(None))


class STAMRule(UpdateRule):
    """eq. (alg:stamm) for R runs: one :func:`stam.steps.stam_step` over all layers with ``lam``,
    ``gamma``, ``beta`` per run, started by :func:`stam.steps.stam_init`.  Forward pass and float
    weights ``W`` (= ``y``), binary weights ``V`` (= ``u``)."""

    name, label, equation, color, marker = "stam", "STAM", "eq. (alg:stamm)", "blue", "o"
    hyper = ("gamma", "lam", "beta")
    #: STAM with F = I_Q depends on (gamma, lam, beta) only through its y-step 1/beta, the pull lam/beta of
    #: the y-step towards x (eq. (algy)) and gamma*lam (eq. (algx)): it is searched in those, the step on BC's
    #: lr range, gamma*lam and lam/beta over the CIFAR-10 (gamma, lam) map's working band with a margin
    #: (binary networks train at gamma*lam in [3, 30] with lam/beta in [0.01, 0.3], at steps 0.01 and 0.1:
    #: benchmarks/results/cifar10_gamma_lambda_map_cpu; on digits signs move from gamma*lam = 1.5 on).
    #: The paper's Our1-3 start at gamma*lam = 4 and step 1e-3 (inside) with lam/beta = 5e-4 (below the range:
    #: at this scale the binary network does not follow the float one there); they run as the paper's rows
    search_space = {"step": {"log_uniform": [1e-4, 1.0], "monomial": {"beta": -1}},
                    "gamma_lam": {"log_uniform": [1.0, 30.0], "monomial": {"gamma": 1, "lam": 1}},
                    "lam_over_beta": {"log_uniform": [3e-3, 1.0], "monomial": {"lam": 1, "beta": -1}}}
    #: four presets run STAM (Table para's Our1-3, Section sub:3.3's Our3): its default is Our3, Table para's
    #: last STAM row, on CIFAR-100 Section sub:3.3's
    paper_preset = {"cifar100": "our3-cifar100", "default": "our3"}
    theorem = True
    step_size = ("beta", -1)
    order = 0
    paper_order = 3
    optimizer_name = "STAM"
    arguments = ("gamma", "lam", "beta", ("weight_decay", 0.0))
    positive = ("gamma", "lam", "beta")
    state_type = STAMState
    state_keys = (None, "U", "V", "X")  # y = W is the parameter

    #: Algorithm 1 (eq. (algalg1)) with the full gradient; its natural measure is Theorem conv's S_t
    theory_params = ("gamma", "lam", "beta")
    theory_measure_text = "S_t = ||grad G(y^t) + lam (y^t - u^t)||^2 + ||lam (u^t - y^t) + (x^t - z^t)/gamma||^2"

    def theory_start(self, x0, hyper, q):
        return stam_init(x0, _ops(hyper["lam"], q), hyper["gamma"])

    def theory_step(self, state, grad, hyper, q, t):
        return stam_step(state, grad, _ops(hyper["lam"], q), hyper["gamma"], hyper["beta"])

    def theory_measure(self, state, grad, hyper):
        """Theorem conv's ``S_t`` with ``g_F(u^t) = (x^t - z^t)/gamma``, the subgradient of F that eq. (algu)
        produced (eq. (algz): ``2 x^t - z^{t-1} - u^t = x^t - z^t``)."""
        lam, gamma = hyper["lam"], hyper["gamma"]
        y, x, u, z = state
        return (grad + lam * (y - u)) ** 2 + (lam * (u - y) + (x - z) / gamma) ** 2

    def init(self, w, hyper, q):
        return stam_init(w, _ops(as_batch_scalar(hyper["lam"], w), q), as_batch_scalar(hyper["gamma"], w))

    def step(self, state, grad, hyper, q):
        r = lambda k: as_batch_scalar(hyper[k], state.y)  # noqa: E731
        return stam_step(state, grad, _ops(r("lam"), q), r("gamma"), r("beta"))

    def before_projection(self, state, grad, hyper):
        r = lambda k: as_batch_scalar(hyper[k], state.y)  # noqa: E731
        return stam_half_step(state, grad, _ops(r("lam")), r("gamma"), r("beta"))

    def projection_point(self, half, hyper):
        return stam_point(half)

    def after_projection(self, half, projected, hyper):
        return stam_finish(half, projected)

    def forward_weights(self, state):
        return state.y

    def binary_weights(self, state, q):
        return state.u

    def float_weights(self, state):
        return state.y

    def float_step(self, p, grad, buf, hyper):
        return p - grad / as_batch_scalar(hyper["beta"], p), buf

    def proxies(self, state, new, grad, hyper):
        """``||grad L(W^t) + lam (W^t - U^t)||^2`` (the stochastic y-gradient of eq. (algy)) and
        ``||X^{t+1} - X^t||^2 / gamma^2`` (eq. (algz)), per run, in float64 (the norms taken in float32).
        One temporary for both: the y-gradient is formed in place in ``W^t - U^t`` (the same numbers as
        ``grad + lam * (W - U)``: each operation is the same, addition and multiplication commutative)
        and the difference of eq. (algz) is written over it; on the CPU's 84,480 weights of the digits
        MLP, 86 us a step against 127 us with a temporary per operation."""
        import torch

        dims = tuple(range(1, grad.dim()))
        # the y-gradient of eq. (algy) as it stands: also where beta is infinite (a scheduler's lr = 0, no step in y),
        # where beta (y^t - y^{t+1}) would be inf * 0
        work = torch.sub(state.y, state.x)
        grad_y = torch.linalg.vector_norm(work.mul_(as_batch_scalar(hyper["lam"], grad)).add_(grad), dim=dims).double()
        dz = torch.linalg.vector_norm(torch.sub(new.z, state.z, out=work), dim=dims).double()
        return grad_y * grad_y, (dz / hyper["gamma"].double()) ** 2


RULE = STAMRule()

__all__ = ["STAMRule", "RULE"]
