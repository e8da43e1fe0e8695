//! Secret scrubbing and the output cap applied at the tool boundary.
//!
//! [`scrub_secrets`] replaces credentials in text with [`REDACTED`]: OpenAI and Anthropic
//! keys, GitHub and GitLab tokens, Google API keys, Slack tokens, AWS access key ids, JWTs,
//! PEM private keys, `Authorization`/`Cookie` headers, bearer tokens, secrets in URLs, and
//! `key=value` (or `key: value`) assignments to sensitive names. Prose such as "bearer of bad
//! news" or "task-list" is left alone.
//!
//! [`truncate_output`] cuts text at a byte cap on a UTF-8 boundary and appends
//! [`TRUNCATION_MARKER`]; [`finish_output`] applies both to a [`ToolOutput`], keeping its
//! text within the cap marker included.
//!
//! Where capping happens: the tools that page (`read_file`, `list_dir`, `glob`, `grep`)
//! keep a result within [`crate::ToolsConfig::output_cap`] ([`DEFAULT_OUTPUT_CAP`], the
//! agent's default tool-output budget) so it is never spilled; `bash` and the custom tools
//! of a [`crate::ToolSet`] return their whole output up to
//! [`crate::ToolsConfig::full_output_cap`] ([`DEFAULT_FULL_OUTPUT_CAP`], a bound on memory),
//! and the agent loop cuts it for the model and writes all of it to a spill file
//! (`agent_core::spill`).

use std::borrow::Cow;
use std::sync::OnceLock;

pub use agent_core::secrets::{
    is_sensitive_name, sensitive_env_values, MIN_ENV_SECRET_LEN, REDACTED,
};
use agent_core::{ContentBlock, ToolOutput};
use regex::{Captures, Regex};

/// Appended to output cut at the cap.
pub const TRUNCATION_MARKER: &str = "\n[truncated]";

/// Default output cap of the tools that page, in bytes (the agent's default tool-output
/// budget, `agent_core::spill::DEFAULT_TOOL_OUTPUT_BUDGET`).
pub const DEFAULT_OUTPUT_CAP: usize = 10240;

/// Default cap of the output `bash` and custom tools hand to the agent loop, in bytes: the
/// loop cuts it for the model and spills all of it to a file, so this only bounds memory.
pub const DEFAULT_FULL_OUTPUT_CAP: usize = 8 * 1024 * 1024;

struct Patterns {
    /// Whole-match replacements, in order.
    whole: Vec<Regex>,
    /// `Authorization: <scheme> <credentials>` and cookie headers; the label is kept.
    header: Regex,
    /// `Bearer <token>`; the word is kept.
    bearer: Regex,
    /// `scheme://user:password@host`; the password is replaced.
    userinfo: Regex,
    /// `?token=…` style URL query parameters.
    query: Regex,
    /// `name = value` / `"name": "value"` assignments; replaced when the name is sensitive.
    assignment: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        // The patterns are constants (not input), checked by the unit tests.
        #[allow(clippy::expect_used)]
        let compile = |p: &str| Regex::new(p).expect("constant secret pattern compiles");
        let whole = [
            // PEM private keys, including a block cut off before its END line.
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
            // Anthropic, OpenAI (sk-, sk-proj-, sk-ant-…).
            r"\bsk-[A-Za-z0-9_-]{16,}",
            // GitHub fine-grained and classic tokens.
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",
            // GitLab personal access tokens.
            r"\bglpat-[A-Za-z0-9_-]{20,}",
            // Google API keys.
            r"\bAIza[0-9A-Za-z_-]{35}",
            // Slack tokens.
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
            // AWS access key ids.
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            // JSON web tokens.
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        ]
        .iter()
        .map(|p| compile(p))
        .collect();
        Patterns {
            whole,
            header: compile(
                r"(?i)\b((?:proxy-)?authorization|cookie|set-cookie|x-api-key|api-key)(\s*:\s*)(?:((?:bearer|basic|token|digest|bot)\s+))?([^\s\x22'][^\r\n\x22']{5,})",
            ),
            bearer: compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=-]{16,})"),
            userinfo: compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)"),
            query: compile(
                r"(?i)([?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret|password|passwd|sig|signature|auth)=)([^&\s#\x22'<>]+)",
            ),
            assignment: compile(
                r#"(?i)\b([A-Za-z_][A-Za-z0-9_.-]*)(["']?\s*[:=]\s*["']?)([^\s"'`<>&,;\[\]{}()$]{6,})"#,
            ),
        }
    })
}

