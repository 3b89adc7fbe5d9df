"""How long the validation gate takes for a pool of environments (copies of the test fixtures).

    python benchmarks/validate_pool.py [COUNT]

Prints the total and per-file wall time with one shared sandbox.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from spadegym.sandbox import Sandbox
from spadegym.validate import validate_paths

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "envs"


def main(count: int = 100) -> None:
    sources = sorted(FIXTURES.glob("*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            src = sources[i % len(sources)]
            # A comment keeps the copies distinct files, as a generated pool would be.
            Path(tmp, f"env_{i:03d}.py").write_text(f"# copy {i}\n" + src.read_text())
        with Sandbox() as box:
            start = time.perf_counter()
            verdicts = list(validate_paths([tmp], sandbox=box))
            total = time.perf_counter() - start
    valid = sum(v.valid for v in verdicts)
    slowest = max(verdicts, key=lambda v: v.seconds)
    print(f"{len(verdicts)} environments, {valid} valid: {total:.2f} s total, "
          f"{total / len(verdicts) * 1000:.0f} ms per file, slowest {slowest.seconds * 1000:.0f} ms "
          f"({Path(slowest.file).name})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
