"""The toolkit's documented fallbacks reach the user as one line ``stam: warning: ...`` (issue 40):
never Python's warning format with the file, the line number and the source line, never an
exception's many lines (a compiler's command).  Run in a fresh process, where stderr is the real
stderr (pytest records warnings in its own process)."""

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from stam.errors import StamWarning, first_line, format_warning, one_line_warnings, warn
from test_imagefolder import small

COMPILER_ERROR = ("C++ compile error\n\nCommand:\ng++ /tmp/torchinductor/xx.cpp -D TORCH_INDUCTOR_CPP_WRAPPER\n"
                  "  -shared -fPIC -O3 -o /tmp/xx.so\n\nOutput:\nxx.cpp:1:1: error: oops")


def test_format_is_one_line_and_names_other_libraries_warnings():
    assert format_warning("a\nb", StamWarning, "f.py", 3) == "stam: warning: a\n"
    assert format_warning(COMPILER_ERROR, UserWarning, "f.py", 3, "src") == "stam: warning: UserWarning: C++ compile error\n"
    assert first_line("\n\n  x  \ny") == "x" and first_line("z" * 400, 10) == "zzzzzzz..."
    with pytest.warns(StamWarning, match="^fell back$"):
        warn("fell back\nwith details")
    saved = warnings.formatwarning
    with one_line_warnings():
        assert warnings.formatwarning is format_warning
    assert warnings.formatwarning is saved


def test_the_image_cache_and_aot_fallbacks_are_one_line_each_on_stderr(tmp_path):
    """``stam train --compile aot`` on a small JPEG copy with a full disk under the image cache and
    export failing with a compiler's many-line message: both fallbacks are one ``stam: warning:``
    line, the run succeeds."""
    path, _ = small(tmp_path, "tar.gz", "JPEG", n_train=3, n_test=1)
    script = textwrap.dedent(f"""
        import errno, sys, torch
        from stam import compiling
        from stam.dnn import imagefolder
        def full(*a, **k):
            raise OSError(errno.ENOSPC, "No space left on device")
        imagefolder._write_cache = full
        def no_export(*a, **k):
            raise RuntimeError({COMPILER_ERROR!r})
        torch.export.export = no_export
        compiling.compiled_or_eager = lambda fn, what, **kw: fn  # no inductor build in a test
        from stam.cli import main
        sys.exit(main(["train", "--dataset", "cifar10", "--data-dir", {str(path)!r}, "--model", "cnn", "--epochs", "1",
                       "--algo", "stam", "--batch-size", "8", "--no-progress", "--quiet", "--compile", "aot",
                       "--out", {str(tmp_path / "run")!r}]))
    """)
    env = {**os.environ, "STAM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONWARNINGS": "default"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    assert lines and all(line.startswith("stam: warning: ") for line in lines), out.stderr
    assert any("could not write the image cache" in line and "No space left on device" in line for line in lines), out.stderr
    aot = [line for line in lines if "ahead-of-time compilation unavailable" in line]
    assert aot and "C++ compile error" in aot[0] and "g++" not in out.stderr, out.stderr
