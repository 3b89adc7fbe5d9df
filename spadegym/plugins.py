"""Your own parts by name: ``package.module:Name``, the one idiom for agents, designers and designer rewards."""

from __future__ import annotations

import importlib
from typing import Any


def is_import_path(spec: str) -> bool:
    """``package.module:Name``: a dotted module before the colon and a name after it."""
    module, sep, name = spec.partition(":")
    return bool(sep and "." in module and name.isidentifier())


def import_object(spec: str, what: str) -> Any:
    """The object ``package.module:Name`` names; a ``ValueError`` of one sentence when it cannot be imported."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what} '{spec}' cannot be imported ({exc}); give module:{name or 'Name'} of an "
                         "importable module.") from None
