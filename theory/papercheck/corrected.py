"""``stam paper-check --corrected DIR``: the paper's lemmas and theorems as corrected, with all
their hypotheses and constants, as LaTeX (``corrected.tex``, sympy's LaTeX printer) and Markdown
(``corrected.md``, the same formulas between ``$...$``), ready to paste into an erratum.

Only the statements that items attach (:attr:`stam.theory.papercheck.items.Result.corrected`) are written,
in the order of the paper; each lists what changed and the audit items behind it."""

from __future__ import annotations

import sympy as sp

from stam.theory.papercheck.items import Corrected, Tex

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_text(text: str) -> str:
    """Plain text for LaTeX text mode (every special character escaped)."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def md_text(text: str) -> str:
    """Plain text for Markdown (characters that would start emphasis, code or HTML escaped)."""
    out = str(text)
    for ch in ("\\", "`", "*", "_", "<", ">", "[", "]", "|", "$"):
        out = out.replace(ch, "\\" + ch)
    return out


def _is_math(x) -> bool:
    return isinstance(x, (sp.Basic, sp.logic.boolalg.Boolean))


def _latex(x) -> str:
    return str(x) if isinstance(x, Tex) else sp.latex(x)


def _tex(x) -> str:
    return f"${_latex(x)}$" if _is_math(x) or isinstance(x, Tex) else tex_text(x)


def _md(x) -> str:
    return f"${_latex(x)}$" if _is_math(x) or isinstance(x, Tex) else md_text(x)


def _display_tex(x) -> str:
    return rf"\[ {_latex(x)} \]" if _is_math(x) or isinstance(x, Tex) else tex_text(x)


def _display_md(x) -> str:
    return f"$${_latex(x)}$$" if _is_math(x) or isinstance(x, Tex) else md_text(x)


def _constants(c: Corrected):
    for name, val in c.constants.items():
        yield name, val


def _const_name_tex(name, value) -> str:
    if isinstance(value, Tex):
        return r"\text{" + tex_text(name) + "}"
    return sp.latex(sp.Symbol(name)) if _is_math(value) else r"\text{" + tex_text(name) + "}"


def _const_value_tex(value) -> str:
    if isinstance(value, Tex):
        return str(value)
    return sp.latex(value) if _is_math(value) else r"\text{" + tex_text(value) + "}"


def statements(evaluated) -> list[tuple[Corrected, list[str]]]:
    """``(corrected statement, labels of the items behind it)`` in the order of the paper."""
    out: dict[str, tuple[Corrected, list[str]]] = {}
    for ev in evaluated:
        if ev.result is None:
            continue
        try:
            c = ev.result.corrected_statement()
        except Exception as exc:  # noqa: BLE001 - reported in the document, never fatal
            c = Corrected(f"(item {ev.item.label})", [], f"failed to derive the corrected statement: "
                          f"{type(exc).__name__}: {exc}")
        if c is None:
            continue
        if c.name in out:
            out[c.name][1].append(ev.item.label)
        else:
            out[c.name] = (c, [ev.item.label])
    return list(out.values())


def paper_number(c: Corrected, tex: str | None = None) -> str:
    """``"Lemma 6*"``: how the printed paper numbers the statement ``c`` (its name ends in its source
    label, e.g. ``Lemma conv-lemma``), computed from the LaTeX source; "" if the label is unknown."""
    from stam.theory.papercheck.items.coverage import read_paper
    from stam.theory.papercheck.items.numbering import printed_numbers

    nums = printed_numbers(tex if tex is not None else read_paper())
    n = nums.get(c.name.split()[-1])
    return n.text if n is not None else ""


def paper_number_sentence(c: Corrected, tex: str | None = None) -> str:
    """``"Lemma 6* in the paper's printed numbering (*: Lemma 8 if ...)."``: :func:`paper_number` as a
    sentence, with the other numbering where the number rests on the undeclared ``assumption``
    environment (:mod:`stam.theory.papercheck.items.numbering`); "" if the label is unknown."""
    from stam.theory.papercheck.items.coverage import read_paper
    from stam.theory.papercheck.items.numbering import printed_numbers

    n = printed_numbers(tex if tex is not None else read_paper()).get(c.name.split()[-1])
    if n is None:
        return ""
    alt = (f" (*: {n.alternative_text} if the paper's undeclared assumption environment shares the theorem counter)"
           if n.alternative else "")
    return f"{n.text} in the paper's printed numbering{alt}."


def latex_document(stmts) -> str:
    lines = [r"\documentclass{article}", r"\usepackage{amsmath,amssymb,amsthm}", r"\newtheorem*{stmt}{Statement}",
             r"\begin{document}", r"\section*{Corrected statements (stam paper-check)}",
             tex_text("Bian, Liu and Zhang, A stochastic three-block splitting algorithm and its application to "
                      "quantized deep neural networks: the lemmas and theorems of Section 2 as the toolkit checks them."),
             ""]
    for c, labels in stmts:
        num = paper_number_sentence(c)
        lines += [rf"\subsection*{{{tex_text(c.name)} (corrected)}}"]
        lines += [tex_text(num) + r"\par"] if num else []
        lines += [r"\textbf{Hypotheses.}", r"\begin{enumerate}"]
        lines += [rf"  \item {_tex(h)}" for h in c.hypotheses]
        lines += [r"\end{enumerate}", r"\textbf{Conclusion.} " + _display_tex(c.conclusion)]
        if c.constants:
            lines.append(r"\textbf{Constants.}")
            lines.append(r"\begin{align*}")
            rows = [f"  {_const_name_tex(n, v)} &= {_const_value_tex(v)}" for n, v in _constants(c)]
            lines.append(" \\\\\n".join(rows))
            lines.append(r"\end{align*}")
        if c.changes:
            lines.append(r"\textbf{Changed from the print:} " + tex_text(c.changes) + r"\par")
        lines.append(r"\textit{Audit items:} " + tex_text("; ".join(labels)) + r"\par")
        lines.append("")
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"


def markdown_document(stmts) -> str:
    lines = ["# Corrected statements (stam paper-check)", "",
             md_text("Bian, Liu and Zhang, A stochastic three-block splitting algorithm and its application to "
                     "quantized deep neural networks: the lemmas and theorems of Section 2 as the toolkit checks them."),
             ""]
    for c, labels in stmts:
        num = paper_number_sentence(c)
        lines += [f"## {md_text(c.name)} (corrected)", ""]
        lines += [md_text(num), ""] if num else []
        lines += ["**Hypotheses.**", ""]
        lines += [f"{i}. {_md(h)}" for i, h in enumerate(c.hypotheses, 1)]
        lines += ["", "**Conclusion.** " + _display_md(c.conclusion), ""]
        if c.constants:
            lines += ["**Constants.**", ""]
            lines += [f"- {md_text(n)}: {_md(v)}" if isinstance(v, Tex) else
                      f"- {_md(sp.Symbol(n)) if _is_math(v) else md_text(n)} = {_md(v)}" for n, v in _constants(c)]
            lines.append("")
        if c.changes:
            lines += [f"**Changed from the print:** {md_text(c.changes)}", ""]
        lines += [f"*Audit items:* {md_text('; '.join(labels))}", ""]
    return "\n".join(lines)


def documents(out_dir, evaluated) -> dict:
    """``{path: text}``: ``corrected.tex`` and ``corrected.md`` in ``out_dir`` (``stam paper-check --corrected``; nothing
    written here: the caller writes them with its other files, all or nothing)."""
    from pathlib import Path

    stmts = statements(evaluated)
    return {Path(out_dir) / "corrected.tex": latex_document(stmts), Path(out_dir) / "corrected.md": markdown_document(stmts)}


__all__ = ["statements", "latex_document", "markdown_document", "documents", "tex_text", "md_text"]
