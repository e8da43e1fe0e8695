//! Zero's protocol-level redaction, applied to every output line and session record payload
//! through [`Redacted`], the one place it happens.
//!
//! Two rules, both replacing with [`REDACTED`]:
//!
//! - **Sensitive keys** at any depth of an object: the whole value becomes the string
//!   `"[REDACTED]"`. A key is normalised by lower-casing it and keeping only `[a-z0-9]`; it is
//!   sensitive when the result is one of a fixed set of names (`apikey`, `token`, `password`,
//!   …) or ends with `apikey`, `clientsecret`, `accesstoken`, `refreshtoken`, `idtoken` or
//!   `privatekey` (the [`NameRules::ProtocolKeys`] column of
//!   [`agent_core::secrets::SENSITIVE_WORDS`], the table the tool scrubber reads too). So `api_key`, `accessToken` and `OPENAI_API_KEY` are redacted, while
//!   `promptTokens` is not.
//! - **Secret-shaped strings** in every string value: OpenAI-style `sk-…` keys, `api_key=…`
//!   assignments with a credential-length value and `Bearer …` tokens. Prose such as
//!   `"the bearer of bad news"` or `"task-list"` is left alone.
//!
//! Tool-boundary scrubbing (the much broader patterns applied to tool output) is the tools
//! crate's job; its result shows up as `tool_result.redacted`.

use std::cell::Cell;
use std::sync::OnceLock;

use agent_core::secrets::{is_sensitive_normalized, NameRules, WordMatch, SENSITIVE_WORDS};
use regex::{Captures, Regex};
use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

mod writer;

/// The replacement token.
pub const REDACTED: &str = agent_core::secrets::REDACTED;

/// True when `key` names a secret (see the module docs).
pub fn is_sensitive_key(key: &str) -> bool {
    // The normalised key's last two bytes are the key's last two ASCII letters or digits,
    // lower-cased, provided no non-ASCII character comes after them (lower-casing some
    // non-ASCII characters yields ASCII letters, e.g. U+212A → k). Read from the end, they
    // name the few words the key may match: most keys match none, and are done with here.
    let mut tail = [0u8; 2];
    let mut found = 0;
    for &b in key.as_bytes().iter().rev() {
        if !b.is_ascii() {
            return sensitive_non_ascii(key);
        }
        if b.is_ascii_alphanumeric() {
            found += 1;
            tail[2 - found] = b.to_ascii_lowercase();
            if found == 2 {
                break;
            }
        }
    }
    // Every word is at least two bytes long: a shorter normalised key matches none.
    let pair = match Endings::pair(tail[0], tail[1]) {
        Some(pair) if found == 2 => pair,
        _ => return false,
    };
    // The normalised key is no longer than the key (no character lower-cases to more ASCII
    // letters than it has bytes): a key shorter than every word of its ending matches none.
    let words = KEY_ENDINGS.words[pair];
    if words == 0 || key.len() < usize::from(KEY_ENDINGS.shortest[pair]) {
        return false;
    }
    matches_key(words, key)
}

/// Whether `key` matches one of `words` (see [`matches_any`]), normalising it first: the rare
/// half of [`is_sensitive_key`], kept out of line so the common one stays small.
#[inline(never)]
fn matches_key(words: u32, key: &str) -> bool {
    let bytes = key.as_bytes();
    // A key of letters and digits only is compared as it is (copying it too cost 15
    // instructions per event of the mixed load); other ASCII keys are reduced on the stack.
    if bytes.iter().all(u8::is_ascii_alphanumeric) {
        return matches_any(words, bytes);
    }
    let mut buf = [0u8; 64];
    if bytes.len() <= buf.len() && bytes.is_ascii() {
        let mut len = 0;
        for &b in bytes.iter().filter(|b| b.is_ascii_alphanumeric()) {
            buf[len] = b;
            len += 1;
        }
        return matches_any(words, &buf[..len]);
    }
    matches_any(words, normalize(key).as_bytes())
}

