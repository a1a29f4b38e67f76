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


#: a formula whose text is longer than this many characters is laid out on several lines, broken
#: between its top-level terms (MathML has no automatic line breaking in browsers)
LINE_CHARS = 40


def mathml(expr) -> str:
    """``<math>`` of a sympy expression or relation (presentation MathML, :func:`_printer`); a
    long one (:data:`LINE_CHARS`) as a left-aligned table of lines, each holding whole top-level
    terms of a sum or of a relation's sides, so that it fits a table column."""
    printer = _printer()
    tokens = _tokens(expr)
    if len(str(expr)) <= LINE_CHARS or len(tokens) < 2:
        body = printer.doprint(expr)
    else:
        body = printer.lines(tokens, LINE_CHARS)
    return f'<math xmlns="{MATHML_NS}">{_numeric_entities(body)}</math>'


_REL = {"==": "=", ">=": "\u2265", "<=": "\u2264", "!=": "\u2260", "<": "<", ">": ">"}


def _tokens(expr) -> list[tuple[str | None, object]]:
    """``(operator before it, term)`` of every top-level term: the terms of a sum, or of each side of
    a relation with the relation's symbol before the right side's first term."""
    from sympy import Add
    from sympy.core.relational import Relational

    def terms(e, first_op):
        out = []
        for k, t in enumerate(e.as_ordered_terms() if isinstance(e, Add) else (e,)):
            if isinstance(e, Add) and k == 0 and t.could_extract_minus_sign():
                out.append(("\u2212", -t))
            elif k == 0:
                out.append((first_op, t))
            elif t.could_extract_minus_sign():
                out.append(("\u2212", -t))
            else:
                out.append(("+", t))
        return out

    if isinstance(expr, Relational) and expr.rel_op in _REL:
        return terms(expr.lhs, None) + terms(expr.rhs, _REL[expr.rel_op])
    if isinstance(expr, Add):
        return terms(expr, None)
    return [(None, expr)]


#: a symbol standing for an expectation, ``E[...]`` (``E[v_i]``, ``E[xi^2]``), or for a function
#: value, ``NAME(ARG)`` (``L_3(x)``): the toolkit's names of atomic quantities in the audit
_EXPECTATION = re.compile(r"^E\[(?P<inner>.+)\]$")
_APPLIED = re.compile(r"^(?P<head>[^()\[\]]+)\((?P<arg>[^()\[\]]+)\)$")


def _printer():
    """sympy's presentation MathML printer, with the names of the audit's atomic quantities laid
    out as mathematics: ``E[v_i]`` as E, a bracket, v with subscript i and a bracket (sympy would
    read ``E[v`` as the name and ``i]`` as its subscript), ``L_3(x)`` as L_3 applied to x, and a
    function named ``G_i`` as G with subscript i (sympy prints such a name as one lower-case
    identifier)."""
    from sympy import Symbol
    from sympy.printing.mathml import MathMLPresentationPrinter

    class Printer(MathMLPresentationPrinter):
        def _fenced(self, head, inner, left: str, right: str):
            """``head left inner right``, the fences at text size (not stretched to a
            subscript's height)."""
            mrow = self.dom.createElement("mrow")
            for part in (head, left, inner, right):
                if isinstance(part, str):
                    mo = self.dom.createElement("mo")
                    mo.setAttribute("stretchy", "false")
                    mo.appendChild(self.dom.createTextNode(part))
                    part = mo
                mrow.appendChild(part)
            return mrow

        def _mi(self, text: str):
            mi = self.dom.createElement("mi")
            mi.appendChild(self.dom.createTextNode(text))
            return mi

        def _print_Symbol(self, sym, style="plain"):
            m = _EXPECTATION.match(sym.name)
            if m:
                return self._fenced(self._mi("E"), self._print_Symbol(Symbol(m["inner"])), "[", "]")
            m = _APPLIED.match(sym.name)
            if m:
                return self._fenced(self._print_Symbol(Symbol(m["head"])), self._print_Symbol(Symbol(m["arg"])), "(", ")")
            return super()._print_Symbol(sym, style)

        def lines(self, tokens, width: int) -> str:
            """The tokens of :func:`_tokens` as an ``mtable`` of left-aligned lines of at most
            about ``width`` characters (a term longer than that has a line of its own)."""
            rows, row, used = [], [], 0
            for op, term in tokens:
                n = len(str(term)) + (2 if op else 0)
                if row and used + n > width:
                    rows.append(row)
                    row, used = [], 0
                row.append((op, term))
                used += n
            rows.append(row)
            table = self.dom.createElement("mtable")
            table.setAttribute("columnalign", "left")
            for row in rows:
                tr, td, mrow = (self.dom.createElement(t) for t in ("mtr", "mtd", "mrow"))
                for op, term in row:
                    if op:
                        mo = self.dom.createElement("mo")
                        mo.appendChild(self.dom.createTextNode(op))
                        mrow.appendChild(mo)
                    mrow.appendChild(self._print(term))
                td.appendChild(mrow)
                tr.appendChild(td)
                table.appendChild(tr)
            return table.toxml()

        def _print_Function(self, e):
            from sympy.core.function import AppliedUndef

            if isinstance(e, AppliedUndef):  # an undefined function such as G_i(x)
                args = self.dom.createElement("mrow")
                for k, a in enumerate(e.args):
                    if k:
                        comma = self.dom.createElement("mo")
                        comma.appendChild(self.dom.createTextNode(","))
                        args.appendChild(comma)
                    args.appendChild(self._print(a))
                return self._fenced(self._print_Symbol(Symbol(type(e).__name__)), args, "(", ")")
            return super()._print_Function(e)

    return Printer()


def broken_names(math: str) -> list[str]:
    """What in a ``<math>`` element is notation read wrongly: an identifier holding ``_``, ``^`` or
    a bracket (a name sympy did not lay out), or a sub- or superscript whose parts leave brackets
    unbalanced (``E[v`` with subscript ``i]``).  Empty for a well-formed formula."""
    root = ET.fromstring(math)
    found = []
    for el in root.iter():
        tag = _local(el.tag)
        if tag == "mi" and el.text and any(c in el.text for c in "_^[]()"):
            found.append(f"identifier {el.text!r}")
        if tag in ("msub", "msup", "msubsup"):
            parts = ["".join(k.itertext()) for k in el]
            if any(t.count("[") != t.count("]") or t.count("(") != t.count(")") for t in parts):
                found.append(f"{tag} of {parts!r}")
    return found


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
