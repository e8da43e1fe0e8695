//! The scenarios of unattended runs: permission rules from a `--settings` file, the spend
//! cap (`--max-budget-usd`) and the fallback model (`--fallback-model`). Each front end shows
//! the deciding rule, the cap's end and the fallback in its own words (its harness's
//! expectations); what every one of them shares is here.

use serde_json::json;

use super::{failed, ok, strings, Fact, FileIs, FrontEnd, Paths, Place, Scenario};
use crate::{sse, Reply};

/// The settings file of `rules`: allow one command prefix; deny another, and reads of
/// `secret/`.
pub const SETTINGS: &str = r#"{"model": "ignored", "permissions": {
    "allow": ["Bash(echo allowed:*)"],
    "deny": ["Bash(touch denied:*)", "Read(./secret/**)"],
    "defaultMode": "default"}}"#;

/// The model of `budget`: priced in the catalogue ($2.50 per million input tokens).
pub const PRICED_MODEL: &str = "gpt-4o";

/// The fallback model of `fallback`.
pub const FALLBACK_MODEL: &str = "gpt-fallback";

/// Scenario `name` of this module, if it is one (the table lists their names).
pub(super) fn build(name: &str, p: &Paths) -> Option<Scenario> {
    Some(match name {
        "rules_from_settings_allow_and_deny_each_call" => rules(p),
        "rules_settings_with_a_bad_rule_refuse_to_start" => bad_rule(p),
        "budget_cap_ends_the_run_after_the_first_call" => budget(),
        "fallback_model_answers_when_the_model_is_overloaded" => fallback(),
        _ => return None,
    })
}

fn bash(command: &str) -> serde_json::Value {
    json!({ "command": command })
}

fn settings_flag(p: &Paths) -> Vec<String> {
    vec![
        "--settings".into(),
        p.root.join("settings.json").display().to_string(),
    ]
}

/// `Bash(echo allowed:*)` lets `echo allowed …` run without a prompt, and not a compound
/// command that only starts with it (the front ends that would prompt refuse it: `exec` has
/// nobody to ask; the others allow what they would ask); the deny rules refuse their
/// command and the read under `secret/` in every mode, saying which rule did.
fn rules(p: &Paths) -> Scenario {
    let turn = sse::chat::Stream::new()
        .tool_call("a1", "bash", &bash("echo allowed -n").to_string())
        .tool_call(
            "a2",
            "bash",
            &bash("echo allowed; touch compound").to_string(),
        )
        .tool_call("d1", "bash", &bash("touch denied").to_string())
        .tool_call(
            "r1",
            "read_file",
            &json!({"path": "secret/key.txt"}).to_string(),
        )
        .finish("tool_calls")
        .usage(10, 5, 0)
        .done();
    Scenario {
        files: vec![
            (Place::Root("settings.json".into()), SETTINGS.into()),
            (Place::Ws("secret/key.txt".into()), "the key\n".into()),
        ],
        flags: settings_flag(p),
        facts: vec![
            ok(0, "a1", &["allowed"]),
            failed(0, "d1", &["permission rule deny Bash(touch denied:*)"]),
            failed(0, "r1", &["permission rule deny Read(./secret/**)"]),
            Fact::File(Place::Ws("denied".into()), FileIs::Absent),
            Fact::For(
                &[FrontEnd::Exec],
                vec![
                    failed(0, "a2", &["Permission required"]),
                    Fact::File(Place::Ws("compound".into()), FileIs::Absent),
                ],
            ),
            Fact::Answers(0, vec!["done"]),
        ],
        ..super::table::base_of(vec![Reply::sse(turn), Reply::chat_text("done")])
    }
}

/// A settings file holding a rule the syntax does not allow: the binary refuses to start,
/// naming the file, the list and the rule.
fn bad_rule(p: &Paths) -> Scenario {
    Scenario {
        files: vec![(
            Place::Root("settings.json".into()),
            r#"{"permissions": {"deny": ["Bash(rm:*)", "Bash(:*)"]}}"#.into(),
        )],
        flags: settings_flag(p),
        prompts: Vec::new(),
        facts: vec![Fact::Refused(strings(&[
            "settings.json",
            "permissions.deny[1]",
            "Bash(:*)",
        ]))],
        ..super::table::base_of(vec![Reply::chat_text("never")])
    }
}

/// A priced model whose first call (5000 input tokens of `gpt-4o`: $0.0125) passes a
/// $0.01 cap: the run ends before its second call, with the cap's status.
fn budget() -> Scenario {
    let listing = sse::chat::Stream::new()
        .tool_call(
            "g1",
            "grep",
            &json!({"pattern": "no-such-text", "path": "."}).to_string(),
        )
        .finish("tool_calls")
        .usage(5000, 10, 0)
        .done();
    Scenario {
        model_id: Some(PRICED_MODEL),
        flags: strings(&["--max-budget-usd", "0.01"]),
        facts: vec![ok(0, "g1", &[]), Fact::Requests(1)],
        ..super::table::base_of(vec![Reply::sse(listing), Reply::chat_text("never asked")])
    }
}

/// The model answers 529 (overloaded) to the call and its two retries; the call is made
/// once more with the fallback model, which answers.
fn fallback() -> Scenario {
    let overloaded = || Reply::error(529, "overloaded_error", "Overloaded");
    Scenario {
        flags: strings(&["--fallback-model", FALLBACK_MODEL]),
        env: vec![
            ("AGENT_SDK_MAX_RETRIES", "2"),
            ("AGENT_SDK_RETRY_BACKOFF_MS", "1"),
        ],
        facts: vec![
            Fact::Requests(4),
            Fact::Request {
                index: 2,
                contains: strings(&["\"model\":\"gpt-test\""]),
                lacks: Vec::new(),
            },
            Fact::Request {
                index: 3,
                contains: strings(&[&format!("\"model\":\"{FALLBACK_MODEL}\"")]),
                lacks: Vec::new(),
            },
            Fact::Answers(0, vec!["answered by the fallback"]),
        ],
        ..super::table::base_of(vec![
            overloaded(),
            overloaded(),
            overloaded(),
            Reply::chat_text("answered by the fallback"),
        ])
    }
}
