//! The secret scrubber and the output cap.

use agent_core::{ContentBlock, ToolOutput};
use agent_tools::{
    finish_output, scrub_secrets, truncate_output, truncate_utf8, REDACTED, TRUNCATION_MARKER,
};

/// (input, expected output) pairs: one real-looking credential of each kind.
const SECRETS: &[(&str, &str)] = &[
    (
        "key: sk-proj-4fJq9ZkLmN0pQrStUvWxYz12AbCdEfGh",
        "key: [REDACTED]",
    ),
    (
        "ANTHROPIC sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH done",
        "ANTHROPIC [REDACTED] done",
    ),
    (
        "token ghp_1A2b3C4d5E6f7G8h9I0jK1l2M3n4O5p6Q7r8 end",
        "token [REDACTED] end",
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
        "[REDACTED]",
    ),
    ("remote: glpat-Ab3dEf6hIj9kLm2nOp5q", "remote: [REDACTED]"),
    (
        "maps AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q for geo",
        "maps [REDACTED] for geo",
    ),
    (
        "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack [REDACTED]",
    ),
    ("aws id AKIAIOSFODNN7EXAMPLE here", "aws id [REDACTED] here"),
    ("session ASIAY34FZKBOKMUTVV7A", "session [REDACTED]"),
    (
        "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
        "jwt [REDACTED] ok",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\nq+/ZYX==\n-----END RSA PRIVATE KEY-----\nafter",
        "[REDACTED]\nafter",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "[REDACTED]",
    ),
    (
        "> Authorization: Bearer abcdef0123456789ABCDEF.xyz",
        "> Authorization: Bearer [REDACTED]",
    ),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    (
        "curl -H 'Authorization: token 0123456789abcdef0123' url",
        "curl -H 'Authorization: token [REDACTED]' url",
    ),
    ("Cookie: sessionid=abc123def456ghi", "Cookie: [REDACTED]"),
    (
        "use bearer AbCdEf0123456789xyzXYZ in calls",
        "use bearer [REDACTED] in calls",
    ),
    ("OPENAI_API_KEY=abcdef1234567890", "OPENAI_API_KEY=[REDACTED]"),
    ("export DB_PASSWORD='hunter2hunter2'", "export DB_PASSWORD='[REDACTED]'"),
    ("\"client_secret\": \"s3cr3t-value-123\"", "\"client_secret\": \"[REDACTED]\""),
    ("GITHUB_TOKEN: 9f8e7d6c5b4a", "GITHUB_TOKEN: [REDACTED]"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"),
    (
        "GET https://api.example.com/v1?user=1&access_token=abcdef123456&x=2",
        "GET https://api.example.com/v1?user=1&access_token=[REDACTED]&x=2",
    ),
    (
        "postgres://admin:sup3rs3cret@db.internal:5432/app",
        "postgres://admin:[REDACTED]@db.internal:5432/app",
    ),
];

/// Text that must come through untouched.
const PROSE: &[&str] = &[
    "task-list",
    "bearer of bad news",
    "set the bearer token in the header",
    "the api_key: foo setting is documented here",
    "the user's apiKey value spans two lines",
    "promptTokens: 123456, totalTokens: 654321",
    "max_tokens = 4096000",
    "Use the Authorization header to authenticate.",
    "password: none",
    "fn skip_whitespace(s: &str) -> usize { s.len() }",
    "ask-your-administrator-for-access",
    "token = $GITHUB_TOKEN",
    "https://example.com/search?q=rust&page=2",
    "The AKIA prefix marks AWS access keys.",
    "key=value pairs are parsed by parse_kv()",
];

#[test]
fn redaction_corpus() {
    let mut failures = Vec::new();
    for (input, expected) in SECRETS {
        let (out, redacted) = scrub_secrets(input);
        if out != *expected || !redacted {
            failures.push(format!(
                "{input:?}\n  expected {expected:?}\n  got      {out:?} ({redacted})"
            ));
        }
    }
    for input in PROSE {
        let (out, redacted) = scrub_secrets(input);
        if out != *input || redacted {
            failures.push(format!("prose changed: {input:?} -> {out:?}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn scrubbing_is_stable() {
    for (input, _) in SECRETS {
        let (once, _) = scrub_secrets(input);
        let (twice, again) = scrub_secrets(&once);
        assert_eq!(once, twice, "re-scrubbing changed {once:?}");
        assert!(!again, "re-scrubbing reported a change for {once:?}");
    }
}

#[test]
fn truncation_lands_on_a_multibyte_boundary() {
    // "日" is 3 bytes; a cap of 10 falls inside the fourth character.
    let text = "日本語テキスト";
    let (kept, cut) = truncate_utf8(text, 10);
    assert!(cut);
    assert_eq!(kept, "日本語");
    let (out, cut) = truncate_output(text, 10);
    assert!(cut);
    assert_eq!(out, format!("日本語{TRUNCATION_MARKER}"));
    // Emoji are 4 bytes.
    let (kept, _) = truncate_utf8("ab😀cd", 5);
    assert_eq!(kept, "ab");
    let (kept, cut) = truncate_utf8("short", 10);
    assert_eq!((kept, cut), ("short", false));
}

#[test]
fn finish_output_scrubs_and_caps() {
    let secret = "sk-abcdefghijklmnopqrstuvwxyz012345";
    let long = format!("{secret}\n{}", "é".repeat(10_000));
    let out = finish_output(ToolOutput::text(long), 10240);
    assert!(out.redacted);
    assert!(out.truncated);
    let text = out.text_content();
    assert!(text.starts_with(REDACTED));
    assert!(!text.contains(secret));
    assert!(text.ends_with(TRUNCATION_MARKER));
    assert!(text.len() <= 10240, "the marker counts against the cap");

    let clean = finish_output(ToolOutput::text("nothing to see"), 10240);
    assert!(!clean.redacted && !clean.truncated);
    assert_eq!(clean.text_content(), "nothing to see");

    // The cap is over all text blocks together, the marker included; later blocks are
    // dropped once it is hit.
    let multi = ToolOutput {
        content: vec![
            ContentBlock::text("a".repeat(8)),
            ContentBlock::text("b".repeat(8)),
            ContentBlock::text("c".repeat(9)),
        ],
        ..ToolOutput::default()
    };
    let capped = finish_output(multi, 12 + TRUNCATION_MARKER.len());
    assert!(capped.truncated);
    assert_eq!(
        capped.text_content(),
        format!("aaaaaaaabbbb{TRUNCATION_MARKER}")
    );
}
