"""``stam.dnn``: binary-weight network training with STAM, BinaryConnect, BinaryRelax and PSGD
(Section 3 of the paper).

The optimisers for a training loop of your own (``torch.optim`` conventions)::

    from stam.dnn import STAM, param_groups
    opt = STAM(param_groups(model), gamma=8, lam=0.5, beta=20)

:func:`param_groups` puts every conv and linear weight into the quantised group (one block of Q
per layer, eq. (eq01)) and keeps biases and BatchNorm float.  These names are loaded on first use,
so ``import stam.dnn`` (and the command line) imports no torch.
"""

#: public name -> (module, attribute), imported on first access
_EXPORTS = {
    "STAM": ("stam.dnn.optim", "STAM"),
    "BinaryConnect": ("stam.dnn.optim", "BinaryConnect"),
    "BinaryRelax": ("stam.dnn.optim", "BinaryRelax"),
    "PSGD": ("stam.dnn.optim", "PSGD"),
    "param_groups": ("stam.dnn.models", "param_groups"),
    "build_model": ("stam.dnn.models", "build_model"),
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'stam.dnn' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS])


__all__ = list(_EXPORTS)
