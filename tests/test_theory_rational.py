"""Exact rational linear algebra (stam.theory.worstcase.rational), the ground of the proofs of stam.theory.worstcase.lyapunov.prove:
property tests against sympy's exact arithmetic and against constructions whose answer is known."""

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.theory.worstcase import rational as rq

small = st.integers(-6, 6)


def matrices(rows, cols):
    return st.lists(st.lists(small, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 5), r=st.integers(0, 5))
def test_positive_definite_is_sylvester_exactly(data, n, r):
    """B'B + c I is positive definite iff c > 0 or B has full column rank; a Gram matrix of rank < n is only
    semidefinite, with an eigenvalue exactly 0 that floating point cannot place: the exact test says no."""
    B = sp.Matrix(data.draw(matrices(r, n))) if r else sp.zeros(0, n)
    c = data.draw(st.sampled_from([-1, 0, 1]))
    M = B.T * B + c * sp.eye(n)
    expected = all(d > 0 for d in [M[:k, :k].det() for k in range(1, n + 1)])  # Sylvester's criterion
    assert rq.positive_definite(M.tolist()) is expected
    if c >= 0:
        assert expected == (c > 0 or B.rank() == n)


def test_positive_definite_refuses_an_asymmetric_matrix_and_takes_the_empty_one():
    with pytest.raises(ValueError, match="symmetric"):
        rq.positive_definite([[1, 2], [0, 1]])
    assert rq.positive_definite([])
    assert not rq.positive_definite([[Fraction(1), Fraction(1)], [Fraction(1), Fraction(1)]])  # eigenvalue 0
    eps = Fraction(1, 10**40)  # far below floating point: 1 + eps is 1.0
    assert rq.positive_definite([[1, 1], [1, 1 + eps]]) and not rq.positive_definite([[1, 1], [1, 1 - eps]])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(1, 5), n=st.integers(1, 6))
def test_nullspace_complement_and_row_space(data, m, n):
    A = data.draw(matrices(m, n))
    basis = rq.nullspace(A)
    rank = sp.Matrix(A).rank()
    assert len(basis) == n - rank
    assert all(v == 0 for b in basis for v in rq.matvec(A, b))
    comp = rq.complement(basis, n)
    assert len(comp) == rank and (not basis + comp or sp.Matrix(basis + comp).rank() == n)
    red, piv = rq.rref(A)
    assert len(red) == rank
    w = data.draw(st.lists(small, min_size=m, max_size=m))  # a combination of the rows: in their span
    assert rq.in_row_space(red, piv, [sum(wi * row[j] for wi, row in zip(w, A)) for j in range(n)])
    if rank < n:  # a null vector is orthogonal to every row, so in the row space only if zero
        assert not rq.in_row_space(red, piv, basis[0])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(1, 5), n=st.integers(1, 6))
def test_solve_min_norm_is_exact_and_least_norm(data, m, n):
    A = data.draw(matrices(m, n))
    x0 = data.draw(st.lists(small, min_size=n, max_size=n))
    r = rq.matvec(A, x0)
    x = rq.solve_min_norm(A, r)
    assert rq.matvec(A, x) == r
    # least norm: x is in the row space of A (orthogonal to the null space)
    assert all(rq.dot(x, b) == 0 for b in rq.nullspace(A))
    if sp.Matrix(A).rank() < m:  # some right-hand side is out of the column space
        y = rq.nullspace([list(col) for col in zip(*A)])[0]  # A' y = 0
        assert rq.solve_min_norm(A, [ri + yi for ri, yi in zip(r, y)]) is None


def test_no_float_enters():
    """A float is taken at the exact rational it stores, never rounded (0.1 is not 1/10)."""
    assert rq.fraction(0.1) == Fraction(3602879701896397, 36028797018963968) != Fraction(1, 10)
    assert all(type(v) in (int, Fraction) for row in rq.matrix([[0.5, 1], [2, Fraction(1, 3)]]) for v in row)
    assert rq.positive_definite([[2, 1], [1, 1]]) and rq.solve_basic([[2]], [1]) == [Fraction(1, 2)]  # int / int stays exact
