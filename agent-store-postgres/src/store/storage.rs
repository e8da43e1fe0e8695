//! The [`SessionStore`] (transcripts) and [`SessionStorage`] (metadata, the event log, writer
//! claims) implementations of [`PgStore`].

use super::*;

#[async_trait]
impl SessionStore for PgStore {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        let json = serde_json::to_string(record).map_err(|e| SessionError::Corrupt {
            context: id.to_string(),
            message: e.to_string(),
        })?;
        // One statement: the session row's counter and the record commit together.
        const APPEND: &str = "
WITH s AS (
    INSERT INTO sessions (session_id, record_count) VALUES ($1, 1)
    ON CONFLICT (session_id) DO UPDATE SET record_count = sessions.record_count + 1
    RETURNING record_count)
INSERT INTO session_records (session_id, idx, record) SELECT $1, record_count, $2 FROM s
RETURNING idx";
        let idx: i64 = self
            .inner
            .timed("append to a transcript", id, async {
                sqlx::query_scalar(APPEND)
                    .bind(id)
                    .bind(&json)
                    .fetch_one(&self.inner.pool)
                    .await
            })
            .await?;
        self.inner.seen(id, |seen| seen.records = idx);
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        let rows: Vec<(i64, String)> = self
            .inner
            .timed("load a transcript", id, async {
                sqlx::query_as(
                    "SELECT idx, record FROM session_records WHERE session_id = $1 ORDER BY idx",
                )
                .bind(id)
                .fetch_all(&self.inner.pool)
                .await
            })
            .await?;
        if rows.is_empty() && !self.exists(id).await? {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let records = rows.last().map_or(0, |(idx, _)| *idx);
        self.inner.seen(id, |seen| seen.records = records);
        rows.iter()
            .map(|(idx, json)| {
                serde_json::from_str(json).map_err(|err| SessionError::Corrupt {
                    context: format!("transcript record {idx} of session {id}"),
                    message: err.to_string(),
                })
            })
            .collect()
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        Ok(self
            .inner
            .timed("list sessions", "*", async {
                sqlx::query_scalar("SELECT session_id FROM sessions ORDER BY session_id")
                    .fetch_all(&self.inner.pool)
                    .await
            })
            .await?)
    }
}

