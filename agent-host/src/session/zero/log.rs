//! `events.jsonl` as the event log of a [`SessionStorage`](crate::session::SessionStorage):
//! a stored event is one line of the file, its `sequence` the event's seq.
//!
//! An event that is itself a Zero line (`{id, sessionId, sequence, type, createdAt,
//! payload?}` with this session's id and the event's seq, what [`ZeroSessions::append`]
//! writes) is the line, byte for byte. Any other JSON (another front end's event) becomes
//! the payload of a line of type [`HOST_EVENT`], so the file stays in Zero's layout, and is
//! read back from it byte for byte. Lines are appended through
//! `ZeroSessions::append_lines`, the one writer of the file.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::records::SessionEventLine;
use super::sessions::{io, now_rfc3339, NewLine, ZeroError, ZeroSessions};
use super::{EVENTS_FILE, LOCK_FILE};
use crate::fs::{parse_jsonl, write_atomic, FileLock};
use crate::session::storage::{EventBounds, StoreError, StoredEvent};

/// The type of a line holding another front end's event as its payload.
pub const HOST_EVENT: &str = "host_event";

/// The fields of a stored line the log reads.
#[derive(Debug, Deserialize)]
struct Head {
    sequence: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    payload: Option<Box<RawValue>>,
}

/// A Zero line exactly: an event of this shape is stored as it is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ZeroLine {
    id: String,
    session_id: String,
    sequence: u64,
    #[serde(rename = "type")]
    kind: String,
    created_at: String,
    #[serde(default)]
    #[allow(dead_code)]
    payload: Option<IgnoredAny>,
}

/// One whole line of the file.
#[derive(Debug)]
struct Line {
    head: Head,
    raw: Box<RawValue>,
}

impl Line {
    fn into_event(self) -> StoredEvent {
        let event = match (self.head.kind == HOST_EVENT, self.head.payload) {
            (true, Some(payload)) => payload,
            _ => self.raw,
        };
        StoredEvent {
            seq: self.head.sequence,
            event,
        }
    }
}

fn corrupt(id: &str, message: impl std::fmt::Display) -> ZeroError {
    ZeroError::Corrupt(format!("zero session {id} {EVENTS_FILE}: {message}"))
}

/// Every whole line of a session's file, in order; a torn last line is dropped (the rule of
/// [`ZeroSessions::read_events`]).
fn lines(sessions: &ZeroSessions, id: &str) -> Result<Vec<Line>, ZeroError> {
    let data = match std::fs::read(sessions.session_dir(id).join(EVENTS_FILE)) {
        Ok(data) => data,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io("read zero session events")(err)),
    };
    let raws = parse_jsonl::<Box<RawValue>>(&data)
        .map_err(|err| corrupt(id, format!("line {}: {}", err.line, err.message)))?
        .records;
    let count = raws.len();
    let mut out = Vec::with_capacity(count);
    for (index, raw) in raws.into_iter().enumerate() {
        match serde_json::from_str::<Head>(raw.get()) {
            Ok(head) => out.push(Line { head, raw }),
            // A last line that is JSON but no event is a torn write too.
            Err(_) if index + 1 == count => {}
            Err(err) => return Err(corrupt(id, format!("event {}: {err}", index + 1))),
        }
    }
    Ok(out)
}

fn bounds_of(lines: &[Line], event_count: u64) -> EventBounds {
    // The next append continues after the metadata's count when it is ahead of the file
    // (`append_lines`), so the log ends there too.
    let last = lines.last().map_or(0, |l| l.head.sequence).max(event_count);
    let oldest = lines.first().map_or(last, |l| l.head.sequence);
    EventBounds { oldest, last }
}

