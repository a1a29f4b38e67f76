"""``stam.theory.papercheck``, the paper audit (``stam paper-check``): one small function per audited item
(:mod:`stam.theory.papercheck.items`), the audit that evaluates them and writes its outputs
(:mod:`~stam.theory.papercheck.audit`), its store of earlier findings (:mod:`~stam.theory.papercheck.store`), the
adversarial searches on actual runs of Algorithm 1 (:mod:`~stam.theory.papercheck.chainsearch`,
:mod:`~stam.theory.papercheck.statementsearch`, over the classes of :mod:`~stam.theory.papercheck.problemclasses`)
and the corrected statements (:mod:`~stam.theory.papercheck.corrected`).

The top room of ``stam.theory``: it may import the floor, :mod:`stam.theory.symbolic` and
:mod:`stam.theory.worstcase`; no room imports it (``tests/test_layering.py``)."""
