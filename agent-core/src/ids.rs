//! Identifiers: the one place the workspace draws its ids from.
//!
//! Every id is, or is cut from, a uuid v4, from one of two sources:
//!
//! - [`random_uuid`]: a fresh random uuid v4 per call (the operating system's random
//!   source). For ids made now and then that should not be guessable: sessions, turns,
//!   sub-agents, runs.
//! - [`sequential_uuid`]: a uuid v4 drawn once per process, with a per-call counter added
//!   to its low 62 random bits. The ids stay well-formed v4 uuids, distinct within the
//!   process (2^62 of them before one repeats) and as unlikely to collide across processes
//!   as the 60 remaining random bits make them, without a random draw per id. For ids
//!   made at a high rate (one per wire event). One such id predicts the next: never use
//!   them where guessing matters.
//!
//! Their prefixed forms, `<prefix>_<id>`, are [`prefixed`], [`prefixed_sequential`] and
//! [`prefixed_hex`] (a shorter random tail); an id of a format of its own takes its
//! random bits from [`random_u64`].
//!
//! ```
//! use agent_core::ids;
//!
//! let session = ids::prefixed("sess");
//! assert_eq!(session.len(), "sess_".len() + 36);
//! let event = ids::prefixed_sequential("evt");
//! assert_ne!(event, ids::prefixed_sequential("evt"));
//! let task = ids::prefixed_hex("specialist", 24);
//! assert_eq!(task.len(), "specialist_".len() + 24);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use uuid::Uuid;

/// A random uuid v4, hyphenated lowercase (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
pub fn random_uuid() -> String {
    Uuid::new_v4().hyphenated().to_string()
}

/// A uuid v4 unique within the process, cheap enough for one per event (see the
/// [module docs](self)); hyphenated lowercase like [`random_uuid`].
pub fn sequential_uuid() -> String {
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    sequential()
        .hyphenated()
        .encode_lower(&mut text)
        .to_string()
}

/// `<prefix>_<`[`random_uuid`]`>`.
pub fn prefixed(prefix: &str) -> String {
    with_prefix(prefix, Uuid::new_v4())
}

/// `<prefix>_<`[`sequential_uuid`]`>`, for ids made at a high rate.
pub fn prefixed_sequential(prefix: &str) -> String {
    with_prefix(prefix, sequential())
}

/// `<prefix>_<digits lowercase hex digits>` cut from a random uuid v4 (its simple form,
/// at most 32 digits; the first 12 are all random).
pub fn prefixed_hex(prefix: &str, digits: usize) -> String {
    let mut text = [0u8; uuid::fmt::Simple::LENGTH];
    let hex = Uuid::new_v4().simple().encode_lower(&mut text);
    let hex = &hex[..digits.min(hex.len())];
    let mut out = String::with_capacity(prefix.len() + 1 + hex.len());
    out.push_str(prefix);
    out.push('_');
    out.push_str(hex);
    out
}

/// 64 random bits, from the same source as [`random_uuid`].
pub fn random_u64() -> u64 {
    let (high, low) = Uuid::new_v4().as_u64_pair();
    // The low half's top two bits are the variant; the high half's low bits are random.
    (low & ((1 << 62) - 1)) | (high << 62)
}

/// Bits of a uuid v4 that are random and below its variant bits: the counter's room.
const COUNTER_BITS: u128 = (1 << 62) - 1;

/// The next per-process sequential uuid v4.
fn sequential() -> Uuid {
    static BASE: OnceLock<u128> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| Uuid::new_v4().as_u128());
    let n = u128::from(NEXT.fetch_add(1, Ordering::Relaxed));
    Uuid::from_u128((base & !COUNTER_BITS) | (base.wrapping_add(n) & COUNTER_BITS))
}

/// `<prefix>_<id hyphenated lowercase>` in one allocation.
fn with_prefix(prefix: &str, id: Uuid) -> String {
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let text = id.hyphenated().encode_lower(&mut text);
    let mut out = String::with_capacity(prefix.len() + 1 + text.len());
    out.push_str(prefix);
    out.push('_');
    out.push_str(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_v4(text: &str) -> Uuid {
        assert_eq!(text.len(), 36, "{text}");
        assert_eq!(text, text.to_ascii_lowercase());
        let id = Uuid::parse_str(text).expect("a uuid");
        assert_eq!(id.get_version_num(), 4, "{text}");
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{text}");
        id
    }

    #[test]
    fn random_and_sequential_ids_are_distinct_v4_uuids() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(parse_v4(&random_uuid())));
            assert!(seen.insert(parse_v4(&sequential_uuid())));
        }
    }

    #[test]
    fn prefixed_forms_keep_their_format() {
        let id = prefixed("sess");
        parse_v4(id.strip_prefix("sess_").expect("prefix"));
        let id = prefixed_sequential("evt");
        parse_v4(id.strip_prefix("evt_").expect("prefix"));
        let id = prefixed_hex("subagent", 24);
        let hex = id.strip_prefix("subagent_").expect("prefix");
        assert_eq!(hex.len(), 24);
        assert!(hex
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(prefixed_hex("x", 99).len(), 2 + 32);
        assert_ne!(prefixed_hex("x", 24), prefixed_hex("x", 24));
    }

    #[test]
    fn random_u64_varies_in_every_bit() {
        let (mut ones, mut zeros) = (0u64, 0u64);
        for _ in 0..256 {
            let n = random_u64();
            ones |= n;
            zeros |= !n;
        }
        assert_eq!((ones, zeros), (u64::MAX, u64::MAX));
    }
}
