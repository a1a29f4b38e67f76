"""The store of ``stam paper-check``: the findings of the paper audit as an earlier run derived them,
kept in the toolkit's cache folder (:func:`stam.io.cache_home`) under the key of their sources and read back
instead of deriving again (:func:`stam.theory.papercheck.audit.stored_findings` decides when).

A store is a result type of its own, :data:`FINDINGS_STORE`, written whole through it and read back
only if it is exactly what this toolkit wrote: every field of the type the output needs, every
registered item of the audit once and in order, sealed by the SHA-256 of its content.  Anything else
(damaged, edited, a link, a folder, unreadable, huge) is not read (:func:`read_store` gives None),
so the audit is derived anew and the output is the same as with no store.  No sympy here: finding
the result types (the report's reader) imports this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from stam.errors import UsageError
from stam.io import dumps
from stam.results import (BOOL, COUNT, DICT, DICT_OR_NULL, LIST, NONEMPTY_LIST, NUM, STR, TEXT, ResultType, Schema, holds,
                          one_of, only)
from stam.theory.papercheck.items import EVIDENCE, VERDICTS, registry

#: the largest store read back (one this toolkit writes is about 0.18 MB, 0.25 MB with the MathML)
STORE_MAX_BYTES = 16 << 20


def _closed(required: dict, **kw) -> Schema:
    """A schema whose keys are exactly ``required`` (a store is written whole and read back as it is)."""
    rules = (only(*required), *kw.pop("rules", ()))
    return Schema(required=required, rules=rules, **kw)


#: the MathML and LaTeX of the printed and derived forms (:meth:`stam.theory.papercheck.audit.AuditFinding.mathml`)
MATH_KEYS = ("printed_mathml", "printed_latex", "derived_mathml", "derived_latex")
#: the search on actual runs as stored (:meth:`stam.theory.papercheck.items.Search.as_json`, rounded)
_SEARCH = _closed({"method": STR, "classes": LIST, "instances": COUNT, "steps": COUNT, "found": DICT_OR_NULL,
                   "closest": DICT_OR_NULL},
                  items={"classes": STR}, inner={"closest": Schema(optional={"margin": NUM})})
#: one finding as stored: every field of :class:`stam.theory.papercheck.audit.AuditFinding` but its formulas, each of
#: the type the output needs; a verdict and an evidence kind of the audit's, never ``failed to
#: derive`` (a run where an item failed is not stored)
STORED_FINDING = _closed(
    {"label": TEXT, "printed": STR, "derived": STR, "verdict": STR, "counterexample": DICT_OR_NULL, "note": STR,
     "covers": LIST, "gap": DICT_OR_NULL, "elsewhere": LIST, "error": STR, "math": DICT, "evidence": STR,
     "search": DICT_OR_NULL, "network": DICT_OR_NULL},
    items={"covers": STR},
    each={"elsewhere": _closed({"where": STR, "agrees": BOOL, "printed": BOOL})},
    inner={"gap": _closed({"uses": STR, "states": STR, "closes": STR, "witness": DICT_OR_NULL}), "search": _SEARCH,
           "math": Schema(optional={k: STR for k in MATH_KEYS}, rules=(only(*MATH_KEYS),))},
    rules=(one_of("verdict", VERDICTS[:-1]), one_of("evidence", tuple(k for k in EVIDENCE if k != "none"))))


def store_digest(store: dict) -> str:
    """The SHA-256 of a store's content (every field but ``digest``, as compact JSON): it seals the
    store, so that one damaged or edited since it was written is not read back."""
    body = {k: v for k, v in store.items() if k != "digest"}
    return hashlib.sha256(dumps(body, indent=None).encode("utf-8", "surrogatepass")).hexdigest()


def _registered(store: dict) -> bool:
    """Every registered item of the audit once, in order, each covering the labels it covers."""
    return [(f["label"], f["covers"]) for f in store["findings"]] == [(it.label, list(it.covers)) for it in registry()]


#: what ``stam paper-check`` stores and reads back instead of deriving again: the findings, whether
#: they hold the MathML, the key of the sources they were derived from and the digest that seals them
FINDINGS_STORE = ResultType(
    "paper-check-store",
    _closed({"kind": STR, "key": STR, "with_math": BOOL, "findings": NONEMPTY_LIST, "digest": STR},
            each={"findings": STORED_FINDING},
            rules=(one_of("kind", ("paper-check-store",)),
                   holds("digest", lambda s: s["digest"] == store_digest(s),
                         "does not match the content (edited or damaged since it was written)"),
                   holds("findings", _registered,
                         "must hold every registered item once, in order, each with the labels it covers"))),
    files="paper-check-<key>.json", writer="stam paper-check (its store: $STAM_CACHE_DIR, else ~/.cache/stam)",
    found=False)


def read_store(path, key: str) -> dict | None:
    """The store at ``path`` if this toolkit wrote it for the sources of ``key``, else None (never an
    exception, nothing printed): a regular file (not a link, a folder, a pipe), readable, at most
    :data:`STORE_MAX_BYTES`, UTF-8 JSON of the type :data:`FINDINGS_STORE` and of this ``key``."""
    try:  # no link followed, no wait on a pipe; the checks are on what was opened
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > STORE_MAX_BYTES:
            return None
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > STORE_MAX_BYTES:  # grown since
                return None
        store = FINDINGS_STORE.validate(json.loads(b"".join(chunks).decode("utf-8")), path)
    except (OSError, ValueError, RecursionError, UsageError):  # ValueError: not UTF-8, not JSON
        return None
    finally:
        os.close(fd)
    return store if store["key"] == key else None


def write_store(path, key: str, with_math: bool, findings: list) -> Path:
    """Store ``findings`` (the rows of :data:`STORED_FINDING`) for the sources of ``key`` at ``path``,
    sealed and atomically (checked against :data:`FINDINGS_STORE` first).  Returns ``path``."""
    store = json.loads(dumps({"kind": FINDINGS_STORE.name, "key": key, "with_math": with_math,
                              "findings": findings}))  # plain JSON values: as it reads back
    store["digest"] = store_digest(store)
    return FINDINGS_STORE.write(store, path)


__all__ = ["FINDINGS_STORE", "STORED_FINDING", "MATH_KEYS", "STORE_MAX_BYTES", "store_digest", "read_store",
           "write_store"]
