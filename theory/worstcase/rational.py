"""Exact rational linear algebra for the proofs of :mod:`stam.theory.worstcase.lyapunov` (issue 39, "certified means proven").

Everything here works on lists (rows) of :class:`fractions.Fraction` (or ints): no floating point, no rounding, so a
matrix found positive definite here *is* positive definite.  Small and dependency-free (the Lyapunov forms are at
most a few dozen rows): Gauss-Jordan elimination (:func:`rref`), a basis of a null space (:func:`nullspace`), the
least-norm solution of a consistent linear system (:func:`solve_min_norm`) and Sylvester's criterion in its
elimination form, an exact ``LDL^T`` factorisation without pivoting (:func:`positive_definite`: a symmetric matrix is
positive definite if and only if every pivot is positive, the pivots being the ratios of its leading principal
minors).
"""

from __future__ import annotations

from fractions import Fraction


def fraction(v) -> Fraction | int:
    """The exact value of a number: a float is the dyadic rational it stores (no rounding), an int or Fraction itself
    (every division here is by a Fraction, so an int never turns into a float)."""
    return v if type(v) is Fraction or type(v) is int else Fraction(v)


def exact(v) -> Fraction | int:
    """``v`` itself when it is exact (a Fraction or an int); anything else (a float) raises TypeError."""
    if type(v) is Fraction or type(v) is int:
        return v
    raise TypeError(f"{v!r} is not exact (a Fraction or an int)")


def matrix(rows, strict: bool = False) -> list[list[Fraction]]:
    """A matrix (any nested sequence of numbers, e.g. a numpy object or float array) as rows of exact numbers: a float
    taken at the rational it stores, or (``strict``) refused (TypeError: a form that should be exact is not)."""
    conv = exact if strict else fraction
    return [[conv(v) for v in row] for row in rows]


def symmetric_part(M, strict: bool = False) -> list[list[Fraction]]:
    """``(M + M')/2`` exactly (``M`` itself where it is symmetric, the usual case); ``strict``: as :func:`matrix`."""
    m = matrix(M, strict)
    n = len(m)
    for i in range(n):
        for j in range(i):
            if m[i][j] != m[j][i]:
                m[i][j] = m[j][i] = Fraction(m[i][j] + m[j][i]) / 2
    return m


def _eliminate(m: list[list[Fraction]], ncol: int, largest: bool = False) -> list[int]:
    """Exact Gauss-Jordan elimination of the rows ``m``, in place, over their first ``ncol`` columns (further
    columns, a right-hand side, are carried along); returns the pivot columns (the first ``len(pivots)`` rows are
    then the reduced rows).  The pivot of a column is its first nonzero entry, or with ``largest`` the entry of
    largest magnitude."""
    pivots: list[int] = []
    r = 0
    for c in range(ncol):
        rows = range(r, len(m))
        p = (max(rows, key=lambda i: abs(m[i][c]), default=None) if largest
             else next((i for i in rows if m[i][c] != 0), None))
        if p is None or m[p][c] == 0:
            continue
        m[r], m[p] = m[p], m[r]
        inv = Fraction(1) / m[r][c]
        m[r] = [v * inv if v else v for v in m[r]]
        for i in range(len(m)):
            if i != r and m[i][c] != 0:
                f = m[i][c]
                m[i] = [a - f * b if b else a for a, b in zip(m[i], m[r])]
        pivots.append(c)
        r += 1
        if r == len(m):
            break
    return pivots


def rref(rows) -> tuple[list[list[Fraction]], list[int]]:
    """The reduced row echelon form of ``rows`` (exact Gauss-Jordan elimination) and its pivot columns; the zero
    rows are dropped, so the result's rows are a basis of the row space."""
    m = matrix(rows)
    pivots = _eliminate(m, len(m[0]) if m else 0)
    return m[:len(pivots)], pivots


def nullspace(rows, ncol: int | None = None) -> list[list[Fraction]]:
    """A basis (a list of vectors) of ``{x : rows x = 0}``; ``ncol`` the length of ``x`` when ``rows`` is empty."""
    ncol = len(rows[0]) if rows else int(ncol or 0)
    red, pivots = rref(rows) if rows else ([], [])
    basis = []
    for f in (c for c in range(ncol) if c not in pivots):
        x = [Fraction(0)] * ncol
        x[f] = Fraction(1)
        for row, p in zip(red, pivots):
            x[p] = -row[f]
        basis.append(x)
    return basis


def span_basis(vectors, n: int) -> list[list[Fraction]]:
    """A basis of the span of ``vectors`` (each of length ``n``): the nonzero rows of their echelon form."""
    return rref(vectors)[0] if vectors else []