/// `key` lower-cased and reduced to `[a-z0-9]`, the way Zero normalises a key.
fn normalize(key: &str) -> String {
    key.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .collect()
}

/// Whether `normalized` matches one of the words of [`SENSITIVE_WORDS`] whose bits are set in
/// `words`, the way Zero's key rules use it. `normalized` is `[a-zA-Z0-9]`: case is ignored
/// (the words are lower-case).
fn matches_any(mut words: u32, normalized: &[u8]) -> bool {
    while words != 0 {
        let entry = &SENSITIVE_WORDS[words.trailing_zeros() as usize];
        words &= words - 1;
        let word = entry.word.as_bytes();
        let matched = match entry.protocol_keys {
            WordMatch::Unused => false,
            WordMatch::Exact => normalized.eq_ignore_ascii_case(word),
            WordMatch::Suffix => normalized
                .len()
                .checked_sub(word.len())
                .is_some_and(|from| normalized[from..].eq_ignore_ascii_case(word)),
        };
        if matched {
            return true;
        }
    }
    false
}

/// For each pair of bytes over `[a-z0-9]`, the words of Zero's key rules ending in it, as a
/// bit set over the indices of [`SENSITIVE_WORDS`] (a normalised key can match only the words
/// of its last two bytes: every word is at least two bytes long), and the shortest of them.
struct Endings {
    words: [u32; 36 * 36],
    shortest: [u8; 36 * 36],
}

const fn alnum_index(b: u8) -> Option<usize> {
    match b {
        b'a'..=b'z' => Some((b - b'a') as usize),
        b'0'..=b'9' => Some(26 + (b - b'0') as usize),
        _ => None,
    }
}

impl Endings {
    const fn pair(a: u8, b: u8) -> Option<usize> {
        match (alnum_index(a), alnum_index(b)) {
            (Some(a), Some(b)) => Some(a * 36 + b),
            _ => None,
        }
    }
}

const KEY_ENDINGS: Endings = {
    assert!(SENSITIVE_WORDS.len() <= 32, "a word set is a u32");
    let mut words = [0u32; 36 * 36];
    let mut shortest = [u8::MAX; 36 * 36];
    let mut i = 0;
    while i < SENSITIVE_WORDS.len() {
        let word = SENSITIVE_WORDS[i].word.as_bytes();
        if !matches!(SENSITIVE_WORDS[i].protocol_keys, WordMatch::Unused) {
            assert!(word.len() >= 2, "a sensitive word is at least two bytes");
            assert!(word.len() < u8::MAX as usize, "a sensitive word is short");
            let Some(p) = Endings::pair(word[word.len() - 2], word[word.len() - 1]) else {
                panic!("sensitive words are [a-z0-9]");
            };
            words[p] |= 1 << i;
            if (word.len() as u8) < shortest[p] {
                shortest[p] = word.len() as u8;
            }
        }
        i += 1;
    }
    Endings { words, shortest }
};

/// [`is_sensitive_key`] of a key with a non-ASCII character near its end, out of line.
#[cold]
#[inline(never)]
fn sensitive_non_ascii(key: &str) -> bool {
    sensitive_normalized(&normalize(key))
}

/// Zero's fixed key rules, read from the one table of sensitive words in agent-core.
fn sensitive_normalized(normalized: &str) -> bool {
    is_sensitive_normalized(NameRules::ProtocolKeys, normalized)
}

struct Patterns {
    openai_key: Regex,
    api_key: Regex,
    bearer: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        // The patterns are literals checked by the unit tests below; a failure to compile
        // them is a programming error caught there.
        openai_key: Regex::new(r"\bsk-[A-Za-z0-9_-]{16,}").expect("valid sk- pattern"),
        api_key: Regex::new(r#"(?i)api[_-]?key\s*[=:]\s*["']?[A-Za-z0-9._-]{12,}"#)
            .expect("valid api_key pattern"),
        bearer: Regex::new(r"(?i)bearer\s+[A-Za-z0-9._-]{16,}").expect("valid bearer pattern"),
    })
}

