"""The run store (SQLite, one file per run directory) and its exports.

The store is the single source of truth of a run: the loop writes one
transaction per round, and the report, the exports and ``--resume`` only read it.
"""

from .runstore import DB_NAME, RoundTransaction, RunStore, StoreError, versions

__all__ = ["DB_NAME", "RoundTransaction", "RunStore", "StoreError", "versions"]
