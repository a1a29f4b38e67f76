"""Edits of parsed JSON values, shared by the tests that damage files the toolkit reads
(the fuzzer, the hardening tests, the paper-check store)."""


def paths(obj, prefix=()):
    """Every (path, value) inside a parsed JSON value, the value itself first (path ``()``)."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, prefix + (i,))


def set_at(obj, path, value):
    """``obj`` with ``value`` at ``path`` (in place; the empty path gives ``value`` itself)."""
    if not path:
        return value
    inner = obj
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return obj
