"""The typed settings of stam.theory.settings (issue 38, point 4): a function that takes one takes its fields by
keyword too, and both forms reach the same computation; a keyword that is no field is refused as Python does."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stam.theory.worstcase import history, lyapunov, onset, pep
from stam.theory.symbolic import numeric
from stam.theory.papercheck import statementsearch
from stam.theory.settings import Bisection, ProblemClass, SdpOptions, Settings, no_other
from stam.theory.papercheck.statementsearch import StatementBudget  # noqa: F401 (a Settings declared there)

#: every typed setting of stam.theory (declared beside what reads it: the modules imported above)
SETTINGS = tuple(sorted(Settings.__subclasses__(), key=lambda c: c.__name__))


@pytest.mark.parametrize("cls", SETTINGS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_of_sets_the_fields_it_has_and_leaves_the_rest(cls, data):
    names = [f.name for f in dataclasses.fields(cls)]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True))
    values = {name: data.draw(st.integers(1, 9)) for name in chosen}
    others = data.draw(st.dictionaries(st.sampled_from(["zeta", "other", "lam_", "xi"]), st.integers()))
    fields = {**values, **others}
    got = cls.of(None, fields)
    assert got == cls(**values)
    assert fields == others  # what is left belongs to another setting (or is refused)
    base = cls(**{names[0]: 7})
    kept = cls.of(base, dict(values))
    assert all(getattr(kept, n) == (values[n] if n in values else getattr(base, n)) for n in names)


def test_of_refuses_an_object_of_another_kind_and_no_other_names_the_keyword():
    with pytest.raises(TypeError, match="is not a ProblemClass"):
        ProblemClass.of(SdpOptions(), {})
    no_other({}, "f")
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'Ll'"):
        no_other({"Ll": 1.0}, "f")


@pytest.mark.parametrize("call", [
    lambda: pep.stam_pep(1.0, 0.1, 250.0, 1, Ll=1.0),
    lambda: pep.compare(1.0, 0.1, 250.0, 1, Ll=1.0),
    lambda: pep.pep_sweep(1.0, 0.1, 250.0, [1], Ll=1.0),
    lambda: lyapunov.certify_stam(1.0, 0.1, 250.0, Ll=1.0),
    lambda: lyapunov.certified_gamma(1.0, "paper", Ll=1.0),
    lambda: history.stam_window_sdp(1.0, 0.9, 10.0, 1, Ll=1.0),
    lambda: history.certify_history(1.0, 0.9, 10.0, 1, Ll=1.0),
    lambda: history.history_reach(1, Ll=1.0),
    lambda: history.history_rows(Ll=1.0),
    lambda: onset.onset_by_horizon([1], 10.0, Ll=1.0),
    lambda: onset.band([1], [10.0], None, Ll=1.0),
    lambda: statementsearch.statement_search(Ll=1.0),
    lambda: numeric.admissible_parameters(numeric.quadratic_coupling(1.0), 1, Ll=1.0),
], ids=["stam_pep", "compare", "pep_sweep", "certify_stam", "certified_gamma", "stam_window_sdp", "certify_history",
        "history_reach", "history_rows", "onset_by_horizon", "band", "statement_search", "admissible_parameters"])
def test_a_misspelt_keyword_is_refused_before_anything_is_solved(call):
    with pytest.raises(TypeError, match="unexpected keyword argument 'Ll'"):
        call()


def test_the_window_is_the_same_built_from_the_class_or_its_keywords():
    kw = history.stam_window_sdp(1.0, 0.9, 10.0, 2, 1, "general", L1=2.0, f_class="convex")
    typed = history.stam_window_sdp(1.0, 0.9, 10.0, 2, 1, "general", problem=ProblemClass(L1=2.0, f_class="convex"))
    default = history.stam_window_sdp(1.0, 0.9, 10.0, 2, 1, "general")
    assert kw.note == typed.note and len(kw.interp) == len(typed.interp)
    assert all(a.name == b.name and np.array_equal(a.lin, b.lin) and np.array_equal(a.quad, b.quad)
               for a, b in zip(kw.interp, typed.interp))
    assert not all(np.array_equal(a.quad, b.quad) for a, b in zip(kw.interp, default.interp))  # L1 reaches it


def test_a_pep_and_a_certificate_are_the_same_from_the_class_or_its_keywords():
    a = pep.stam_pep(1.0, 0.5, 10.0, 1, L1=2.0, f_class="convex")
    b = pep.stam_pep(1.0, 0.5, 10.0, 1, problem=ProblemClass(L1=2.0, f_class="convex"))
    assert a.status == b.status == "optimal" and a.worst_case == b.worst_case
    assert a.details["f_class"] == "convex"
    c = lyapunov.certify_stam(1.0, 0.5, 100.0, template="paper", L1=2.0, solver="clarabel")
    d = lyapunov.certify_stam(1.0, 0.5, 100.0, template="paper", problem=ProblemClass(L1=2.0),
                              sdp=SdpOptions(solver="clarabel"))
    assert c.certified == d.certified and c.rho == d.rho and c.solver == d.solver == "CLARABEL"


def test_an_onset_is_the_same_from_the_bisection_or_its_keywords():
    a = onset.onset_by_horizon([1], 10.0, lo=1.3, hi=1.45, tol=0.02)
    b = onset.onset_by_horizon([1], 10.0, bisection=Bisection(lo=1.3, hi=1.45, tol=0.02))
    assert a == b and a[0]["lo"] < onset.t1_onset_value() <= a[0]["hi"]
