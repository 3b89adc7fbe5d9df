"""A pool packaged as an OpenEnv environment: the folder ``openenv build`` and ``openenv push`` take.

OpenEnv's conventions (its ``openenv init`` template and ``openenv validate``): an ``openenv.yaml`` manifest with
a ``validation:`` block, a ``pyproject.toml`` whose ``server`` script runs ``server/app.py:main``, that app under
``if __name__ == "__main__"``, and a Dockerfile. spadegym is installed from a checkout, not from an index, so the
package carries its own copy of spadegym beside the pool's files: the folder builds and runs on any machine.
The one file it cannot hold is ``uv.lock``, which resolves against an index: ``uv lock`` in the folder makes it.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

from .. import __version__
from ..errors import UserError
from ..outputs import make_folder, write_bytes, write_text
from .levels import LevelSource

#: What the package's own copy of spadegym leaves out: caches, never code.
_SKIPPED = re.compile(r"(^|/)__pycache__(/|$)|\.py[co]$")
#: The port OpenEnv's images serve on (its template's and its Spaces' convention).
PORT = 8000

APP = '''"""The OpenEnv app of this package: spadegym serving the environment files in pool/ (OpenEnv's HTTP and
WebSocket API; each session plays in a sandbox worker)."""

import os
from pathlib import Path

from spadegym.adapters.openenv_server import http_server, make_app

POOL = Path(__file__).resolve().parent.parent / "pool"
app = make_app(POOL)


def main(host: str = "0.0.0.0", port: int = int(os.environ.get("PORT", {port}))) -> None:
    http_server(POOL, host=host, port=port).run()


if __name__ == "__main__":
    main()
'''

DOCKERFILE = '''# The pool's OpenEnv server: `openenv build` (or `docker build -f server/Dockerfile .`) from the package folder.
ARG BASE_IMAGE=python:3.11-slim
FROM ${{BASE_IMAGE}}
WORKDIR /app/env
COPY . /app/env
RUN pip install --no-cache-dir .
ENV PYTHONPATH=/app/env
EXPOSE {port}
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \\
    CMD python -c "import urllib.request; urllib.request.urlopen('http://localhost:{port}/health')"
CMD ["server"]
'''


def _dependencies() -> list[str]:
    """spadegym's own requirements (those every install has) and OpenEnv's, as this install declares them."""
    requires = importlib.metadata.requires("spadegym") or []
    core = [r for r in requires if "extra ==" not in r]
    openenv = [r.split(";")[0].strip() for r in requires if 'extra == "openenv"' in r]
    return [*core, *openenv]


def _manifest(name: str, skills: list[str]) -> str:
    """``openenv.yaml``: JSON is YAML, so every value is quoted as the parser reads it."""
    tags = ["spadegym", *sorted({s.lower().replace(" ", "-") for s in skills if s})]
    lines = ["spec_version: 1", f"name: {json.dumps(name)}", f"version: {json.dumps(__version__)}", "type: space",
             "runtime: fastapi", "app: server.app:app", f"port: {PORT}", "validation:",
             "  reward:", "    range: [0.0, 1.0]", "    oracle_tolerance: 0.0", "    floor_margin: 0.1",
             "  resources:", "    cpu: 1.0", "    memory_mb: 1024", "    disk_mb: 512", "    episode_timeout_s: 60.0",
             "  network:", "    mode: no-network",  # the levels run in spadegym's sandbox, which has none
             "  capabilities:", "    verifier:", "      kind: reward_channel",
             "  types:", f"    tags: {json.dumps(tags)}"]
    return "\n".join(lines) + "\n"


def _pyproject(name: str) -> str:
    deps = ",\n".join(f"    {json.dumps(d)}" for d in _dependencies())
    return f'''[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = {json.dumps("openenv-" + name)}
version = {json.dumps(__version__)}
description = "spadegym environment files served as an OpenEnv environment"
requires-python = ">=3.10"
dependencies = [
{deps},
]

[project.scripts]
server = "server.app:main"

[tool.setuptools.packages.find]
include = ["spadegym*", "server*"]

[tool.setuptools.package-data]
spadegym = ["data/*"]
'''


def write_package(levels: LevelSource, out: str | Path, name: str) -> Path:
    """Write the OpenEnv package of ``levels`` (their files as they are now) into the new folder ``out``."""
    out = Path(out)
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        raise UserError(f"--name {name!r}: an OpenEnv environment name is lower-case letters, digits, '_' and '-'.")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty folder; name a new folder for the package.")
    pool = levels.levels()
    if not pool:
        raise UserError("there are no levels to package; pass a folder of environment files or a run directory.")
    make_folder(out, out)
    for level in pool:
        write_text(out / "pool" / Path(level.filename).name, level.source, root=out)
    package = Path(__file__).resolve().parent.parent
    for file in sorted(package.rglob("*")):
        relative = file.relative_to(package).as_posix()
        if file.is_file() and not file.is_symlink() and not _SKIPPED.search(relative):
            write_bytes(out / "spadegym" / relative, file.read_bytes(), root=out)
    write_text(out / "server" / "__init__.py", "", root=out)
    write_text(out / "server" / "app.py", APP.replace("{port}", str(PORT)), root=out)
    write_text(out / "server" / "Dockerfile", DOCKERFILE.format(port=PORT), root=out)
    write_text(out / "openenv.yaml", _manifest(name, [level.skill for level in pool]), root=out)
    write_text(out / "pyproject.toml", _pyproject(name), root=out)
    write_text(out / "README.md", f"# {name}\n\n{len(pool)} spadegym environment file(s) served as an OpenEnv "
                                  "environment. Run `uv lock` here once, then `openenv build` and `openenv push`; "
                                  f"locally: `pip install . && server` (port {PORT}).\n", root=out)
    return out
