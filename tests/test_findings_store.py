"""The store of ``stam paper-check`` (:mod:`stam.theory.papercheck.store`): read back only when it is what this
toolkit wrote (its result type, every registered item, sealed by its digest, a regular readable file
of a sane size); anything else is derived anew and replaced, with output byte-identical to a run
with the store off, nothing on stderr, never a traceback.  Every store here lives under tmp_path
(``STAM_CACHE_DIR``), never in the home cache."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stam.cli import main
from stam.errors import UsageError
from stam.theory.papercheck import audit
from stam.theory.papercheck import store as fstore
from json_edits import paths, set_at

MODES = {"brief": ["--brief"], "table": [], "json": ["--json"]}


def run(cache, mode: str = "brief") -> tuple[int, str, str]:
    """``stam paper-check`` in-process with ``STAM_CACHE_DIR=cache``: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.setenv("STAM_CACHE_DIR", str(cache))
        rc = main(["paper-check", *MODES[mode]])
    return rc, out.getvalue(), err.getvalue()


@lru_cache(maxsize=None)
def off(mode: str = "brief") -> str:
    """The output with the store off."""
    rc, out, err = run("off", mode)
    assert rc == 0 and err == ""
    return out


@lru_cache(maxsize=None)
def valid_store() -> tuple[str, bytes]:
    """(file name, bytes) of the store a ``--brief`` run leaves (checked to print what the store-off run prints)."""
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run(tmp)
        assert (rc, out, err) == (0, off(), "")
        (path,) = Path(tmp).glob("paper-check-*.json")
        return path.name, path.read_bytes()


def place(cache: Path, obj=None, data: bytes | None = None) -> Path:
    """The store file in ``cache``, holding ``obj`` (as JSON) or ``data`` (default: the valid store)."""
    name, valid = valid_store()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / name
    path.write_bytes(data if data is not None else valid if obj is None else json.dumps(obj).encode())
    return path


def valid_obj() -> dict:
    return json.loads(valid_store()[1])


def sealed(obj: dict) -> dict:
    """``obj`` with its digest made again (a deliberate edit, which only the type can catch)."""
    if isinstance(obj, dict) and "digest" in obj:
        obj["digest"] = fstore.store_digest(obj)
    return obj


@pytest.fixture
def derived(monkeypatch):
    """Counts the derivations of the audit (``audit.findings``) in the test (the references made first)."""
    valid_store(), [off(mode) for mode in MODES]
    real, calls = audit.findings, []

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(audit, "findings", counted)
    return calls


def assert_derived_anew(cache: Path, calls: list, mode: str = "brief") -> None:
    """A run in ``cache`` derives (once), prints what the store-off run prints, and leaves a valid store."""
    before = len(calls)
    rc, out, err = run(cache, mode)
    assert (rc, err) == (0, "") and out == off(mode)
    assert len(calls) == before + 1
    path = cache / valid_store()[0]
    assert not path.is_symlink() and fstore.read_store(path, path.stem.removeprefix("paper-check-")) is not None
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".")]  # no temporary left


# -- read back when valid ------------------------------------------------------------------------------


def test_a_valid_store_is_read_back_and_nothing_is_derived(tmp_path, monkeypatch):
    place(tmp_path), off("brief"), off("table")

    def fail():
        raise AssertionError("derived although the store is valid")

    monkeypatch.setattr(audit, "findings", fail)
    monkeypatch.setattr(audit, "evaluated", fail)
    for mode in ("brief", "table"):
        assert run(tmp_path, mode) == (0, off(mode), "")


def test_the_store_is_its_result_type_and_is_written_through_it(tmp_path):
    from stam.figures.results import result_type

    rt = result_type("paper-check-store")
    assert rt is fstore.FINDINGS_STORE and not rt.found and rt.module == "stam.theory.papercheck.store"
    name, data = valid_store()
    obj = rt.read(place(tmp_path))
    assert obj["kind"] == "paper-check-store" and name == f"paper-check-{obj['key']}.json"
    assert obj["digest"] == fstore.store_digest(obj) and len(obj["findings"]) == len(audit.registry())
    bad = sealed(dict(valid_obj(), findings=valid_obj()["findings"][1:]))
    with pytest.raises(UsageError, match="field findings must hold every registered item"):
        fstore.write_store(tmp_path / "x.json", bad["key"], False, bad["findings"])
    assert not (tmp_path / "x.json").exists()