/// Keeps a matched label (`api_key=`, `Bearer `) and redacts what follows it, or redacts the
/// whole match when it does not start with one of `labels` (compared case-insensitively).
fn keep_label(caps: &Captures<'_>, labels: &[&str]) -> String {
    let matched = &caps[0];
    for label in labels {
        if matched.len() >= label.len()
            && matched.is_char_boundary(label.len())
            && matched[..label.len()].eq_ignore_ascii_case(label)
        {
            return format!("{}{REDACTED}", &matched[..label.len()]);
        }
    }
    REDACTED.to_string()
}

/// True when `value` may hold a secret-shaped substring (a superset test: every string
/// [`redact_string`] would change passes it).
pub fn may_hold_secret(value: &str) -> bool {
    may_hold_secret_bytes(value.as_bytes())
}

/// [`may_hold_secret`] of UTF-8 bytes (or of a string's JSON escaping: an escape never
/// splits `sk-`, `api` or `bearer`, so the test stays a superset).
pub(crate) fn may_hold_secret_bytes(bytes: &[u8]) -> bool {
    // Equivalent to the regex `sk-|(?i:api|bearer)` (none of these letters has a
    // non-ASCII case variant), without the regex engine's per-call setup, which dominated
    // for the short strings of text deltas.
    let at = |i: usize, lit: &[u8]| {
        bytes
            .get(i..i + lit.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(lit))
    };
    // Short strings (text deltas, ids, names) byte by byte: memchr's setup would cost more.
    if bytes.len() < 64 {
        return (0..bytes.len()).any(|i| match bytes[i] {
            b's' => bytes.get(i + 1..i + 3) == Some(b"k-"),
            b'a' | b'A' => at(i + 1, b"pi"),
            b'b' | b'B' => at(i + 1, b"earer"),
            _ => false,
        });
    }
    // Longer ones find each literal by its rarest byte (`-` of `sk-`, `p` of `api`, `b` of
    // `bearer`) with memchr and check its neighbours: in prose `s`, `a` and `b` are a sixth of
    // the letters, these a few hundredths, so most of a string is skipped a vector at a time.
    let sk_or_api = memchr::memchr3_iter(b'-', b'p', b'P', bytes).any(|i| match bytes[i] {
        b'-' => i >= 2 && &bytes[i - 2..i] == b"sk",
        _ => i >= 1 && bytes[i - 1].eq_ignore_ascii_case(&b'a') && at(i + 1, b"i"),
    });
    sk_or_api || memchr::memchr2_iter(b'b', b'B', bytes).any(|i| at(i + 1, b"earer"))
}

/// Redacts secret-shaped substrings of `value`, borrowing it when nothing changes.
pub fn redact_str(value: &str) -> std::borrow::Cow<'_, str> {
    match may_hold_secret(value) {
        false => std::borrow::Cow::Borrowed(value),
        true => std::borrow::Cow::Owned(redact_string(value)),
    }
}

/// Redacts secret-shaped substrings of `value`.
pub fn redact_string(value: &str) -> String {
    if !may_hold_secret(value) {
        return value.to_string();
    }
    let p = patterns();
    let out = p.openai_key.replace_all(value, REDACTED);
    let out = p.api_key.replace_all(&out, |caps: &Captures<'_>| {
        keep_label(caps, &["apikey=", "api_key=", "api-key="])
    });
    let out = p
        .bearer
        .replace_all(&out, |caps: &Captures<'_>| keep_label(caps, &["bearer "]));
    out.into_owned()
}

/// Redacts a JSON value in place of a copy: sensitive keys at any depth and secret-shaped
/// strings. Object keys come out sorted, whatever the map implementation.
pub fn redact_value(mut value: Value) -> Value {
    redact_in_place(&mut value);
    value
}

