"""Formulas as MathML (sympy's presentation printer) and LaTeX (sympy's LaTeX printer), and a
whitelist sanitiser for MathML read back from a result file (``stam report``): nothing but
MathML presentation elements, a few harmless attributes and escaped text reaches the HTML.
No JavaScript, no network: browsers render ``<math>`` natively."""

from __future__ import annotations

import functools
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
                        "display", "xmlns", "lspace", "rspace", "columnalign", "accent", "movablelimits",
                        "displaystyle"})
MATHML_NS = "http://www.w3.org/1998/Math/MathML"


#: a formula whose text is longer than this many characters is laid out on several lines, broken
#: between its top-level terms (MathML has no automatic line breaking in browsers)
LINE_CHARS = 30


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
    from sympy import Add, And
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

    if isinstance(expr, And) and all(isinstance(a, Relational) and a.rel_op in _REL for a in expr.args):
        out = []
        for a in expr.args:  # each relation's terms, the next relation after a "and" sign
            toks = _tokens(a)
            out += [("\u2227" if out and k == 0 else op, t) for k, (op, t) in enumerate(toks)]
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
#: a norm, ``||X||`` or ``E||X||`` (an expected norm), with scripts after it (``E||g~||^2``)
_NORM = re.compile(r"^(?P<head>E)?\|\|(?P<inner>[^|]+)\|\|(?P<scripts>[_^].*)?$")
#: an operator with limits and its index range: ``min_t``, ``min_{0<=t<=T-1}`` (the range under it)
_LIMITS = re.compile(r"^(?P<op>min|max|sup|inf|sum|prod|lim|argmin|argmax)_(?P<under>\{[^{}]+\}|[^_^{}\s]+)$")
#: a quotient in a name (``mu/2``)
_QUOTIENT = re.compile(r"^(?P<num>[^/\s]+)/(?P<den>[^/\s]+)$")
#: an identifier with an accent, ``g~`` (tilde) or sympy's modifier suffixes ``ghat``, ``gbar``,
#: ``gtilde`` (the rest of the name: its scripts)
_ACCENTED = re.compile(r"^(?P<base>[A-Za-z]+?)(?P<acc>~|hat|bar|tilde)(?P<rest>(?:[_^'].*)?)$")
#: the accent characters (spacing modifier letters: no text node of a formula holds a literal ``~``)
ACCENTS = {"~": "\u02dc", "tilde": "\u02dc", "hat": "\u02c6", "bar": "\u00af"}
#: the text of an index (``0<=t<=T-1``, ``t+1``) as MathML tokens: numbers, names, operators
_INDEX_TOKEN = re.compile(r"\s*(?:(?P<mn>\d+(?:\.\d+)?)|(?P<mi>[A-Za-z]+|\*)|(?P<mo><=|>=|!=|[-+<>=,:']))")
_INDEX_OPS = {"<=": "\u2264", ">=": "\u2265", "!=": "\u2260", "-": "\u2212", "'": "\u2032"}
#: characters that make a name notation of its own (else sympy's reading of ``name_sub^sup`` is used)
_NOTATION = set("~{}'|/ ([")


def _accented(name: str):
    """The match of :data:`_ACCENTED` where the accented base is one letter or a Greek name."""
    from sympy.printing.pretty.pretty_symbology import greek_unicode

    m = _ACCENTED.match(name)
    return m if m and (len(m["base"]) == 1 or m["base"] in greek_unicode) else None


