"""The sympy symbols of Section 2 and the appendices, named as the paper names them.

Assumptions follow Assumption ass2 and the theorems: step sizes ``gamma, beta > 0``; the
Lipschitz constants ``L_1, L_2^*, ..., L_5^*``, the ES constants ``A_0, B_0, C_0, A, C`` and
the gaps ``delta_0``, ``M_0'`` are ``>= 0``; the weak-convexity constant ``l`` is any real.
Only :mod:`stam.theory.symbolic.chain`, :mod:`stam.theory.symbolic.constants` and the code generator import this
(sympy is never imported by ``stam stepsize``).
"""

from __future__ import annotations

import sympy as sp

# step sizes and horizon
gamma = sp.Symbol("gamma", positive=True)
beta = sp.Symbol("beta", positive=True)
T = sp.Symbol("T", positive=True)
eps = sp.Symbol("epsilon", positive=True)
t = sp.Symbol("t", integer=True, nonnegative=True)
omega_m1 = sp.Symbol("omega_{-1}", positive=True)

# Assumption ass2 (a1)-(a3) and the weak-convexity constant l
L1 = sp.Symbol("L_1", nonnegative=True)
L2 = sp.Symbol("L_2^*", nonnegative=True)
L3 = sp.Symbol("L_3^*", nonnegative=True)
L4 = sp.Symbol("L_4^*", nonnegative=True)
L5 = sp.Symbol("L_5^*", nonnegative=True)
L = sp.Symbol("L", positive=True)
l = sp.Symbol("l", real=True)

# Expected smoothness: Assumption ass3 (A0, B0, C0) and the combined constants (A, C)
A0 = sp.Symbol("A_0", nonnegative=True)
B0 = sp.Symbol("B_0", nonnegative=True)
C0 = sp.Symbol("C_0", nonnegative=True)
A = sp.Symbol("A", nonnegative=True)
C = sp.Symbol("C", nonnegative=True)
gap = sp.Symbol("Delta_GH", nonnegative=True)  # (G+H)^inf - G^inf - H^inf  (Lemma ES-GH)
delta_inf = sp.Symbol("Delta^inf", nonnegative=True)  # Lemma es-lemma
m_v = sp.Symbol("m", nonnegative=True)  # max_i L_1^i E[v_i^2]  (Lemma es-lemma)
N = sp.Symbol("N", integer=True, positive=True)
b = sp.Symbol("b", integer=True, positive=True)

# Lemma conv-lemma / Theorem conv
M = sp.Symbol("M", positive=True)
K1 = sp.Symbol("K_1", real=True)
K2 = sp.Symbol("K_2", positive=True)
delta0 = sp.Symbol("delta_0", nonnegative=True)
M0 = sp.Symbol("M_0'", nonnegative=True)

# network specialisation H = (lam/2)||x - y||^2
lam = sp.Symbol("lambda", positive=True)
