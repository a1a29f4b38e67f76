"""``stam.theory``: the constants and conditions of Section 2 and the appendices, derived in
sympy from their defining conditions, a vectorised numeric layer generated from them, the
paper audit (``stam paper-check``), admissible step sizes (``stam stepsize``) and exact worst
cases by performance estimation (``stam pep``) and the region certified by automated Lyapunov
search (``stam pep --region``, :mod:`stam.theory.worstcase.lyapunov`).  Imports no torch."""
