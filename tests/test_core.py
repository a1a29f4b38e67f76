"""The shared STAM update (stam.steps) and the quantised set Q (stam.quantize)."""

import itertools
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stam.steps import STAMState, stam_init, stam_step
from stam.operators import Composite, IndicatorQ, QuadraticCoupling
from stam import quantize
from stam.quantize import Blocks, block_ids_from_sizes, block_scales, project_Q


def test_import_stam_and_theory_cli_do_not_import_torch():
    code = "import sys, stam, stam.cli; stam.cli.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@given(st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_project_Q_is_optimal_against_brute_force(n, seed):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(1, n, generator=g, dtype=torch.float64)
    if n > 1:
        v[0, 0] = 0.0  # sign(0) = +1 must be handled
    ids = block_ids_from_sizes([n])
    p = project_Q(v, ids, 1)
    best = min(
        float(((torch.tensor(signs, dtype=torch.float64) * s - v[0]) ** 2).sum())
        for signs in itertools.product([-1.0, 1.0], repeat=n)
        for s in [max(0.0, float((torch.tensor(signs, dtype=torch.float64) * v[0]).sum()) / n)]
    )
    assert float(((p - v) ** 2).sum()) <= best + 1e-12
    assert torch.all(p[0].abs() == p[0].abs()[0])


def test_project_Q_blocks_and_sign_zero():
    v = torch.tensor([[0.0, -2.0, 1.0, 3.0, -1.0]])
    ids = block_ids_from_sizes([2, 3])
    p = project_Q(v, ids, 2)
    assert torch.allclose(p, torch.tensor([[1.0, -1.0, 5 / 3, 5 / 3, -5 / 3]]))


def _project_Q_reference(v, ids, B):
    """eq. (0412) coordinate by coordinate: s_i = mean |v| over block i, sign(0) = +1."""
    out = torch.empty_like(v)
    for r in range(v.shape[0]):
        for i in range(B):
            m = ids == i
            out[r, m] = torch.where(v[r, m] >= 0, 1.0, -1.0).to(v.dtype) * v[r, m].abs().mean()
    return out


@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(1, 3), st.booleans(), st.integers(0, 2**31 - 1))
def test_blocks_paths_agree_with_eq_0412(sizes, R, shuffle, seed):
    """Contiguous blocks take the per-block view path, any other partition the index path; both
    are eq. (0412) exactly, zeros and -0.0 included (sign +1)."""
    g = torch.Generator().manual_seed(seed)
    ids = block_ids_from_sizes(sizes)
    if shuffle:
        ids = ids[torch.randperm(len(ids), generator=g)]
    B, n = len(sizes), len(ids)
    blocks = Blocks.of(ids, B)
    contiguous = bool((ids[1:] >= ids[:-1]).all())
    assert (blocks.sizes is not None) == contiguous and blocks.split == contiguous
    assert blocks.counts.tolist() == [int((ids == i).sum()) for i in range(B)]
    v = torch.randn(R, n, generator=g, dtype=torch.float64)
    v[v.abs() < 0.3] = 0.0
    v[0, 0] = -0.0
    p, ref = project_Q(v, blocks), _project_Q_reference(v, ids, B)
    assert torch.allclose(p, ref, rtol=1e-14, atol=0) and torch.equal(p.signbit(), ref.signbit())
    assert torch.equal(project_Q(v, ids, B), p)  # a raw id tensor gives the same
    scales = torch.tensor([[float(ref[r, ids == i].abs().max()) for i in range(B)] for r in range(R)], dtype=v.dtype)
    assert torch.allclose(block_scales(v, blocks), scales, rtol=1e-14, atol=0)


def test_many_contiguous_blocks_use_the_index_path(monkeypatch):
    monkeypatch.setattr(quantize, "SPLIT_MAX_BLOCKS", 2)
    ids = block_ids_from_sizes([2, 3, 1])
    blocks = Blocks.of(ids, 3)
    assert blocks.sizes == (2, 3, 1) and not blocks.split
    v = torch.tensor([[0.0, -2.0, 1.0, 3.0, -1.0, -0.0]])
    p, ref = project_Q(v, blocks), _project_Q_reference(v, ids, 3)
    assert torch.allclose(p, ref, rtol=1e-6, atol=0) and torch.equal(p.signbit(), ref.signbit())


