"""The update rules, one module each: ``stam/rules/NAME.py`` holds the rule's declaration (name,
label, equation, hyperparameters with their search space, colour, default preset), its batched
form and what its ``torch.optim`` form needs, as one :class:`UpdateRule` bound to the module-level
name ``RULE`` (its pure step in :mod:`stam.steps`, or in the module itself).  The modules of this
package are found by listing it, so a new optimiser is one new module here plus its preset in
``dnn/presets.json`` (docs/contributing.md); a rule kept outside the tree is added with :func:`register`.

Read by the network catalog (:data:`stam.dnn.catalog.ALGORITHMS`: ``stam train/tune``, presets,
the trainer), the generic optimiser (:mod:`stam.dnn.optim`), the synthetic comparison
(:mod:`stam.synthetic.methods`) and every figure's colours and labels.  Imports no torch.
"""

from __future__ import annotations

import importlib
import pkgutil

from stam.registry import lookup
from stam.rules.base import UpdateRule

_REGISTERED: dict[str, UpdateRule] = {}


def register(rule_: UpdateRule) -> UpdateRule:
    """Add ``rule_`` (an :class:`UpdateRule` instance) to :data:`RULES`; the rules of this
    package are added as it is imported.  ValueError for a name taken by another rule."""
    if not isinstance(rule_, UpdateRule) or not rule_.name:
        raise ValueError(f"register(): expected an UpdateRule instance with a name, got {rule_!r}")
    held = _REGISTERED.get(rule_.name)
    if held is not None and held is not rule_:
        raise ValueError(f"update rule {rule_.name!r} is declared twice ({type(held).__module__} and {type(rule_).__module__})")
    _REGISTERED[rule_.name] = rule_
    _update()
    return rule_


def _update() -> None:
    global RULES, NAMES
    RULES = tuple(sorted(_REGISTERED.values(), key=lambda r: (r.order, r.name)))
    NAMES = tuple(r.name for r in RULES)


def rule(name: str) -> UpdateRule:
    """The rule called ``name``; ``KeyError`` naming the known ones."""
    return lookup(RULES, name, "update rule")


#: every rule, in the paper's order (:attr:`UpdateRule.order`), and their names
RULES: tuple = ()
NAMES: tuple = ()

for _info in pkgutil.iter_modules(__path__):
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    if isinstance(getattr(_module, "RULE", None), UpdateRule):
        register(_module.RULE)

__all__ = ["UpdateRule", "RULES", "NAMES", "rule", "register"]
