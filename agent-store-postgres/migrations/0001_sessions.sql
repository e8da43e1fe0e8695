-- Sessions, their transcripts, their event logs and their writer leases.
--
-- Payloads (metadata, transcript records, events) are JSON text kept verbatim: TEXT, not
-- JSONB, so a value round-trips byte for byte (JSONB reorders keys and rejects \u0000) and
-- the server never parses what only the host reads. The columns beside them are copies of
-- the metadata fields that listing filters and sorts on.

CREATE TABLE sessions (
    session_id        TEXT PRIMARY KEY,
    -- The whole SessionMeta as JSON; NULL for a session that has records or events but
    -- whose metadata was never saved.
    meta              TEXT,
    workspace_key     TEXT NOT NULL DEFAULT '',
    workspace_path    TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    title             TEXT NOT NULL DEFAULT '',
    mode              TEXT NOT NULL DEFAULT '',
    provider_id       TEXT NOT NULL DEFAULT '',
    model             TEXT NOT NULL DEFAULT '',
    created_at_ms     BIGINT NOT NULL DEFAULT 0,
    updated_at_ms     BIGINT NOT NULL DEFAULT 0,
    -- Transcript records stored (the next record's index is this + 1).
    record_count      BIGINT NOT NULL DEFAULT 0,
    -- The event log's oldest retained and last stored seq (0 and 0 when empty).
    oldest_seq        BIGINT NOT NULL DEFAULT 0,
    last_seq          BIGINT NOT NULL DEFAULT 0,
    CHECK (record_count >= 0 AND oldest_seq >= 0 AND last_seq >= oldest_seq)
);

-- Listing: most recently updated first, ties by id; per workspace (key or path).
CREATE INDEX sessions_updated ON sessions (updated_at_ms DESC, session_id DESC)
    WHERE meta IS NOT NULL;
CREATE INDEX sessions_workspace_key ON sessions (workspace_key, updated_at_ms DESC, session_id DESC)
    WHERE meta IS NOT NULL;
CREATE INDEX sessions_workspace_path ON sessions (workspace_path, updated_at_ms DESC, session_id DESC)
    WHERE meta IS NOT NULL;
CREATE INDEX sessions_parent ON sessions (parent_session_id)
    WHERE parent_session_id IS NOT NULL;

-- The agent's transcript records (agent-core SessionRecord JSON), 1, 2, 3, … per session.
CREATE TABLE session_records (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    idx        BIGINT NOT NULL CHECK (idx > 0),
    record     TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
);

-- A front end's numbered events (ZCode session/event), seq 1, 2, 3, … per session.
CREATE TABLE session_events (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL CHECK (seq > 0),
    event      TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- One writer per session across the fleet: the node running a turn holds the session's
-- lease, renews it while the turn runs and deletes it at the end. A lease past its expiry,
-- or whose holder's presence lock is gone (the node's process died), may be taken over.
CREATE TABLE session_leases (
    session_id   TEXT PRIMARY KEY,
    -- A random token per acquisition: only its holder renews or releases it.
    token        UUID NOT NULL,
    -- The holding node's description (host, pid), for the busy error.
    holder       TEXT NOT NULL,
    -- The key of the advisory lock the holding node keeps while it lives.
    holder_key   INTEGER NOT NULL,
    acquired_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