def test_stam_step_network_specialisation_matches_eq_alg_stamm():
    """With H = (lam/2)||x-y||^2 and F = I_Q the generic step is eq. (alg:stamm) with x^t in the W-update."""
    torch.manual_seed(0)
    n, lam, gamma, beta = 7, 0.7, 0.3, 5.0
    ids = block_ids_from_sizes([3, 4])
    ops = Composite(QuadraticCoupling(lam), IndicatorQ(ids, 2))
    s = stam_init(torch.randn(2, n), ops, gamma)
    g = torch.randn(2, n)
    new = stam_step(s, g, ops, gamma, beta)
    W = ((beta - lam) * s.y + lam * s.x - g) / beta
    U = (gamma * lam * W + s.z) / (gamma * lam + 1)
    V = project_Q(2 * U - s.z, ids, 2)
    X = s.z + V - U
    for a, b in zip(new, STAMState(W, U, V, X)):
        assert torch.allclose(a, b, atol=1e-6)


def test_start_rule_satisfies_optimality_at_t0():
    torch.manual_seed(1)
    lam, gamma = 0.5, 0.2
    ops = Composite(QuadraticCoupling(lam), IndicatorQ(block_ids_from_sizes([5]), 1))
    y0 = torch.randn(3, 5)
    s = stam_init(y0, ops, gamma)
    z_prev = y0
    # eq. (eq13) at t=0: 0 = grad_x H(x0, y0) + (x0 - z^{-1})/gamma
    assert torch.allclose(lam * (s.x - y0) + (s.x - z_prev) / gamma, torch.zeros_like(y0), atol=1e-6)
    assert torch.allclose(s.z - z_prev, s.u - s.x)


def test_progress_bars_only_on_a_terminal():
    """bar_disable: a bar the user turned off never shows; one left on shows on a terminal and
    not in a file (a redirected log holds no progress bars)."""
    import io

    from tqdm import tqdm

    from stam.io import bar_disable

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def shown(progress, stream):
        for _ in tqdm(range(3), file=stream, disable=bar_disable(progress)):
            pass
        return "3/3" in stream.getvalue()

    assert shown(True, Terminal()) and not shown(True, io.StringIO())
    assert not shown(False, Terminal()) and not shown(False, io.StringIO())


def test_atomic_write_is_whole_or_absent_with_ordinary_permissions(tmp_path):
    import os
    import stat

    from stam.io import atomic_path, atomic_write_text

    target = tmp_path / "sub" / "result.json"
    atomic_write_text(target, "new")
    mask = os.umask(0)
    os.umask(mask)
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert target.read_text() == "new" and [p.name for p in target.parent.iterdir()] == ["result.json"]


def test_stale_temporaries_of_killed_writes_are_removed_by_age(tmp_path):
    import os
    import time

    from stam.io import remove_stale_temporaries

    target = tmp_path / "tune-digits.json"
    old, new, other = tmp_path / ".tune-digits.json.a1.tmp", tmp_path / ".tune-digits.json.b2.tmp", tmp_path / ".other.json.c3.tmp"
    for p in (old, new, other):
        p.write_text("x")
    past = time.time() - 3600
    os.utime(old, (past, past))
    assert remove_stale_temporaries([target], older_than=600) == [old]  # a fresh one may be another process's
    assert new.exists() and other.exists()
    assert remove_stale_temporaries([target]) == [new] and other.exists()  # only the named file's temporaries


