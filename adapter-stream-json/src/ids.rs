//! Run and session identifiers.

use chrono::{DateTime, Utc};

/// `run_<UTC yyyyMMddHHmmss>_<6 lowercase hex>`.
pub fn run_id(now: DateTime<Utc>) -> String {
    format!(
        "run_{}_{:06x}",
        now.format("%Y%m%d%H%M%S"),
        agent_core::ids::random_u64() & 0xff_ffff
    )
}

// Zero's session ids (`zero_<UTC yyyyMMddHHmmss>_<UnixNano>_<counter>`, and Zero's check, which
// trims first) are agent-host's, beside the layout they name.
pub use agent_host::session::zero::{new_session_id as session_id, valid_session_id};

/// `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`: the check every output line's `runId` passes.
pub fn valid_run_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn run_ids_have_the_stable_prefix() {
        let now = Utc
            .with_ymd_and_hms(2026, 6, 4, 12, 34, 56)
            .single()
            .expect("valid time");
        let id = run_id(now);
        assert!(id.starts_with("run_20260604123456_"), "{id}");
        let hex = &id["run_20260604123456_".len()..];
        assert_eq!(hex.len(), 6);
        assert!(hex
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(valid_run_id(&id));
        assert_ne!(run_id(now), run_id(now), "ids are random");
    }
}
