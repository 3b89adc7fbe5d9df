"""The command line runs numpy's OpenBLAS on one thread unless the user names a count (``spadegym.cli``)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = "import os, spadegym.cli, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"


def _threads(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_command_line_sets_one_blas_thread_and_keeps_a_count_the_user_set():
    assert _threads() == "1"
    assert _threads(OPENBLAS_NUM_THREADS="3") == "3"
