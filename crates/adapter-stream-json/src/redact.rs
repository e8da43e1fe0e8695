//! Zero's protocol-level redaction, applied to every output line.
//!
//! Two rules, both replacing with [`REDACTED`]:
//!
//! - **Sensitive keys** at any depth of an object: the whole value becomes the string
//!   `"[REDACTED]"`. A key is normalised by lower-casing it and keeping only `[a-z0-9]`; it is
//!   sensitive when the result is one of a fixed set of names (`apikey`, `token`, `password`,
//!   …) or ends with `apikey`, `clientsecret`, `accesstoken`, `refreshtoken`, `idtoken` or
//!   `privatekey`. So `api_key`, `accessToken` and `OPENAI_API_KEY` are redacted, while
//!   `promptTokens` is not.
//! - **Secret-shaped strings** in every string value: OpenAI-style `sk-…` keys, `api_key=…`
//!   assignments with a credential-length value and `Bearer …` tokens. Prose such as
//!   `"the bearer of bad news"` or `"task-list"` is left alone.
//!
//! Tool-boundary scrubbing (the much broader patterns applied to tool output) is the tools
//! crate's job; its result shows up as `tool_result.redacted`.

use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// The replacement token.
pub const REDACTED: &str = "[REDACTED]";

const SENSITIVE_NAMES: [&str; 15] = [
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
];

const SENSITIVE_SUFFIXES: [&str; 6] = [
    "apikey",
    "clientsecret",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "privatekey",
];

/// True when `key` names a secret (see the module docs).
pub fn is_sensitive_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .collect();
    SENSITIVE_NAMES.contains(&normalized.as_str())
        || SENSITIVE_SUFFIXES.iter().any(|s| normalized.ends_with(s))
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

/// Redacts secret-shaped substrings of `value`.
pub fn redact_string(value: &str) -> String {
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
pub fn redact_value(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_string(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(redact_value).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (key, item) in entries {
                let item = match is_sensitive_key(&key) {
                    true => Value::String(REDACTED.to_string()),
                    false => redact_value(item),
                };
                out.insert(key, item);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// Escapes `<`, `>`, `&`, U+2028 and U+2029 the way Go's JSON encoder does. In serialised
/// JSON these characters can only occur inside strings, so the rewrite is safe.
pub fn go_escape(json: &str) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
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
    fn keys_come_out_sorted_and_go_escapes_apply() {
        let out = redact_value(json!({"b": 1, "a": {"d": 1, "c": 2}}));
        assert_eq!(out.to_string(), r#"{"a":{"c":2,"d":1},"b":1}"#);
        assert_eq!(
            go_escape(r#"{"t":"<a&b>"}"#),
            r#"{"t":"\u003ca\u0026b\u003e"}"#
        );
    }
}