def _split_scripts(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """``base`` and its ``[(kind, script)]``, kind ``_``, ``^`` or ``'`` (a prime), of a name such as
    ``M'_{t+1}``, ``M_0'``, ``delta_{t+1}``, ``L_2^*``; None where a brace is not closed."""
    m = re.match(r"[^_^'{}]*", text)
    base, rest, scripts = m.group(0), text[m.end():], []
    while rest:
        kind = rest[0]
        if kind == "'":
            scripts.append(("'", "\u2032"))
            rest = rest[1:]
            continue
        if kind not in "_^":
            return None
        rest = rest[1:]
        if rest.startswith("{"):
            depth = 0
            for i, ch in enumerate(rest):
                depth += (ch == "{") - (ch == "}")
                if depth == 0:
                    break
            if depth:
                return None
            scripts.append((kind, rest[1:i]))
            rest = rest[i + 1:]
        else:
            m = re.match(r"[^_^'{}]+", rest)
            if m is None:
                return None
            scripts.append((kind, m.group(0)))
            rest = rest[m.end():]
    return base, scripts


def _printer():
    """sympy's presentation MathML printer, with the names of the audit's atomic quantities laid
    out as mathematics (:meth:`_Notation.notation`): ``E[v_i]`` as E, a bracket, v with subscript i
    and a bracket (sympy would read ``E[v`` as the name and ``i]`` as its subscript), ``L_3(x)`` as
    L_3 applied to x, ``E||g~||^2`` as E, a norm of g with a tilde accent, squared,
    ``min_{0<=t<=T-1} S_t`` as min with the index range under it (not a subscript) followed by
    S_t, ``M'_{t+1}`` as M with subscript t + 1 and a prime, and a function named ``G_i`` as G with
    subscript i (sympy prints such a name as one lower-case identifier)."""
    return _printer_class()()


@functools.cache
def _printer_class():
    """:class:`_Notation` over sympy's printer (made on first use: importing this module does not
    import sympy)."""
    from sympy.printing.mathml import MathMLPresentationPrinter

    return type("Printer", (_Notation, MathMLPresentationPrinter), {})


def _greek(name: str) -> str:
    from sympy.printing.pretty.pretty_symbology import greek_unicode

    return greek_unicode.get(name, name)


class _Notation:
    """The methods :func:`_printer` adds to sympy's ``MathMLPresentationPrinter`` (the class after
    this one in the printer's order, reached by ``super()``): DOM helpers, the toolkit's names
    (:meth:`notation`, one method per kind of name), products, functions and broken lines."""

    # -- DOM helpers
    def _fenced(self, head, inner, left: str, right: str):
        """``head left inner right``, the fences at text size (not stretched to a
        subscript's height)."""
        mrow = self.dom.createElement("mrow")
        for part in (head, left, inner, right):
            if part is None:
                continue
            if isinstance(part, str):
                part = self._token("mo", part, stretchy="false")
            mrow.appendChild(part)
        return mrow

    def _token(self, tag: str, text: str, **attrs):
        el = self.dom.createElement(tag)
        for k_, v in attrs.items():
            el.setAttribute(k_, v)
        el.appendChild(self.dom.createTextNode(text))
        return el

    def _mi(self, text: str):
        return self._token("mi", text)

    def _row(self, parts):
        if len(parts) == 1:
            return parts[0]
        mrow = self.dom.createElement("mrow")
        for part in parts:
            mrow.appendChild(part)
        return mrow

    def _node(self, tag: str, *children):
        el = self.dom.createElement(tag)
        for c in children:
            el.appendChild(c)
        return el

    def _plain_symbol(self, name: str):
        """sympy's own layout of a plain name (``delta_0``: a Greek letter with a subscript)."""
        from sympy import Symbol

        return super()._print_Symbol(Symbol(name))

    # -- the toolkit's names
    def index(self, text: str):
        """An index or script (``0<=t<=T-1``, ``t+1``, ``inf``, ``*``) as tokens: numbers as
        ``mn``, names as ``mi`` (Greek names as letters), relations and signs as ``mo``."""
        parts, pos, text = [], 0, text.strip()
        if any(c in text for c in "_^{}|[("):
            return self.notation(text)
        while pos < len(text):
            m = _INDEX_TOKEN.match(text, pos)
            if m is None:  # anything else: the rest as one identifier
                parts.append(self._mi(text[pos:]))
                break
            pos = m.end()
            kind = m.lastgroup
            tok = m.group(kind)
            if kind == "mi":
                parts.append(self._mi(_greek(tok)))
            else:
                parts.append(self._token(kind, _INDEX_OPS.get(tok, tok)))
        return self._row(parts or [self._mi(text)])

    def notation(self, name: str):
        """One of the toolkit's names of an atomic quantity as MathML (see :func:`_printer`): the
        first kind of name of :data:`_NOTATION_KINDS` that matches, else the name split into its
        base and scripts."""
        if name.isdigit():
            return self._token("mn", name)
        parts = name.split()
        if len(parts) > 1:
            return self._row([self.notation(p) for p in parts])
        for match, method in _NOTATION_KINDS:
            m = match(name)
            if m:
                return getattr(self, method)(m)
        if not _NOTATION & set(name):
            return self._plain_symbol(name)
        split = _split_scripts(name)
        if split is None or not split[0]:
            return self._mi(name)
        base, scripts = split
        return self._scripted(self.notation(base) if _NOTATION & set(base) else self._plain_symbol(base), scripts)

    def _expectation(self, m):
        """``E[X]``: E and X in brackets."""
        return self._fenced(self._mi("E"), self.notation(m["inner"]), "[", "]")

    def _norm(self, m):
        """``||X||`` or ``E||X||``, with the scripts after the norm."""
        norm = self._fenced(None, self.notation(m["inner"]), "\u2016", "\u2016")
        norm = self._scripted(norm, _split_scripts(m["scripts"] or "")[1]) if m["scripts"] else norm
        return self._row(([self._mi("E")] if m["head"] else []) + [norm])

    def _limits(self, m):
        """``min_{0<=t<=T-1}``: the operator with its index range under it."""
        under = m["under"][1:-1] if m["under"].startswith("{") else m["under"]
        op = self._token("mo", {"sum": "\u2211", "prod": "\u220f"}.get(m["op"], m["op"]), movablelimits="false")
        return self._node("munder", op, self.index(under))

    def _applied(self, m):
        """``NAME(ARG)``: the name applied to its argument."""
        return self._fenced(self.notation(m["head"]), self.notation(m["arg"]), "(", ")")

    def _quotient(self, m):
        """``mu/2``: a fraction."""
        return self._node("mfrac", self.notation(m["num"]), self.notation(m["den"]))

    def _accent(self, m):
        """``g~_t``: the base letter under its accent, then its scripts."""
        base = self._mi(_greek(m["base"]))
        accented = self._node("mover", base, self._token("mo", ACCENTS[m["acc"]], stretchy="false"))
        accented.setAttribute("accent", "true")
        return self._scripted(accented, (_split_scripts(m["rest"]) or ("", []))[1])

    def _scripted(self, base, scripts):
        """``base`` with its sub- and superscripts (primes after the base), as ``msub``, ``msup``
        or ``msubsup``."""
        primes = [s for k_, s in scripts if k_ == "'"]
        if primes:  # a prime at text size beside its base (M'_0 as M-prime with subscript 0)
            base = self._row([base, self._token("mo", "".join(primes), lspace="0", rspace="0")])
        subs = [self.index(s) for k_, s in scripts if k_ == "_"]
        sups = [self.index(s) for k_, s in scripts if k_ == "^"]
        sub, sup = (self._row(subs) if subs else None), (self._row(sups) if sups else None)
        if sub is not None and sup is not None:
            return self._node("msubsup", base, sub, sup)
        if sub is not None:
            return self._node("msub", base, sub)
        if sup is not None:
            return self._node("msup", base, sup)
        return base

    # -- sympy's node kinds
    def _print_Mul(self, expr):
        """A product over a short denominator whose numerator is longer than a line
        (:data:`LINE_CHARS`) as a short fraction times the numerator's other factors,
        ``(2 beta (M0' + delta0) / T) (...)^T`` rather than one fraction as wide as the whole
        numerator (a fraction cannot be broken between lines)."""
        from sympy import Mul, S
        from sympy.printing.precedence import PRECEDENCE
        from sympy.simplify import fraction

        numer, denom = fraction(expr)
        if denom is S.One or len(str(numer)) <= LINE_CHARS or len(str(denom)) > LINE_CHARS // 2 \
                or not isinstance(numer, Mul) or expr.could_extract_minus_sign():
            return super()._print_Mul(expr)
        factors, head = list(numer.as_ordered_factors()), []
        while factors and (not head or len(str(Mul(*head, factors[0]))) <= LINE_CHARS // 2):
            head.append(factors.pop(0))
        if not factors:
            return super()._print_Mul(expr)
        mrow = self.dom.createElement("mrow")
        frac = self._node("mfrac", self._print(Mul(*head)), self._print(denom))
        mrow.appendChild(frac)
        for f in factors:
            mrow.appendChild(self._token("mo", "\u2062"))  # invisible times
            mrow.appendChild(self.parenthesize(f, PRECEDENCE["Mul"]))
        return mrow

    def _print_Symbol(self, sym, style="plain"):
        if style == "plain" and (_NOTATION & set(sym.name) or _LIMITS.match(sym.name) or _accented(sym.name)):
            return self.notation(sym.name)
        return super()._print_Symbol(sym, style)

    def _print_Function(self, e):
        from sympy import Symbol
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

    # -- a long formula on several lines
    def lines(self, tokens, width: int) -> str:
        """The tokens of :func:`_tokens` as an ``mtable`` of left-aligned lines of at most
        about ``width`` characters (a term longer than that has a line of its own)."""
        table = self.dom.createElement("mtable")
        table.setAttribute("columnalign", "left")
        for row in _line_rows(tokens, width):
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


#: the kinds of name :meth:`_Notation.notation` lays out, in the order tried: ``(match, method)``
_NOTATION_KINDS = (
    (_EXPECTATION.match, "_expectation"),
    (_NORM.match, "_norm"),
    (_LIMITS.match, "_limits"),
    (_APPLIED.match, "_applied"),
    (_QUOTIENT.match, "_quotient"),
    (_accented, "_accent"),
)


def _line_rows(tokens, width: int) -> list[list]:
    """The tokens of :func:`_tokens` grouped into lines of at most about ``width`` characters: each
    relation of a conjunction on its own line, a line not left with a lone short name."""
    rows, row, used = [], [], 0
    for op, term in tokens:
        n = len(str(term)) + (2 if op else 0)
        if row and ((used + n > width and used > width // 4) or op == "\u2227"):
            rows.append(row)
            row, used = [], 0
        row.append((op, term))
        used += n
    rows.append(row)
    return rows


def broken_names(math: str) -> list[str]:
    """What in a ``<math>`` element is notation read wrongly: an identifier holding ``_``, ``^``, a
    bracket, a brace, a bar, a tilde, a slash, a prime or a space (a name not laid out), a sub- or
    superscript whose parts leave brackets unbalanced (``E[v`` with subscript ``i]``), or an
    operator with limits (min, max, sum, ...) given its index as a subscript instead of an
    under-script (``min`` with subscript ``t S t``).  Empty for a well-formed formula."""
    root = ET.fromstring(math)
    found = []
    for el in root.iter():
        tag = _local(el.tag)
        if tag == "mi" and el.text and (any(c in el.text for c in "_^[](){}|~/'") or len(el.text.split()) > 1):
            found.append(f"identifier {el.text!r}")
        if tag in ("msub", "msup", "msubsup"):
            parts = ["".join(k.itertext()) for k in el]
            if any(t.count("[") != t.count("]") or t.count("(") != t.count(")") for t in parts):
                found.append(f"{tag} of {parts!r}")
            if parts and parts[0].strip() in _LIMIT_OPS:
                found.append(f"{parts[0].strip()} with its index as a {tag} (not an munder)")
    return found


#: operators whose index goes under them (``<munder>``), as their names and as printed
_LIMIT_OPS = frozenset({"min", "max", "sup", "inf", "sum", "prod", "lim", "argmin", "argmax", "\u2211", "\u220f"})


#: the number of children of each MathML element with a fixed arity (MathML Core: a script
#: element's base and scripts, a fraction's numerator and denominator)
ARITY = {"msub": 2, "msup": 2, "munder": 2, "mover": 2, "mfrac": 2, "mroot": 2, "msubsup": 3, "munderover": 3}
_TOKENS = frozenset({"mi", "mn", "mo", "mtext", "mspace"})


def structure_errors(math: str) -> list[str]:
    """What in a ``<math>`` element is not laid out as mathematics: not well-formed XML, an element
    of :data:`ARITY` with another number of children, a token with element children or a layout
    element with text, text holding a LaTeX command (a backslash) or a literal ``~``, and
    :func:`broken_names`.  Empty for a well-formed formula."""
    try:
        root = ET.fromstring(math)
    except ET.ParseError as e:
        return [f"not well-formed XML: {e}"]
    found = []
    for el in root.iter():
        tag, kids = _local(el.tag), list(el)
        if tag in ARITY and len(kids) != ARITY[tag]:
            found.append(f"{tag} with {len(kids)} children: {[''.join(k.itertext()) for k in kids]!r}")
        if tag in _TOKENS and kids:
            found.append(f"{tag} with element children")
        if tag not in _TOKENS and any(t and t.strip() for t in [el.text] + [k.tail for k in kids]):
            found.append(f"text {(el.text or '').strip()!r} directly in {tag}")
        for t in [el.text, el.tail]:
            if t and ("\\" in t or "~" in t):
                found.append(f"text {t!r} (a LaTeX command or a literal ~)")
    return found + broken_names(math)


def latex(expr) -> str:
    r"""sympy's LaTeX of ``expr``, the toolkit's names of atomic quantities written as the notation
    they stand for (:func:`latex_name`: ``\min_{0 \leq t \leq T-1} S_{t}``, ``\tilde{g}``)."""
    import sympy as sp

    names = {s: latex_name(s.name) for s in getattr(expr, "free_symbols", ()) if _is_notation(s.name)}
    return sp.latex(expr, symbol_names=names) if names else sp.latex(expr)


def _is_notation(name: str) -> bool:
    return bool(_NOTATION & set(name) or _LIMITS.match(name) or _accented(name))


_LATEX_OPS = {"<=": r"\leq", ">=": r"\geq", "!=": r"\neq"}


def _latex_index(text: str) -> str:
    from sympy.printing.pretty.pretty_symbology import greek_unicode

    text = text.strip()
    if any(c in text for c in "_^{}|[("):
        return latex_name(text)
    out, pos = [], 0
    while pos < len(text):
        m = _INDEX_TOKEN.match(text, pos)
        if m is None:
            out.append(rf"\mathrm{{{text[pos:]}}}")
            break
        pos, tok = m.end(), m.group(m.lastgroup)
        out.append("\\" + tok if m.lastgroup == "mi" and tok in greek_unicode else
                   "'" if tok == "'" else _LATEX_OPS.get(tok, tok))
    return " ".join(out)


def latex_name(name: str) -> str:
    """LaTeX of one of the toolkit's names of an atomic quantity, read as :func:`_printer` reads it."""
    import sympy as sp

    parts = name.split()
    if len(parts) > 1:
        return " ".join(latex_name(p) for p in parts)
    if not _is_notation(name):
        return sp.latex(sp.Symbol(name))

    def scripts(base: str, sc) -> str:
        subs = [_latex_index(t) for k_, t in sc if k_ == "_"]
        sups = [_latex_index(t) if k_ == "^" else r"\prime" for k_, t in sc if k_ != "_"]
        return (base + (f"_{{{', '.join(subs)}}}" if subs else "") + (f"^{{{' '.join(sups)}}}" if sups else ""))

    if m := _EXPECTATION.match(name):
        return rf"\mathbb{{E}}\left[{latex_name(m['inner'])}\right]"
    if m := _NORM.match(name):
        norm = scripts(rf"\left\|{latex_name(m['inner'])}\right\|", (_split_scripts(m["scripts"] or "") or ("", []))[1])
        return (r"\mathbb{E}" if m["head"] else "") + norm
    if m := _LIMITS.match(name):
        under = m["under"][1:-1] if m["under"].startswith("{") else m["under"]
        return rf"\{m['op']}_{{{_latex_index(under)}}}" if m["op"] not in ("argmin", "argmax") else \
            rf"\operatorname*{{{m['op']}}}_{{{_latex_index(under)}}}"
    if m := _APPLIED.match(name):
        return rf"{latex_name(m['head'])}\left({latex_name(m['arg'])}\right)"
    if m := _QUOTIENT.match(name):
        return rf"\frac{{{latex_name(m['num'])}}}{{{latex_name(m['den'])}}}"
    if m := _accented(name):
        acc = {"~": "tilde"}.get(m["acc"], m["acc"])
        return scripts(rf"\{acc}{{{latex_name(m['base'])}}}", (_split_scripts(m["rest"]) or ("", []))[1])
    split = _split_scripts(name)
    if split is None or not split[0]:
        return rf"\mathrm{{{name}}}"
    return scripts(latex_name(split[0]), split[1])


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


#: the deepest nesting of elements :func:`sanitize` re-emits (it recurses once per level; 3,000 levels
#: were an internal RecursionError in ``stam report``/``stam table``).  The toolkit's own formulas
#: nest far less: every audit formula at most 20 deep (measured; tests/test_theory_mathml.py holds
#: each to :func:`sanitize`).
MAX_DEPTH = 100


def _depth(root) -> int:
    """How deep the elements under ``root`` nest (``root`` alone: 1), without recursion."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        el, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in el)
    return deepest


def sanitize(text: str, max_len: int = 200_000) -> str | None:
    """Re-emit MathML keeping only :data:`ELEMENTS` and :data:`ATTRIBUTES`, all text escaped;
    None if ``text`` is not well-formed MathML with a ``<math>`` root nested at most
    :data:`MAX_DEPTH` deep (the caller shows text)."""
    if not isinstance(text, str) or len(text) > max_len or "<!" in text or "<?" in text:
        return None  # no DTDs, entities or processing instructions
    try:
        root = ET.fromstring(_numeric_entities(text))
    except ET.ParseError:
        return None
    if _local(root.tag) != "math" or _depth(root) > MAX_DEPTH:
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


__all__ = ["mathml", "latex", "latex_name", "sanitize", "structure_errors", "broken_names", "ELEMENTS",
           "ATTRIBUTES", "ARITY", "ACCENTS", "MAX_DEPTH"]
