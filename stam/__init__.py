"""STAM toolkit: the reference toolkit for Bian, Liu, Zhang, "A stochastic three-block
splitting algorithm and its application to quantized deep neural networks".

Subpackages (one namespace, mapped from the repository's top-level folders):

- ``stam.theory``    symbolic constants, the paper audit, admissible step sizes, PEP worst cases
- ``stam.synthetic`` nonconvex three-block problems with known constants, rate experiments
- ``stam.dnn``       binary-weight network training (STAM, BinaryConnect, BinaryRelax, PSGD)
- ``stam.figures``   figures, tables, the HTML report and ``stam demo``

Shared here: the STAM iteration (``stam.steps``, the update rules that run it in ``stam.rules``), its standard operators
(``stam.operators``, ``stam.quantize``), errors and atomic file output.
Importing ``stam`` imports neither torch nor any heavy dependency.
"""

__version__ = "0.1.0"