def test_user_input_files_that_are_not_regular_files_or_too_big_are_one_line(tmp_path):
    import os

    from stam.errors import UsageError
    from stam.io import read_input_text

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_input_text(fifo, "--space-file pipe")  # would block forever if opened
    with pytest.raises(UsageError, match="not a regular file"):
        read_input_text(tmp_path)
    big = tmp_path / "big.json"
    big.write_text("x" * 100)
    with pytest.raises(UsageError, match="100 bytes, more than the 10"):
        read_input_text(big, max_bytes=10)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_input_text(bad)
    assert read_input_text(big) == "x" * 100


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 100), st.floats(0.05, 1e4), st.booleans(), st.integers(0, 2**31 - 1))
def test_the_fused_y_step_of_the_quadratic_coupling_is_eq_algy(lam, beta, beta_as_tensor, seed):
    """QuadraticCoupling.y_step (lerp + addcdiv_, two passes) is eq. (algy)'s
    ``y - (grad_G + lam (y - x)) / beta`` to rounding, per run; non-torch arrays take the plain form."""
    import numpy as np

    from stam.steps import y_step
    from stam.operators import Composite, IndicatorQ, QuadraticCoupling

    gen = torch.Generator().manual_seed(seed)
    x, y, g = (torch.randn(3, 50, generator=gen, dtype=torch.float64) for _ in range(3))
    lams = torch.tensor([[lam], [2 * lam], [lam / 3]], dtype=torch.float64)
    b = torch.full((3, 1), beta, dtype=torch.float64) if beta_as_tensor else beta
    ops = Composite(QuadraticCoupling(lams), IndicatorQ(None))
    assert ops.y_step is not None
    torch.testing.assert_close(y_step(ops, x, y, g, b), y - (g + lams * (y - x)) / b, rtol=1e-12, atol=1e-12)
    from stam.steps import _reflect

    torch.testing.assert_close(_reflect(x, y), 2 * x - y, rtol=1e-12, atol=1e-12)  # eq. (algu)'s point, one pass
    plain = Composite(QuadraticCoupling(lam), None)
    xn, yn, gn = x[0].numpy(), y[0].numpy(), g[0].numpy()
    np.testing.assert_allclose(y_step(plain, xn, yn, gn, beta), yn - (gn + lam * (yn - xn)) / beta, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(1, 3), st.booleans(), st.integers(0, 2**31 - 1))
def test_in_place_passes_are_the_formulas_bit_for_bit_and_leave_inputs_alone(sizes, R, zeros, seed):
    """eq. (algz) taken in place in the fresh difference (``_z_step``), and BinaryRelax's relaxation
    written over the fresh projection (``IndicatorQ.PROX_IS_NEW``): the same numbers, bit for bit, as
    ``z + (u1 - x1)`` and ``p.lerp(u, t)``, with every input untouched; the projection of every path
    of ``project_Q`` shares no memory with its input (what ``PROX_IS_NEW`` declares); a prox that
    returns its input is not overwritten."""
    from stam.steps import QuantizedState, _z_step, br_relax, br_step

    gen = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    z, u1, x1, g = (torch.randn(R, n, generator=gen) for _ in range(4))
    if zeros:  # signed zeros, where the order of an addition could show
        z[:, ::3], u1[:, ::4], x1[:, ::4] = -0.0, 0.0, -0.0
    saved = [t.clone() for t in (z, u1, x1)]
    out = _z_step(z, u1, x1)
    assert torch.equal(out, z + (u1 - x1)) and torch.equal(out.signbit(), (z + (u1 - x1)).signbit())
    assert all(torch.equal(a, b) for a, b in zip((z, u1, x1), saved))

    q = IndicatorQ(block_ids_from_sizes(sizes), len(sizes))
    for ops in (q, IndicatorQ(None)):
        p = ops.prox_F(u1, 1.0)
        assert p.untyped_storage().data_ptr() != u1.untyped_storage().data_ptr()
    lam = torch.rand(R, 1, generator=gen) * 5
    relaxed = torch.rand(R, 1, generator=gen) < 0.5
    u0 = u1.clone()
    new = br_step(QuantizedState(u1, u1), g, q, 0.1, lam, relaxed.to(u1.dtype))
    u_next = u1.add(g, alpha=-0.1)  # the gradient step as _descend takes it
    p = project_Q(u_next, q.blocks)
    assert torch.equal(new.u, u_next) and torch.equal(new.w, p.lerp(u_next, relaxed.to(u1.dtype) / (lam + 1)))
    assert torch.equal(u1, u0)
    assert torch.equal(br_relax(u1, q, lam), project_Q(u1, q.blocks).lerp(u1, 1 / (lam + 1)))

    class Identity:  # a prox handing back its input: relaxing must not write over it
        def prox_F(self, v, gamma):
            return v

    assert torch.equal(br_relax(u1, Identity(), lam), u1.lerp(u1, 1 / (lam + 1))) and torch.equal(u1, u0)