/// The line `event` is stored as (see the module docs), written at `created_at`.
fn encode(id: &str, event: &StoredEvent, created_at: &str) -> Result<NewLine, StoreError> {
    let json = event.json();
    if let Ok(line) = serde_json::from_str::<ZeroLine>(json) {
        if line.sequence != event.seq
            || line.session_id != id
            || line.id != format!("{id}:{}", event.seq)
        {
            return Err(StoreError::Corrupt {
                context: format!("event {} of zero session {id}", event.seq),
                message: format!("a Zero line of another place ({})", line.id),
            });
        }
        // JSON has no raw line breaks inside strings: any are whitespace, kept off the line.
        let mut bytes = json.replace(['\n', '\r'], " ").into_bytes();
        bytes.push(b'\n');
        return Ok(NewLine {
            sequence: event.seq,
            kind: line.kind,
            created_at: line.created_at,
            bytes,
        });
    }
    let payload = match json.contains(['\n', '\r']) {
        false => None,
        true => Some(
            RawValue::from_string(json.replace(['\n', '\r'], " ")).map_err(|err| {
                StoreError::Corrupt {
                    context: format!("event {} of zero session {id}", event.seq),
                    message: err.to_string(),
                }
            })?,
        ),
    };
    let line = SessionEventLine {
        id: format!("{id}:{}", event.seq),
        session_id: id,
        sequence: event.seq,
        kind: HOST_EVENT,
        created_at,
        payload: Some(payload.as_deref().unwrap_or(&event.event)),
    };
    Ok(NewLine::encode(&line)?)
}

/// Appends `events` (seqs continuing the log) to session `id`, fsynced when `sync`.
pub(super) fn append(
    sessions: &ZeroSessions,
    id: &str,
    events: &[StoredEvent],
    sync: bool,
) -> Result<(), StoreError> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    ZeroSessions::check_id(id)?;
    if !sessions.session_dir(id).is_dir() {
        return Err(StoreError::NotFound(id.to_string()));
    }
    sessions.append_lines(id, sync, |next| {
        let conflict = |message: String| StoreError::Conflict {
            session_id: id.to_string(),
            message,
        };
        if first.seq != next {
            return Err(conflict(format!(
                "event log ends at seq {}, the batch starts at {}",
                next - 1,
                first.seq
            )));
        }
        if let Some(pair) = events.windows(2).find(|p| p[1].seq != p[0].seq + 1) {
            return Err(conflict(format!(
                "the batch skips from seq {} to {}",
                pair[0].seq, pair[1].seq
            )));
        }
        let created_at = now_rfc3339();
        events
            .iter()
            .map(|event| encode(id, event, &created_at))
            .collect()
    })
}

/// The events with `seq > after` of session `id`, oldest first, at most `limit`.
pub(super) fn read_after(
    sessions: &ZeroSessions,
    id: &str,
    after: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    ZeroSessions::check_id(id)?;
    Ok(lines(sessions, id)?
        .into_iter()
        .filter(|l| l.head.sequence > after)
        .take(limit)
        .map(Line::into_event)
        .collect())
}

/// The bounds of session `id`'s log.
pub(super) fn bounds(sessions: &ZeroSessions, id: &str) -> Result<EventBounds, StoreError> {
    ZeroSessions::check_id(id)?;
    let count = sessions
        .read_metadata(id)?
        .map_or(0, |meta| meta.event_count);
    Ok(bounds_of(&lines(sessions, id)?, count))
}

/// Drops the events with `seq < before` (never the last one) of session `id`: the kept lines
/// replace the file atomically, under the session's lock.
pub(super) fn trim(
    sessions: &ZeroSessions,
    id: &str,
    before: u64,
) -> Result<EventBounds, StoreError> {
    ZeroSessions::check_id(id)?;
    let dir = sessions.session_dir(id);
    if !dir.join(EVENTS_FILE).exists() {
        return Ok(EventBounds::EMPTY);
    }
    let _lock = FileLock::exclusive(&dir.join(LOCK_FILE)).map_err(io("lock zero session"))?;
    let count = sessions
        .read_metadata(id)?
        .map_or(0, |meta| meta.event_count);
    let all = lines(sessions, id)?;
    let current = bounds_of(&all, count);
    let before = before.min(current.last);
    if current.is_empty() || current.oldest >= before {
        return Ok(current);
    }
    let kept: Vec<Line> = all
        .into_iter()
        .filter(|l| l.head.sequence >= before)
        .collect();
    let mut data = Vec::new();
    for line in &kept {
        data.extend_from_slice(line.raw.get().as_bytes());
        data.push(b'\n');
    }
    write_atomic(&dir.join(EVENTS_FILE), &data).map_err(io("trim zero session events"))?;
    Ok(bounds_of(&kept, count))
}
