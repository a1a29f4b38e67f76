"""An experiment's parameters as one typed object (issue 25, point 1).

Each experiment command declares one frozen dataclass, a subclass of :class:`Params`, whose
fields are its parameters.  A field made by :func:`arg` carries its command-line flag (its
spelling, argparse type from :mod:`stam.cliargs` or :mod:`stam.errors`, help text), so that from
the one declaration come

- the command's flags: :func:`add_arguments` (in the order of the fields),
- its defaults: the fields' defaults (a library call and the command line get the same),
- the parameters of a parsed command line: :meth:`Params.from_args`,
- its job specification, the part of the parameters that decides a result (what the job engine
  :func:`stam.jobs.run_jobs` hashes): :meth:`Params.spec`, the fields declared ``job=True``.

The run function is a library call taking the object; no argparse inside.  Imports nothing heavy.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable

_NO = dataclasses.MISSING


def arg(*flags: str, default=_NO, default_factory=_NO, help: str | None = None, job: bool = False,
        convert: Callable[[Any], Any] | None = None, cli_default=_NO, old: tuple = (), exclusive: str | None = None,
        group: str | None = None, **argparse_kw):
    """A dataclass field with its command-line flag.

    ``flags``: its spellings (none: a library-only parameter); ``help``, ``type``, ``metavar``,
    ``choices``, ``action`` ...: passed to ``argparse.add_argument`` (the destination is the
    field's name, so ``--quiet`` with ``action="store_false"`` sets a field ``echo``);
    ``job``: part of :meth:`Params.spec` (True; or a predicate of the value: part of it where the
    predicate holds, e.g. ``job=bool`` for a switch whose off state is what specs without it meant); ``convert``: turns the parsed value into the field's
    (e.g. ``--set K=V`` strings into a dict); ``cli_default``: the flag's default where it differs
    from the field's (before ``convert``); ``old``: earlier spellings kept hidden for one release;
    ``exclusive``: the name of a mutually exclusive group of flags (at most one of them given); ``group``:
    the title of the group of the help the flag is listed under."""
    meta = {"flags": flags, "help": help, "job": job, "convert": convert, "cli_default": cli_default, "old": old,
            "exclusive": exclusive, "group": group, "argparse": argparse_kw}
    if default_factory is not _NO:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _default(f: dataclasses.Field):
    if f.metadata.get("cli_default", _NO) is not _NO:
        return f.metadata["cli_default"]
    if f.default is not _NO:
        return f.default
    if f.default_factory is not _NO:
        return f.default_factory()
    return None


def flagged(cls) -> list[dataclasses.Field]:
    """The fields of ``cls`` that have a command-line flag, in declaration order."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("flags")]


def add_arguments(parser: argparse.ArgumentParser, cls, more: dict | None = None) -> argparse.ArgumentParser:
    """Add the flags of the :class:`Params` subclass ``cls`` to ``parser``, in field order;
    ``more``: field name -> argparse keywords that only the command line knows (e.g. the
    ``choices`` of a flag read from a higher layer)."""
    groups: dict = {}
    titled: dict = {}
    for f in flagged(cls):
        title = f.metadata.get("group")
        if title is not None and title not in titled:
            titled[title] = parser.add_argument_group(title)
        where = titled[title] if title is not None else parser
        group = f.metadata.get("exclusive")
        if group is not None and group not in groups:
            groups[group] = where.add_mutually_exclusive_group()
        add_field(groups[group] if group is not None else where, f.name, f, (more or {}).get(f.name))
    parser.set_defaults(params_class=cls)  # the command's parameters, found from its parser (tests, handlers)
    return parser


def add_field(parser: argparse.ArgumentParser, name: str, f: dataclasses.Field, more: dict | None = None) -> None:
    """Add the flag of one field made by :func:`arg` (its destination ``name``) to ``parser``."""
    m = f.metadata
    kw = dict(m["argparse"], default=_default(f), **(more or {}))
    if m["help"] is not None:
        kw["help"] = m["help"]
    if not m["flags"][0].startswith("-"):  # a positional argument, named as its field
        parser.add_argument(name, **kw)
        return
    parser.add_argument(*m["flags"], dest=name, **kw)
    if m["old"]:
        hidden = {k: v for k, v in kw.items() if k in ("type", "action", "const")}
        parser.add_argument(*m["old"], dest=name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **hidden)


class Params:
    """Base of an experiment's parameters (a frozen dataclass whose fields are made by :func:`arg`)."""

    @classmethod
    def from_args(cls, ns: argparse.Namespace, **given):
        """The parameters of a parsed command line (each flagged field from ``ns``, converted);
        ``given``: fields set by the caller instead."""
        values = {}
        for f in flagged(cls):
            if f.name in given or not hasattr(ns, f.name):
                continue
            value = getattr(ns, f.name)
            convert = f.metadata["convert"]
            values[f.name] = convert(value) if convert is not None else value
        return cls(**values, **given)

    def spec(self) -> dict:
        """The job specification: the fields declared ``job=True`` (or ``job=predicate`` where it holds for
        the field's value), by name."""
        def part(f):
            job = f.metadata.get("job")
            return job is True or (callable(job) and job(getattr(self, f.name)))

        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if part(f)}


__all__ = ["arg", "add_arguments", "add_field", "flagged", "Params"]