# -- well formed but wrong: rejected, derived anew, the same output ------------------------------------


def _first(obj, test):
    return next(i for i, f in enumerate(obj["findings"]) if test(f))


WRONG = {  # edit -> (the change, the field the type names when the edit is sealed again)
    "a verdict not allowed": (lambda o: set_at(o, ("findings", 0, "verdict"), "maybe"), "findings[0].verdict"),
    "verdict failed to derive": (lambda o: set_at(o, ("findings", 0, "verdict"), "failed to derive"), "findings[0].verdict"),
    "an evidence kind not allowed": (lambda o: set_at(o, ("findings", 2, "evidence"), "none"), "findings[2].evidence"),
    "a missing item": (lambda o: o["findings"].pop(3) and o, "findings"),
    "an item twice": (lambda o: o["findings"].append(o["findings"][0]) or o, "findings"),
    "items out of order": (lambda o: o["findings"].reverse() or o, "findings"),
    "covers changed": (lambda o: o["findings"][0]["covers"].append("eq1") or o, "findings"),
    "a wrong type": (lambda o: set_at(o, ("findings", 1, "covers"), "eq24"), "findings[1].covers"),
    "a number for a string": (lambda o: set_at(o, ("findings", 0, "note"), 3), "findings[0].note"),
    "a number for the label": (lambda o: set_at(o, ("findings", 0, "label"), 7.5), "findings[0].label"),
    "an extra field in a finding": (lambda o: set_at(o, ("findings", 0, "shell"), "rm -rf"), "findings[0].shell"),
    "an extra field at the top": (lambda o: set_at(o, ("extra",), 1), "extra"),
    "a missing field": (lambda o: o["findings"][0].pop("evidence") and o, "findings[0].evidence"),
    "a negative search size": (lambda o: set_at(o, ("findings", _first(o, lambda f: f["search"]), "search", "instances"), -1),
                               "search.instances"),
    "search classes not strings": (lambda o: set_at(o, ("findings", _first(o, lambda f: f["search"]), "search", "classes"),
                                                  [1, 2, 3, 4]), "search.classes[0]"),
    "a margin that is text": (lambda o: set_at(o, ("findings", _first(o, lambda f: (f["search"] or {}).get("closest")),
                                                 "search", "closest", "margin"), "small"), "closest.margin"),
    "a gap witness that is a list": (lambda o: set_at(o, ("findings", _first(o, lambda f: f["gap"]), "gap", "witness"), [1]),
                                     "gap.witness"),
    "a counterexample that is a list": (lambda o: set_at(o, ("findings", 0, "counterexample"), [1, 2]),
                                        "findings[0].counterexample"),
    "a MathML key that overwrites the label": (lambda o: set_at(o, ("findings", 0, "math"), {"label": "x"}), "math.label"),
    "elsewhere rows of another shape": (lambda o: set_at(o, ("findings", 0, "elsewhere"), [{"where": 1}]), "elsewhere[0]"),
    "another kind": (lambda o: set_at(o, ("kind",), "paper-check"), "kind"),
    "findings not a list": (lambda o: set_at(o, ("findings",), {"0": 1}), "findings"),
}


@pytest.mark.parametrize("edit", sorted(WRONG))
def test_a_wrong_store_is_derived_anew_with_the_same_output(edit, tmp_path, derived):
    """Each edit as damage (the digest no longer matches) and as a deliberate edit sealed again (the
    type names the field): either way the store is not read, the audit is derived anew, the output is
    byte for byte the store-off output, nothing is printed on stderr, and the store is replaced."""
    change, field = WRONG[edit]
    for seal in (False, True):
        obj = change(valid_obj())
        if seal:
            sealed(obj)
        with pytest.raises(UsageError, match="^store.json: field ") as exc:
            fstore.FINDINGS_STORE.validate(copy.deepcopy(obj), "store.json")
        if seal:
            assert field in str(exc.value), exc.value
        cache = tmp_path / f"{seal}"
        place(cache, obj)
        assert_derived_anew(cache, derived)