/// Replaces secrets in `text` with [`REDACTED`]; the flag is true when anything changed.
///
/// ```
/// let (clean, redacted) = agent_tools::scrub_secrets("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx");
/// assert_eq!(clean, "OPENAI_API_KEY=[REDACTED]");
/// assert!(redacted);
/// let (prose, redacted) = agent_tools::scrub_secrets("the bearer of bad news");
/// assert_eq!(prose, "the bearer of bad news");
/// assert!(!redacted);
/// ```
pub fn scrub_secrets(text: &str) -> (String, bool) {
    match scrub_secrets_cow(text) {
        Cow::Borrowed(s) => (s.to_string(), false),
        Cow::Owned(s) => (s, true),
    }
}

/// Registers a secret that did not come from the environment (an `--api-key` flag, a key
/// read from a config file) so that its exact value is scrubbed from every tool output of
/// this process; see [`agent_core::secrets`]. Providers built by `agent_providers` register
/// their keys themselves.
pub fn register_secret(secret: &str) {
    agent_core::secrets::register_secret(secret);
}

/// Like [`scrub_secrets`], without allocating when nothing is found.
///
/// Besides the patterns, the exact values of sensitive environment variables
/// ([`sensitive_env_values`]) and of secrets given to [`register_secret`] are replaced
/// wherever they appear: `printenv OPENAI_API_KEY` prints a bare key that no pattern
/// recognises, and so does reading `/proc/<pid>/cmdline` of a process given `--api-key`.
pub fn scrub_secrets_cow(text: &str) -> Cow<'_, str> {
    let p = patterns();
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    if let Cow::Owned(s) = agent_core::secrets::scrub_known_values(text) {
        out = Cow::Owned(s);
    }
    fn apply(out: &mut Cow<'_, str>, re: &Regex, rep: &dyn Fn(&Captures<'_>) -> String) {
        if let Cow::Owned(s) = re.replace_all(out, |c: &Captures<'_>| rep(c)) {
            *out = Cow::Owned(s);
        }
    }
    for re in &p.whole {
        apply(&mut out, re, &|_| REDACTED.to_string());
    }
    apply(&mut out, &p.header, &|c| {
        if c[4].starts_with(REDACTED) {
            return c[0].to_string();
        }
        let scheme = c.get(3).map_or("", |m| m.as_str());
        format!("{}{}{scheme}{REDACTED}", &c[1], &c[2])
    });
    apply(&mut out, &p.bearer, &|c| {
        format!("{}{}{REDACTED}", &c[1], &c[2])
    });
    apply(&mut out, &p.userinfo, &|c| {
        format!("{}{REDACTED}{}", &c[1], &c[3])
    });
    apply(&mut out, &p.query, &|c| format!("{}{REDACTED}", &c[1]));
    apply(&mut out, &p.assignment, &|c| {
        let value = &c[3];
        let scheme = ["bearer", "basic", "token", "digest"]
            .iter()
            .any(|s| value.eq_ignore_ascii_case(s));
        if is_sensitive_name(&c[1]) && !value.starts_with(REDACTED) && !scheme {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    // `replace_all` returns Owned whenever a pattern matched, even if a closure gave the
    // match back unchanged; report a change only when the text differs.
    match out {
        Cow::Owned(s) if s == text => Cow::Borrowed(text),
        other => other,
    }
}

/// Cuts `text` to at most `cap` bytes on a UTF-8 boundary. Returns the kept prefix and
/// whether anything was cut.
pub fn truncate_utf8(text: &str, cap: usize) -> (&str, bool) {
    if text.len() <= cap {
        return (text, false);
    }
    let mut end = cap;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Cuts `text` to `cap` bytes on a UTF-8 boundary and appends [`TRUNCATION_MARKER`] when
/// anything was cut.
pub fn truncate_output(text: &str, cap: usize) -> (Cow<'_, str>, bool) {
    match truncate_utf8(text, cap) {
        (kept, false) => (Cow::Borrowed(kept), false),
        (kept, true) => (Cow::Owned(format!("{kept}{TRUNCATION_MARKER}")), true),
    }
}

/// Applies the tool-boundary rules to an output: secrets in its text are scrubbed (setting
/// `redacted`) and its text is capped at `cap` bytes in total, [`TRUNCATION_MARKER`]
/// included (setting `truncated`).
///
/// Idempotent: an output already cut to the cap (marked truncated, ending with the marker
/// and within the cap) is not cut again.
pub fn finish_output(mut output: ToolOutput, cap: usize) -> ToolOutput {
    let mut content = Vec::with_capacity(output.content.len());
    for block in std::mem::take(&mut output.content) {
        match block {
            ContentBlock::Text { text } => match scrub_secrets_cow(&text) {
                Cow::Owned(clean) => {
                    output.redacted = true;
                    content.push(ContentBlock::Text { text: clean });
                }
                Cow::Borrowed(_) => content.push(ContentBlock::Text { text }),
            },
            other => content.push(other),
        }
    }
    let total: usize = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    // Within the cap (an output already cut to it included): nothing to cut.
    if total <= cap {
        output.content = content;
        return output;
    }
    // Cut where the text (with the marker after it) reaches the cap; later text blocks go.
    let mut budget = cap.saturating_sub(TRUNCATION_MARKER.len());
    let mut cut_done = false;
    output.content = content
        .into_iter()
        .filter_map(|block| match block {
            ContentBlock::Text { .. } if cut_done => None,
            ContentBlock::Text { text } if text.len() <= budget => {
                budget -= text.len();
                Some(ContentBlock::Text { text })
            }
            ContentBlock::Text { text } => {
                cut_done = true;
                let (kept, _) = truncate_output(&text, budget);
                Some(ContentBlock::text(kept.into_owned()))
            }
            other => Some(other),
        })
        .collect();
    output.truncated = true;
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(patterns().whole.len(), 9);
    }

    #[test]
    fn truncates_on_char_boundary() {
        let text = "aé"; // 'é' is 2 bytes: a=0, é=1..3
        assert_eq!(truncate_utf8(text, 2), ("a", true));
        assert_eq!(truncate_utf8(text, 3), ("aé", false));
        let (out, cut) = truncate_output("€€€", 4); // 3 bytes each
        assert!(cut);
        assert_eq!(out, format!("€{TRUNCATION_MARKER}"));
    }

    #[test]
    fn finish_output_caps_total_and_is_idempotent() {
        let out = ToolOutput::text("x".repeat(50));
        let cap = 10 + TRUNCATION_MARKER.len();
        let once = finish_output(out, cap);
        assert!(once.truncated);
        assert_eq!(
            once.text_content(),
            format!("{}{TRUNCATION_MARKER}", "x".repeat(10))
        );
        assert_eq!(once.text_content().len(), cap);
        let twice = finish_output(once.clone(), cap);
        assert_eq!(twice, once);
        // Text that fits exactly is left alone.
        let exact = finish_output(ToolOutput::text("y".repeat(cap)), cap);
        assert!(!exact.truncated);
    }
}

#[cfg(test)]
mod registered_tests {
    use super::*;

    #[test]
    fn registered_secrets_are_scrubbed_by_exact_value() {
        let secret = "plainvalue-without-any-known-shape-42";
        let text = format!("argv: adapter --api-key {secret} --model m");
        assert_eq!(
            scrub_secrets(&text).0,
            text,
            "not scrubbed before registration"
        );
        register_secret(secret);
        register_secret("short");
        let (clean, redacted) = scrub_secrets(&text);
        assert!(redacted);
        assert_eq!(clean, "argv: adapter --api-key [REDACTED] --model m");
        assert_eq!(scrub_secrets("a short word").0, "a short word");
    }
}