/// Redacts `value` where it is: a sensitive key's value at any depth becomes `"[REDACTED]"`,
/// every other string passes through [`redact_str`], and the keys of every object are sorted
/// (Go's encoder writes a map's keys in byte order).
pub fn redact_in_place(value: &mut Value) {
    match value {
        Value::String(s) => {
            if may_hold_secret(s) {
                *s = redact_string(s);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                match is_sensitive_key(key) {
                    true => *item = Value::String(REDACTED.to_string()),
                    false => redact_in_place(item),
                }
            }
            if !map.keys().is_sorted() {
                map.sort_keys();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `T` as Zero writes it, the one place protocol redaction is applied: every string redacted,
/// every key at any depth checked, keys sorted — what serialising `T` to a JSON value,
/// [`redact_in_place`] and writing the value give. Every stream-json and `-o json` line and
/// every session record payload is written through it, so a field added to any of their
/// types is redacted (and sorted) without a word about it.
///
/// It is written for JSON: the line is written straight to JSON text by a redacting,
/// key-sorting serializer (no JSON value is built; see `redact/writer.rs`) and handed to the
/// serializer as a [`RawValue`], which serde_json's writer copies and `serde_json::to_value`
/// parses. Another data format would get the raw value's envelope instead.
#[derive(Debug, Clone, Copy)]
pub struct Redacted<'a, T: ?Sized>(pub &'a T);

impl<T: Serialize + ?Sized> Redacted<'_, T> {
    /// The redacted JSON value.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        let mut value = serde_json::to_value(self.0)?;
        redact_in_place(&mut value);
        Ok(value)
    }

    /// Appends the redacted line as JSON text to `out` (what serialising `self` with
    /// serde_json writes); on error `out` is left as it was.
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let start = out.len();
        let written = match writer::write(self.0, out) {
            Ok(()) => return Ok(()),
            Err(writer::WriteError::NotPlain) => {
                // What the writer leaves to `to_value` (raw values, 128-bit integers, keys
                // that are not strings or integers): the value path.
                out.truncate(start);
                self.to_value()
                    .and_then(|value| serde_json::to_writer(&mut *out, &value))
            }
            Err(writer::WriteError::Custom(msg)) => Err(serde_json::Error::custom(msg)),
        };
        if written.is_err() {
            out.truncate(start);
        }
        written
    }
}

