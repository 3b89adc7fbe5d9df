"""Import OpenEnv without its Gradio web UI, which spadegym's server and clients never use.

OpenEnv's ``openenv.core`` imports its web interface (Gradio) on every import, which is most of the import's time,
and every ``spadegym serve`` and every OpenEnv level would pay it before its first step. OpenEnv guards that import
(a missing Gradio leaves ``create_web_interface_app = None``), so spadegym imports
OpenEnv with Gradio kept out, unless ``ENABLE_WEB_INTERFACE`` asks for OpenEnv's web UI or Gradio is loaded already.
"""

from __future__ import annotations

import os
import sys


def import_openenv() -> None:
    """Import ``openenv.core`` (once per process), leaving Gradio out when nothing asks for OpenEnv's web UI."""
    if "openenv.core" in sys.modules:
        return
    web = os.environ.get("ENABLE_WEB_INTERFACE", "false").lower() in ("true", "1", "yes")
    if web or "gradio" in sys.modules:
        import openenv.core  # noqa: F401
        return
    sys.modules["gradio"] = None  # type: ignore[assignment]  # makes `import gradio` raise ModuleNotFoundError
    try:
        import openenv.core  # noqa: F401
    finally:
        if sys.modules.get("gradio", False) is None:
            del sys.modules["gradio"]  # a later `import gradio` by anyone else works as before


import_openenv()
