"""Formulas as MathML (sympy's presentation printer) and LaTeX (sympy's LaTeX printer), and a
whitelist sanitiser for MathML read back from a result file (``stam report``): nothing but
MathML presentation elements, a few harmless attributes and escaped text reaches the HTML.
No JavaScript, no network: browsers render ``<math>`` natively."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from html.entities import html5

#: MathML presentation elements that may appear in the report
ELEMENTS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt", "mroot",
    "mfenced", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom", "semantics",
})
#: attributes kept (values escaped); everything else (on*, href, style, ...) is dropped
ATTRIBUTES = frozenset({"mathvariant", "open", "close", "separators", "fence", "stretchy", "linethickness",
                        "display", "xmlns", "lspace", "rspace", "columnalign", "accent"})
MATHML_NS = "http://www.w3.org/1998/Math/MathML"


def mathml(expr) -> str:
    """``<math>`` of a sympy expression or relation (presentation MathML)."""
    from sympy.printing.mathml import mathml as _mathml

    body = _numeric_entities(_mathml(expr, printer="presentation"))
    return f'<math xmlns="{MATHML_NS}">{body}</math>'


def latex(expr) -> str:
    import sympy as sp

    return sp.latex(expr)


_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}


def _numeric_entities(text: str) -> str:
    """Named (HTML5) character references as numeric ones, which any XML parser reads; an unknown
    name is left as is (and makes :func:`sanitize` refuse the text)."""

    def sub(m):
        name = m.group(1)
        if name in _XML_ENTITIES:
            return m.group(0)
        chars = html5.get(name + ";")
        return "".join(f"&#{ord(ch)};" for ch in chars) if chars else m.group(0)

    return _ENTITY.sub(sub, text)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def sanitize(text: str, max_len: int = 200_000) -> str | None:
    """Re-emit MathML keeping only :data:`ELEMENTS` and :data:`ATTRIBUTES`, all text escaped;
    None if ``text`` is not well-formed MathML with a ``<math>`` root (the caller shows text)."""
    if not isinstance(text, str) or len(text) > max_len or "<!" in text or "<?" in text:
        return None  # no DTDs, entities or processing instructions
    try:
        root = ET.fromstring(_numeric_entities(text))
    except ET.ParseError:
        return None
    if _local(root.tag) != "math":
        return None

    def emit(el) -> str:
        tag = _local(el.tag)
        if tag not in ELEMENTS:
            return html.escape("".join(el.itertext()))
        attrs = "".join(f' {_local(k)}="{html.escape(v, quote=True)}"' for k, v in sorted(el.attrib.items())
                        if _local(k) in ATTRIBUTES and _local(k) != "xmlns")
        if tag == "math":
            attrs = f' xmlns="{MATHML_NS}"' + attrs
        inner = html.escape(el.text or "") + "".join(emit(c) + html.escape(c.tail or "") for c in el)
        return f"<{tag}{attrs}>{inner}</{tag}>"

    return emit(root)


__all__ = ["mathml", "latex", "sanitize", "ELEMENTS", "ATTRIBUTES"]