def test_a_store_of_other_sources_or_without_the_mathml_is_derived_anew(tmp_path, derived):
    """A store sealed for another key (copied under this key's name) is not read; nor, for --json, one
    without the MathML (brief and table read it)."""
    place(tmp_path / "key", sealed(dict(valid_obj(), key="0" * 24)))
    assert_derived_anew(tmp_path / "key", derived)
    place(tmp_path / "math")
    assert run(tmp_path / "math", "table") == (0, off("table"), "") and len(derived) == 1
    assert_derived_anew(tmp_path / "math", derived, "json")
    assert fstore.FINDINGS_STORE.read(tmp_path / "math" / valid_store()[0])["with_math"] is True


def test_a_sealed_counterexample_with_a_text_instance_prints(tmp_path):
    """A counterexample whose ``instance`` is text is of the type; the table names the rest of it (an
    instance that is text is never indexed as numbers: no TypeError for a text holding 'lam')."""
    obj = valid_obj()
    i = _first(obj, lambda f: f["counterexample"])
    obj["findings"][i]["counterexample"] = {"instance": "lambda, gamma and beta of the run", "t": 2, "x": 1.5}
    place(tmp_path, sealed(obj))
    rc, out, err = run(tmp_path, "table")
    assert (rc, err) == (0, "") and "counterexample: t=2; x=1.5" in out and out != off("table")


# -- not a plain readable file: derived anew, nothing outside the cache touched ------------------------


def test_a_link_is_not_followed_and_is_replaced_not_its_target(tmp_path, derived):
    outside = tmp_path / "outside"
    target = place(outside)  # a valid store, elsewhere
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / target.name).symlink_to(target)
    assert_derived_anew(cache, derived)
    assert target.read_bytes() == valid_store()[1] and not (cache / target.name).is_symlink()
    secret = tmp_path / "secret.txt"
    secret.write_text("not a store\n")
    (cache / target.name).unlink()
    (cache / target.name).symlink_to(secret)
    assert_derived_anew(cache, derived)
    assert secret.read_text() == "not a store\n"
    (cache / target.name).unlink()
    (cache / target.name).symlink_to(tmp_path / "missing")  # dangling
    assert_derived_anew(cache, derived)
    assert not (tmp_path / "missing").exists()


def test_a_folder_in_place_of_the_store_is_left_and_the_output_is_the_same(tmp_path, derived):
    (tmp_path / valid_store()[0]).mkdir()
    (tmp_path / valid_store()[0] / "keep").write_text("x")
    for _ in range(2):
        rc, out, err = run(tmp_path)
        assert (rc, out, err) == (0, off(), "")
    assert len(derived) == 2 and (tmp_path / valid_store()[0] / "keep").read_text() == "x"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_pipe_in_place_of_the_store_does_not_block(tmp_path, derived):
    os.mkfifo(tmp_path / valid_store()[0])
    assert_derived_anew(tmp_path, derived)


def test_an_unreadable_store_is_derived_anew(tmp_path, derived, monkeypatch):
    path = place(tmp_path)
    path.chmod(0)
    if os.geteuid() == 0:  # root reads it anyway: make the open fail as it would for a user
        real = os.open

        def refused(p, *a, **kw):
            if Path(p) == path:
                raise PermissionError(13, "Permission denied", str(p))
            return real(p, *a, **kw)

        monkeypatch.setattr(fstore.os, "open", refused)
    assert run(tmp_path) == (0, off(), "") and len(derived) == 1
    monkeypatch.undo()
    assert fstore.read_store(path, path.stem.removeprefix("paper-check-")) is not None  # replaced, readable


def test_a_huge_store_is_not_read(tmp_path, derived, monkeypatch):
    path = place(tmp_path, data=b"")
    with open(path, "wb") as f:  # sparse: no disk used
        f.truncate(fstore.STORE_MAX_BYTES + 1)
    assert_derived_anew(tmp_path, derived)
    place(tmp_path)
    monkeypatch.setattr(fstore, "STORE_MAX_BYTES", len(valid_store()[1]) - 1)  # a valid store above the limit
    assert run(tmp_path) == (0, off(), "") and len(derived) == 2


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe{}", b"[" * 100000 + b"]" * 100000, b"null", b"[]", b"{}",
                                  b'{"kind": "paper-check-store"}'])