#[async_trait]
impl SessionStorage for PgStore {
    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let id = meta.session_id.as_str();
        let json = serde_json::to_string(meta).map_err(|err| StoreError::Corrupt {
            context: format!("metadata of session {id}"),
            message: err.to_string(),
        })?;
        const SAVE: &str = "
INSERT INTO sessions (session_id, meta, workspace_key, workspace_path, parent_session_id,
                      title, mode, provider_id, model, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (session_id) DO UPDATE SET
    meta = EXCLUDED.meta, workspace_key = EXCLUDED.workspace_key,
    workspace_path = EXCLUDED.workspace_path, parent_session_id = EXCLUDED.parent_session_id,
    title = EXCLUDED.title, mode = EXCLUDED.mode, provider_id = EXCLUDED.provider_id,
    model = EXCLUDED.model, created_at_ms = EXCLUDED.created_at_ms,
    updated_at_ms = EXCLUDED.updated_at_ms";
        self.inner
            .timed("save session metadata", id, async {
                sqlx::query(SAVE)
                    .bind(id)
                    .bind(&json)
                    .bind(column(&meta.workspace_key))
                    .bind(column(&meta.workspace_path))
                    .bind(meta.parent_session_id.as_deref().map(column))
                    .bind(column(&meta.title))
                    .bind(meta.mode.as_str())
                    .bind(column(&meta.provider_id))
                    .bind(column(&meta.model))
                    .bind(meta.created_at)
                    .bind(meta.updated_at)
                    .execute(&self.inner.pool)
                    .await
            })
            .await?;
        self.inner
            .seen(id, |seen| seen.updated_at = Some(meta.updated_at));
        Ok(())
    }

    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        let json: Option<Option<String>> = self
            .inner
            .timed("load session metadata", id, async {
                sqlx::query_scalar("SELECT meta FROM sessions WHERE session_id = $1")
                    .bind(id)
                    .fetch_optional(&self.inner.pool)
                    .await
            })
            .await?;
        let meta = match json.flatten() {
            Some(json) => decode_meta(id, &json)?,
            None => return Err(StoreError::NotFound(id.to_string())),
        };
        self.inner
            .seen(id, |seen| seen.updated_at = Some(meta.updated_at));
        Ok(meta)
    }

    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        self.list_meta_page(&MetaQuery::default()).await
    }

    async fn list_meta_page(&self, query: &MetaQuery) -> Result<Vec<SessionMeta>, StoreError> {
        let mut sql = QueryBuilder::<Postgres>::new(
            "SELECT session_id, meta FROM sessions WHERE meta IS NOT NULL",
        );
        if let Some(workspace) = &query.workspace {
            let workspace = column(workspace).into_owned();
            sql.push(" AND (workspace_key = ")
                .push_bind(workspace.clone())
                .push(" OR workspace_path = ")
                .push_bind(workspace)
                .push(")");
        }
        if let Some(ids) = &query.session_ids {
            sql.push(" AND session_id = ANY(")
                .push_bind(ids.clone())
                .push(")");
        }
        if let Some((updated_at, id)) = &query.before {
            sql.push(" AND (updated_at_ms, session_id) < (")
                .push_bind(*updated_at)
                .push(", ")
                .push_bind(id.clone())
                .push(")");
        }
        sql.push(" ORDER BY updated_at_ms DESC, session_id DESC");
        if let Some(limit) = query.limit {
            sql.push(" LIMIT ")
                .push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let rows: Vec<(String, String)> = self
            .inner
            .timed("list sessions", "*", async {
                sql.build_query_as().fetch_all(&self.inner.pool).await
            })
            .await?;
        let mut metas = Vec::with_capacity(rows.len());
        for (id, json) in rows {
            match decode_meta(&id, &json) {
                Ok(meta) => metas.push(meta),
                Err(err) => tracing::warn!(session = %id, error = %err, "skipping session"),
            }
        }
        Ok(metas)
    }

    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
        self.flush_wal("make a transcript durable", id).await
    }

    async fn sync_events(&self, id: &str) -> Result<(), StoreError> {
        self.flush_wal("make an event log durable", id).await
    }

    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: Durability,
    ) -> Result<(), StoreError> {
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return Ok(());
        };
        let context = "append to an event log";
        if events.windows(2).any(|w| w[1].seq != w[0].seq + 1) {
            return Err(StoreError::Conflict {
                session_id: id.to_string(),
                message: "the batch's seqs are not consecutive".to_string(),
            });
        }
        let first_seq = to_i64(context, id, first.seq)?;
        let last_seq = to_i64(context, id, last.seq)?;
        let seqs: Vec<i64> = (first_seq..=last_seq).collect();
        let texts: Vec<&str> = events.iter().map(StoredEvent::json).collect();
        // One statement (one round trip, one implicit transaction): the session row moves
        // its last seq only when the batch continues it (a concurrent writer's update is
        // re-checked after its commit), a missing row is created only for a log that
        // starts at 1, and the events are inserted only when one of the two happened.
        // `set_config(…, true)` makes this transaction's commit wait for the WAL flush when
        // the batch must be durable.
        const APPEND: &str = "
WITH cfg AS (SELECT set_config('synchronous_commit', $6, true)),
upd AS (
    UPDATE sessions
    SET last_seq = $3, oldest_seq = CASE WHEN oldest_seq = 0 THEN $2 ELSE oldest_seq END
    WHERE session_id = $1 AND last_seq = $2 - 1
    RETURNING 1),
ins AS (
    INSERT INTO sessions (session_id, oldest_seq, last_seq)
    SELECT $1, $2, $3
    WHERE $2 = 1 AND NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1)
    ON CONFLICT (session_id) DO NOTHING
    RETURNING 1)
