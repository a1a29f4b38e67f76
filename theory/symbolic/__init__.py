"""``stam.theory.symbolic``, the formulas: the symbols of Section 2 (:mod:`~stam.theory.symbolic.symbols`), the
inequality chain of Lemma par2 (:mod:`~stam.theory.symbolic.chain`) and every constant and condition derived from
its defining condition in sympy (:mod:`~stam.theory.symbolic.constants`); the numpy layer generated from them
(:mod:`~stam.theory.symbolic.codegen` writes :mod:`~stam.theory.symbolic.numeric_generated`, read through
:mod:`~stam.theory.symbolic.numeric`); tiny seeded STAM runs on them (:mod:`~stam.theory.symbolic.stamruns`);
``stam stepsize`` (:mod:`~stam.theory.symbolic.stepsize`); formulas as MathML and LaTeX
(:mod:`~stam.theory.symbolic.mathml`).

The lowest room of ``stam.theory``: it imports only the floor (:mod:`stam.theory.params`,
:mod:`stam.theory.settings`), never :mod:`stam.theory.worstcase` or :mod:`stam.theory.papercheck`
(``tests/test_layering.py``)."""