def test_a_store_that_is_not_one_is_derived_anew(data, tmp_path, derived):
    place(tmp_path, data=data)
    assert_derived_anew(tmp_path, derived)


# -- random edits -----------------------------------------------------------------------------------------

JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=True),
                              st.text(max_size=8)),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=3)), max_leaves=6)


@st.composite
def edited(draw):
    """(the store as JSON bytes after 1-3 random edits, whether they were sealed again)."""
    obj = valid_obj()
    for _ in range(draw(st.integers(1, 3))):
        found = list(paths(obj))
        path, value = found[draw(st.integers(0, len(found) - 1))]
        how = draw(st.sampled_from(["set", "drop", "add", "tweak", "tweak"]))
        if not path:
            obj = draw(JSON) if how == "set" else obj
        elif how == "set":
            set_at(obj, path, draw(JSON))
        elif how == "drop":
            parent = obj
            for p in path[:-1]:
                parent = parent[p]
            del parent[path[-1]]
        elif how == "add" and isinstance(value, (dict, list)):
            key = draw(st.sampled_from(["x", "label", "verdict", "note", "digest", "instance"]))
            value.append(draw(JSON)) if isinstance(value, list) else value.__setitem__(key, draw(JSON))
        elif how == "tweak":
            new = (not value if isinstance(value, bool) else value + 1 if isinstance(value, (int, float))
                   else value + draw(st.sampled_from(["x", " ", "\u00e9", "1"])) if isinstance(value, str) else None)
            set_at(obj, path, new)
    seal = draw(st.booleans())
    if seal:
        sealed(obj)
    data = json.dumps(obj).encode()
    cut = draw(st.sampled_from([None] * 6 + ["truncate", "byte"]))
    if cut == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif cut == "byte":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xff" + data[at:]
    return data, seal


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(edited(), st.sampled_from(["brief", "table"]))
def test_random_edits_never_crash_and_never_change_the_output(case, mode):
    """Random edits of a valid store: the run ends with exit 0 and nothing on stderr; the output is the
    store-off output unless the edits were sealed again (a digest made anew) AND the result is still
    of the type (then the store is what it claims: read back as it is)."""
    data, seal = case
    with tempfile.TemporaryDirectory() as tmp:
        path = place(Path(tmp), data=data)
        key = path.stem.removeprefix("paper-check-")
        accepted = fstore.read_store(path, key) is not None
        rc, out, err = run(tmp, mode)
        assert (rc, err) == (0, "")
        if not (seal and accepted):
            assert out == off(mode)
            assert fstore.read_store(path, key) is not None  # replaced by a valid store
        elif data == valid_store()[1] or json.loads(data) == valid_obj():
            assert out == off(mode)


def test_a_killed_runs_temporaries_beside_the_store_are_removed_when_an_hour_old(tmp_path, derived):
    """Issue 40: ``.paper-check-*.json.*.tmp`` that a run killed mid-write left beside the store are
    removed by the next run: the store is written under a lock, so where no write holds it every temporary is a
    killed write's, an hour old or not (issue 64); a link is removed, never followed."""
    place(tmp_path)
    old = [tmp_path / f".{valid_store()[0]}.k1ll3d.tmp", tmp_path / ".paper-check-0123abcd.json.x.tmp"]
    young = tmp_path / f".{valid_store()[0]}.wr1t1ng.tmp"
    for p in (*old, young):
        p.write_text("{partial")
    for p in old:
        os.utime(p, (1, 1))
    (tmp_path / ".paper-check-link.json.x.tmp").symlink_to(tmp_path / "target")
    (tmp_path / "target").write_text("kept")
    os.utime(tmp_path / "target", (1, 1))
    assert run(tmp_path, "brief") == (0, off("brief"), "")
    assert not any(p.exists() for p in old) and not young.exists() and (tmp_path / "target").read_text() == "kept"