def complement(basis, n: int) -> list[list[Fraction]]:
    """Unit vectors that complete ``basis`` (independent vectors of length ``n``) to a basis of the whole space: those
    of the non-pivot coordinates of its echelon form."""
    pivots = rref(basis)[1] if basis else []
    out = []
    for j in range(n):
        if j not in pivots:
            e = [Fraction(0)] * n
            e[j] = Fraction(1)
            out.append(e)
    return out


def dot(a, b) -> Fraction:
    """``a . b``, skipping the zero entries (the forms are sparse)."""
    return sum((u * v for u, v in zip(a, b) if u and v), Fraction(0))


def matvec(A, x) -> list[Fraction]:
    return [dot(row, x) for row in A]


def combine(x, forms) -> list[list[Fraction]]:
    """``sum_v x_v forms[v]`` (square matrices), skipping the zero weights and entries."""
    n = len(forms[0]) if forms else 0
    out = [[Fraction(0)] * n for _ in range(n)]
    for xv, f in zip(x, forms):
        if xv:
            for row_o, row_f in zip(out, f):
                for j, e in enumerate(row_f):
                    if e:
                        row_o[j] += xv * e
    return out


def in_row_space(red, pivots, v) -> bool:
    """Whether ``v`` is a combination of the rows of ``red`` (:func:`rref`'s result, with its pivots)."""
    v = list(v)
    for row, p in zip(red, pivots):
        if v[p]:
            f = v[p]
            v = [a - f * b if b else a for a, b in zip(v, row)]
    return not any(v)


def solve_min_norm(A, r) -> list[Fraction] | None:
    """The least-norm ``x`` with ``A x = r`` exactly (``x = A' y`` with ``A A' y = r`` over an independent set of
    rows), or None when the system has no solution."""
    n = len(A[0]) if A else 0
    if not A:
        return []
    aug = [list(row) + [fraction(v)] for row, v in zip(matrix(A), r)]
    red, pivots = rref(aug)
    if n in pivots:  # a row 0 = nonzero: inconsistent
        return None
    rows = [row[:n] for row in red]  # independent rows with the same solutions
    rhs = [row[n] for row in red]
    if not rows:
        return [Fraction(0)] * n
    gram = [[dot(ri, rj) for rj in rows] for ri in rows]
    y_red, _ = rref([g + [v] for g, v in zip(gram, rhs)])
    y = [row[-1] for row in y_red]
    return [sum((yi * row[j] for yi, row in zip(y, rows)), Fraction(0)) for j in range(n)]


def solve_basic(A, r) -> list[Fraction] | None:
    """A solution ``x`` of ``A x = r`` exactly, nonzero only on the pivot columns of an elimination that takes in each
    column the entry of largest magnitude as pivot (a small correction for a well-posed system), or None when the
    system has no solution.  One elimination (:func:`solve_min_norm` takes two and a Gram matrix)."""
    n = len(A[0]) if A else 0
    m = [list(row) + [fraction(v)] for row, v in zip(matrix(A), r)]
    pivots = _eliminate(m, n, largest=True)
    rank = len(pivots)
    if any(row[n] != 0 for row in m[rank:]):
        return None
    x = [Fraction(0)] * n
    for row, c in zip(m, pivots):
        x[c] = row[n]
    return x


def positive_definite(M) -> bool:
    """Whether the symmetric matrix ``M`` is positive definite, decided exactly: ``LDL^T`` without pivoting, which
    succeeds with every pivot ``d_k > 0`` exactly when every leading principal minor is positive (Sylvester's
    criterion; ``d_k`` is the ratio of the k-th to the (k-1)-th).  The empty matrix is positive definite."""
    a = matrix(M)
    n = len(a)
    if any(a[i][j] != a[j][i] for i in range(n) for j in range(i)):
        raise ValueError("positive_definite: the matrix is not symmetric")
    for k in range(n):
        d = a[k][k]
        if d <= 0:
            return False
        for i in range(k + 1, n):
            if a[i][k] != 0:
                f = Fraction(a[i][k]) / d
                for j in range(k + 1, i + 1):
                    a[i][j] -= f * a[k][j]
                    a[j][i] = a[i][j]
    return True


def congruent(B, M) -> list[list[Fraction]]:
    """``B M B'`` (``B`` rows: the vectors of a basis; the form ``M`` restricted to their span)."""
    MB = [matvec(M, b) for b in B]  # M b for each b (M symmetric)
    return [[dot(bi, mb) for mb in MB] for bi in B]
