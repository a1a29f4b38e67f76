"""``stam.theory.worstcase``, exact worst cases and Lyapunov certificates: the performance-estimation problems of
STAM and of the baselines (:mod:`~stam.theory.worstcase.pep`, solved by :mod:`~stam.theory.worstcase.pepsolve`;
:mod:`~stam.theory.worstcase.methods_pep`, :mod:`~stam.theory.worstcase.methods_region`), the one-step Lyapunov SDPs
(:mod:`~stam.theory.worstcase.sdpstep`, :mod:`~stam.theory.worstcase.sdp`, :mod:`~stam.theory.worstcase.templates`),
their exact proofs (:mod:`~stam.theory.worstcase.rational`, :mod:`~stam.theory.worstcase.sdpproof`), the region
search (:mod:`~stam.theory.worstcase.lyapunov`), potentials with history (:mod:`~stam.theory.worstcase.history`),
the onset of unboundedness (:mod:`~stam.theory.worstcase.onset`), and certificates as files with their independent
checker and closed-form family (:mod:`~stam.theory.worstcase.certificates`,
:mod:`~stam.theory.worstcase.certcheck`, :mod:`~stam.theory.worstcase.family`): what ``stam pep`` runs.

The middle room of ``stam.theory``: it imports the floor and :mod:`stam.theory.symbolic`, never
:mod:`stam.theory.papercheck` (``tests/test_layering.py``)."""
