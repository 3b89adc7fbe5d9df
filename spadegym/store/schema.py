"""The run store's SQLite schema: one table per kind of record the loop writes.

Every row written during a round carries that round's number and references
``rounds(round)`` through a *deferred* foreign key. The ``rounds`` row is
inserted by ``finish()``, so a round transaction that was never finished cannot
commit: a half-written round is impossible by construction, not by convention.
Environment ids are deliberately not foreign keys (held-out environments and
episodes of environments from earlier rounds must not need a fresh row).
"""

from __future__ import annotations

SCHEMA_VERSION = 2
#: What each older schema lacks, added when such a store is opened (1: a level's kind and a remote level's settings).
MIGRATIONS = {
    1: ("ALTER TABLE environments ADD COLUMN kind TEXT NOT NULL DEFAULT 'file'",
        "ALTER TABLE environments ADD COLUMN remote TEXT"),
}

DDL = """
CREATE TABLE schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL              -- JSON: config, versions, created_at
);

CREATE TABLE rounds (
    round       INTEGER PRIMARY KEY,
    summary     TEXT NOT NULL,       -- JSON: the round's metrics, as the loop wrote them
    finished_at REAL NOT NULL        -- unix time
);

CREATE TABLE environments (
    env_id    TEXT PRIMARY KEY,
    round     INTEGER NOT NULL REFERENCES rounds(round) DEFERRABLE INITIALLY DEFERRED,
    kind      TEXT NOT NULL DEFAULT 'file', -- 'file' or 'remote' (level.KINDS)
    source    TEXT,                  -- the environment file (kind file)
    remote    TEXT,                  -- JSON: the OpenEnv server's settings (kind remote)
    hint      TEXT,
    skill     TEXT,
    family    TEXT,
    knobs     TEXT NOT NULL,         -- JSON object
    lineage   TEXT NOT NULL,         -- JSON object
    code_hash TEXT,
    meta      TEXT NOT NULL,         -- JSON object
    valid     INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX environments_round ON environments(round);

CREATE TABLE proposals (
    id           INTEGER PRIMARY KEY,
    round        INTEGER NOT NULL REFERENCES rounds(round) DEFERRABLE INITIALLY DEFERRED,
    candidate_id TEXT,
    candidate    TEXT NOT NULL,      -- JSON: the Candidate as proposed (source included)
    verdict      TEXT,               -- JSON verdict, NULL when never validated
    env_id       TEXT,
    valid        INTEGER NOT NULL,
    reward       REAL                -- designer reward, set later by set_proposal_reward
);
CREATE INDEX proposals_round ON proposals(round);
CREATE INDEX proposals_candidate ON proposals(candidate_id);

CREATE TABLE episodes (
    id      INTEGER PRIMARY KEY,
    round   INTEGER NOT NULL REFERENCES rounds(round) DEFERRABLE INITIALLY DEFERRED,
    split   TEXT NOT NULL,           -- 'train' or 'heldout'
    env_id  TEXT NOT NULL,
    seed    INTEGER,
    hinted  INTEGER NOT NULL,
    ret     REAL NOT NULL,
    success INTEGER NOT NULL,
    failure TEXT,
    turns   INTEGER NOT NULL,
    data    BLOB NOT NULL            -- zlib-compressed JSON of the whole Episode dict
);
CREATE INDEX episodes_env ON episodes(env_id, round);
CREATE INDEX episodes_round ON episodes(round, split);

CREATE TABLE scores (
    id              INTEGER PRIMARY KEY,
    round           INTEGER NOT NULL REFERENCES rounds(round) DEFERRABLE INITIALLY DEFERRED,
    env_id          TEXT NOT NULL,
    win_rate        REAL,
    win_rate_hint   REAL,
    regret          REAL,
    oracle_regret   REAL,
    designer_reward REAL,
    plays           INTEGER,
    plays_hint      INTEGER,
    extra           TEXT NOT NULL    -- JSON object
);
CREATE INDEX scores_env ON scores(env_id, round);
CREATE INDEX scores_round ON scores(round);

CREATE TABLE state (
    key   TEXT PRIMARY KEY,
    round INTEGER NOT NULL REFERENCES rounds(round) DEFERRABLE INITIALLY DEFERRED,
    value TEXT NOT NULL              -- JSON: latest value of this state blob
);
"""

# Tables a store must have; used to tell a spadegym store from any other SQLite file.
TABLES = ("schema_version", "meta", "rounds", "environments", "proposals", "episodes", "scores", "state")