thread_local! {
    /// The JSON text of the line being written, kept between lines (a nested `Redacted`
    /// finds it taken and starts an empty one).
    static LINE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Buffers larger than this are not kept for the next line.
const KEEP_CAPACITY: usize = 64 * 1024;

impl<T: Serialize + ?Sized> Serialize for Redacted<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut json = LINE.take();
        json.clear();
        let result = match self.write_json(&mut json) {
            Ok(()) => match std::str::from_utf8(&json) {
                Ok(text) => match serde_json::from_str::<&RawValue>(text) {
                    Ok(raw) => raw.serialize(serializer),
                    Err(err) => Err(S::Error::custom(err)),
                },
                Err(err) => Err(S::Error::custom(err)),
            },
            Err(err) => Err(S::Error::custom(err)),
        };
        if json.capacity() <= KEEP_CAPACITY {
            LINE.set(json);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prose_is_left_alone() {
        for clean in [
            "updated the task-list and the task-runner",
            "the bearer of bad news arrived",
            "set the bearer token in the header",
            "the api_key: foo setting is documented here",
            "the user's apiKey value spans two lines",
        ] {
            assert_eq!(redact_string(clean), clean);
        }
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redact_string("key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 end"),
            "key [REDACTED] end"
        );
        assert_eq!(
            redact_string("Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9abcdef"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            redact_string("API_KEY=abcdefghijklmnop1234567890"),
            "API_KEY=[REDACTED]"
        );
        assert_eq!(
            redact_string("api_key: 'abcdefghijklmnop'"),
            "[REDACTED]'",
            "a label not followed directly by '=' is redacted with the value"
        );
        assert_eq!(
            redact_string(r#"apiKey: "sk-svcacct-zyxwvutsrq012345""#),
            r#"apiKey: "[REDACTED]""#
        );
        assert_eq!(redact_string("bearer\tabcdefghijklmnopqrst"), "[REDACTED]");
    }

    #[test]
    fn sensitive_keys_at_any_depth() {
        let value = json!({
            "api_key": "plain-api-key-value",
            "nested": {"accessToken": {"deep": 1}, "promptTokens": 12, "tokens": 3},
            "list": [{"OPENAI_API_KEY": "x", "pwd": "y", "path": "a"}],
        });
        let out = redact_value(value);
        assert_eq!(out["api_key"], "[REDACTED]");
        assert_eq!(out["nested"]["accessToken"], "[REDACTED]");
        assert_eq!(out["nested"]["promptTokens"], 12);
        assert_eq!(out["nested"]["tokens"], 3);
        assert_eq!(out["list"][0]["OPENAI_API_KEY"], "[REDACTED]");
        assert_eq!(out["list"][0]["pwd"], "[REDACTED]");
        assert_eq!(out["list"][0]["path"], "a");
    }

    #[test]
    fn zeros_key_list_is_exactly_the_specs() {
        // Spec §4.3 (a): these names, and these endings.
        for key in [
            "accesstoken",
            "apikey",
            "authorization",
            "bearer",
            "clientsecret",
            "credential",
            "credentials",
            "idtoken",
            "password",
            "passwd",
            "privatekey",
            "pwd",
            "refreshtoken",
            "secret",
            "token",
            "OPENAI_API_KEY",
            "my-client-secret",
            "x_access_token",
            "googleRefreshToken",
            "firebase_id_token",
            "rsa.private.key",
            "Authorization",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        // The tool scrubber's broader list is not Zero's: these stay visible on the wire.
        for key in [
            "promptTokens",
            "tokens",
            "githubToken",
            "auth",
            "passphrase",
            "db_password",
            "awsAccessKeyId",
            "secretKey",
            "myCredentials",
            "authorizationHeader",
        ] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    /// The length filter of [`is_sensitive_key`] rests on this: no character's lower case
    /// has more ASCII letters and digits than the character has bytes.
    #[test]
    fn no_character_lower_cases_to_more_ascii_than_its_bytes() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let ascii = c.to_lowercase().filter(char::is_ascii_alphanumeric).count();
            assert!(
                ascii <= c.len_utf8(),
                "{c:?} lower-cases to {ascii} ASCII characters"
            );
        }
    }

    proptest::proptest! {
        /// Keys built from pieces of the sensitive words, separators, case changes and the
        /// non-ASCII characters whose lower case is ASCII: the fast path agrees with the
        /// general one on every one.
        #[test]
        fn the_fast_path_agrees_with_normalising_every_key(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(SENSITIVE_WORDS.iter().map(|w| w.word).collect::<Vec<_>>()),
                    proptest::sample::select(vec!["_", "-", ".", "X", "on", "en", "ey", "\u{212A}", "\u{130}", "\u{e9}", "Id", "AUTH"]),
                ],
                0..5,
            ),
            upper in proptest::bool::ANY,
        ) {
            let key = pieces.concat();
            let key = if upper { key.to_uppercase() } else { key };
            proptest::prop_assert_eq!(
                is_sensitive_key(&key),
                sensitive_normalized(&normalize(&key)),
                "{}", key
            );
        }
    }

    #[test]
    fn the_endings_filter_never_hides_a_sensitive_key() {
        let full = |key: &str| sensitive_normalized(&normalize(key));
        let words = SENSITIVE_WORDS.iter().map(|w| w.word.to_string());
        let keys = [
            "runId",
            "schemaVersion",
            "type",
            "args",
            "id",
            "name",
            "sideEffect",
            "path",
            "output",
            "status",
            "truncated",
            "promptTokens",
            "action",
            "reason",
            "provider",
            "cwd",
            "a",
            "",
            "x_pwd",
            "my-client-secret",
            "Bearer",
            "rsa.private.key",
            "\u{e9}_token",
            "token\u{e9}",
            "api\u{212A}ey",
            "pass\u{e9}word",
            "\u{212A}",
        ];
        for key in words
            .clone()
            .chain(words.map(|w| format!("X_{w}")))
            .chain(keys.iter().map(|k| k.to_string()))
        {
            assert_eq!(is_sensitive_key(&key), full(&key), "{key}");
        }
    }

    #[test]
    fn ascii_fast_path_and_unicode_keys_agree() {
        assert!(is_sensitive_key("OPENAI_API_KEY"));
        assert!(is_sensitive_key("x-Access-Token"));
        assert!(!is_sensitive_key("promptTokens"));
        assert!(!is_sensitive_key(&"a".repeat(100)));
        assert!(is_sensitive_key(&format!("{}apikey", "a".repeat(100))));
        // U+212A KELVIN SIGN lower-cases to an ASCII k.
        assert!(is_sensitive_key("api\u{212A}ey"));
    }

    #[test]
    fn prefilter_never_hides_a_secret() {
        for s in [
            "sk-abcdefghijklmnopqrstuv",
            "API-KEY: abcdefghijklmnop",
            "BEARER abcdefghijklmnopqrst",
        ] {
            assert!(may_hold_secret(s));
            assert_ne!(redact_str(s), s);
        }
        assert!(matches!(
            redact_str("hello"),
            std::borrow::Cow::Borrowed("hello")
        ));
        let any = Regex::new(r"sk-|(?i:api|bearer)").expect("valid");
        for s in [
            "",
            "s",
            "sk",
            "sk-",
            "SK-",
            "xsk-y",
            "ap",
            "api",
            "APi",
            "xAPIy",
            "bearer",
            "BeArEr",
            "bearе",
            "béarer",
            "a\u{212A}pi",
            "ἀpi",
            "token",
            "the api",
            "beare",
            "Sk-",
        ] {
            assert_eq!(may_hold_secret(s), any.is_match(s), "{s:?}");
            // The same past the short-string length, at the start, the middle and the end of
            // a longer string (the memchr path), and split across its first vector's end.
            let pad = "pad a pb-b ".repeat(8);
            for long in [
                format!("{s}{pad}"),
                format!("{pad}{s}{pad}"),
                format!("{pad}{s}"),
                format!("{}{s}{pad}", &pad[..30]),
            ] {
                assert_eq!(may_hold_secret(&long), any.is_match(&long), "{long:?}");
            }
        }
    }

    #[test]
    fn keys_come_out_sorted() {
        let out = redact_value(json!({"b": 1, "a": {"d": 1, "c": 2}}));
        assert_eq!(out.to_string(), r#"{"a":{"c":2,"d":1},"b":1}"#);
    }

    #[test]
    fn redacted_serialises_any_type_redacted_with_sorted_keys() {
        #[derive(Serialize)]
        struct Zeta {
            zeta: &'static str,
            alpha: Vec<String>,
            map: std::collections::BTreeMap<String, String>,
            value: Value,
            n: u8,
        }
        let zeta = Zeta {
            zeta: "Bearer abcdefghijklmnopqrstuv",
            alpha: vec!["sk-abcdefghijklmnopqrstuv".into(), "plain".into()],
            map: [
                ("clientSecret".into(), "x".into()),
                ("b".into(), "y".into()),
            ]
            .into(),
            value: json!({"b": ["sk-abcdefghijklmnopqrstuv"], "a": {"api_key": 1, "n": 2}}),
            n: 3,
        };
        let line = serde_json::to_string(&Redacted(&zeta)).expect("serialise");
        assert_eq!(
            line,
            r#"{"alpha":["[REDACTED]","plain"],"map":{"b":"y","clientSecret":"[REDACTED]"},"n":3,"value":{"a":{"api_key":"[REDACTED]","n":2},"b":["[REDACTED]"]},"zeta":"Bearer [REDACTED]"}"#
        );
        // Redacting twice changes nothing.
        let value = Redacted(&zeta).to_value().expect("value");
        assert_eq!(
            serde_json::to_string(&Redacted(&value)).expect("serialise"),
            line
        );
    }
}