INSERT INTO session_events (session_id, seq, event)
SELECT $1, e.seq, e.event FROM UNNEST($4::bigint[], $5::text[]) AS e(seq, event)
WHERE EXISTS (SELECT 1 FROM upd UNION ALL SELECT 1 FROM ins) AND EXISTS (SELECT 1 FROM cfg)";
        let commit = match (durability, self.inner.options.async_commit) {
            (Durability::Buffered, true) => "off",
            _ => "on",
        };
        let done = self
            .inner
            .timed(context, id, async {
                sqlx::query(APPEND)
                    .bind(id)
                    .bind(first_seq)
                    .bind(last_seq)
                    .bind(&seqs)
                    .bind(&texts)
                    .bind(commit)
                    .execute(&self.inner.pool)
                    .await
            })
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict {
                session_id: id.to_string(),
                message: format!(
                    "the batch starting at seq {first_seq} does not continue the stored log"
                ),
            });
        }
        self.inner.seen(id, |seen| seen.last_seq = last_seq);
        Ok(())
    }

    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let context = "read an event log";
        if limit == 0 {
            return Ok(Vec::new());
        }
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<(i64, String)> = self
            .inner
            .timed(context, id, async {
                sqlx::query_as(
                    "SELECT seq, event FROM session_events WHERE session_id = $1 AND seq > $2 \
                     ORDER BY seq LIMIT $3",
                )
                .bind(id)
                .bind(after)
                .bind(limit)
                .fetch_all(&self.inner.pool)
                .await
            })
            .await?;
        rows.into_iter()
            .map(|(seq, json)| {
                let seq = to_u64(context, id, seq)?;
                StoredEvent::new(seq, json).map_err(|err| StoreError::Corrupt {
                    context: format!("event {seq} of session {id}"),
                    message: err.to_string(),
                })
            })
            .collect()
    }

    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
        let context = "read an event log's bounds";
        let row: Option<(i64, i64)> = self
            .inner
            .timed(context, id, async {
                sqlx::query_as("SELECT oldest_seq, last_seq FROM sessions WHERE session_id = $1")
                    .bind(id)
                    .fetch_optional(&self.inner.pool)
                    .await
            })
            .await?;
        let (oldest, last) = row.unwrap_or((0, 0));
        self.inner.seen(id, |seen| seen.last_seq = last);
        Ok(EventBounds {
            oldest: to_u64(context, id, oldest)?,
            last: to_u64(context, id, last)?,
        })
    }

    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
        let context = "trim an event log";
        let before = i64::try_from(before).unwrap_or(i64::MAX);
        self.inner
            .bounded(context, async {
                let sql = |err| store_error(context, id, err);
                let mut tx = self.inner.begin(context, id, false).await?;
                let (oldest, last) = Self::lock_session(&mut tx, context, id).await?;
                // The last event always stays.
                let keep_from = before.min(last);
                if last == 0 || keep_from <= oldest {
                    tx.commit().await.map_err(sql)?;
                    return Ok(EventBounds {
                        oldest: to_u64(context, id, oldest)?,
                        last: to_u64(context, id, last)?,
                    });
                }
                sqlx::query("DELETE FROM session_events WHERE session_id = $1 AND seq < $2")
                    .bind(id)
                    .bind(keep_from)
                    .execute(&mut *tx)
                    .await
                    .map_err(sql)?;
                sqlx::query("UPDATE sessions SET oldest_seq = $2 WHERE session_id = $1")
                    .bind(id)
                    .bind(keep_from)
                    .execute(&mut *tx)
                    .await
                    .map_err(sql)?;
                tx.commit().await.map_err(sql)?;
                Ok(EventBounds {
                    oldest: to_u64(context, id, keep_from)?,
                    last: to_u64(context, id, last)?,
                })
            })
            .await
    }

    async fn changed_elsewhere(&self, id: &str) -> Result<bool, StoreError> {
        let context = "check a session for changes";
        let stored: Option<(i64, i64, i64)> = self
            .inner
            .timed(context, id, async {
                sqlx::query_as(
                    "SELECT record_count, last_seq, updated_at_ms FROM sessions WHERE session_id = $1",
                )
                .bind(id)
                .fetch_optional(&self.inner.pool)
                .await
            })
            .await?;
        Ok(stored.is_some_and(|stored| self.inner.changed(id, stored)))
    }

    async fn claim_writer(&self, id: &str) -> Result<Option<Box<dyn WriterClaim>>, StoreError> {
        let lease = lease::acquire(&self.inner, id, true).await?;
        let stale = self.changed_elsewhere(id).await?;
        Ok(Some(Box::new(lease::PgClaim::new(lease, stale))))
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        // Its records and events go with it (ON DELETE CASCADE); a stale lease too.
        let deleted = self
            .inner
            .timed("delete a session", id, async {
                sqlx::query("DELETE FROM session_leases WHERE session_id = $1")
                    .bind(id)
                    .execute(&self.inner.pool)
                    .await?;
                sqlx::query("DELETE FROM sessions WHERE session_id = $1 AND meta IS NOT NULL")
                    .bind(id)
                    .execute(&self.inner.pool)
                    .await
            })
            .await?;
        match deleted.rows_affected() {
            0 => Err(StoreError::NotFound(id.to_string())),
            _ => Ok(()),
        }
    }
}
