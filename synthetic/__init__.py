"""``stam.synthetic``: nonconvex three-block problems with known constants on which STAM is
run and held against Theorem conv and Theorem conv-rate.

The public API of a problem of one's own (:mod:`stam.synthetic.api`: the protocols ``FiniteSum``,
``Coupling``, ``Penalty``, the building blocks ``TorchFiniteSum``, ``TorchCoupling``, ``compose``
and ``theorem_check``) is re-exported here, loaded on first use (so that ``stam --help``, which
imports this package's light ``cli``, imports no torch)."""

_API = ("FiniteSum", "Coupling", "Penalty", "TorchFiniteSum", "TorchCoupling", "compose", "theorem_check")


def __getattr__(name):
    if name in _API:
        from stam.synthetic import api

        return getattr(api, name)
    raise AttributeError(f"module 'stam.synthetic' has no attribute {name!r}")


__all__ = list(_API)
