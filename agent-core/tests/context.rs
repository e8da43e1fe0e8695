//! Context budget: usage events, automatic and overflow compaction, pinned notes, and the
//! tool-output budget with its spill files, on the scripted provider (window 200 000).

mod common;

use std::sync::Arc;

use agent_core::{
    async_trait,
    compaction::COMPACTION_PREFIX,
    context::AutoCompact,
    event::{CompactionReason, ErrorCode, StopReason, ToolStatus},
    message::Role,
    notes::note_tool,
    provider::ProviderErrorKind,
    session::{MemorySessionStore, SessionRecord, SessionStore},
    Agent, AgentEvent, ContentBlock, RunStatus, SideEffect, Tool, ToolContext, ToolError,
    ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};

const WINDOW: u64 = 200_000;

fn finished(events: &[AgentEvent]) -> RunStatus {
    match events.last() {
        Some(AgentEvent::RunFinished { status, .. }) => *status,
        other => panic!("last event is not run_finished: {other:?}"),
    }
}

fn context_usages(events: &[AgentEvent]) -> Vec<(u64, u64, f64)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ContextUsage {
                used,
                window,
                percent,
            } => Some((*used, *window, *percent)),
            _ => None,
        })
        .collect()
}

fn compactions(events: &[AgentEvent]) -> Vec<CompactionReason> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CompactionStarted { reason } => Some(*reason),
            _ => None,
        })
        .collect()
}

/// Everything from `from` (inclusive) to the next `to` (inclusive), as kinds.
fn span(events: &[AgentEvent], from: &str, to: &str) -> Vec<String> {
    let kinds = kinds(events);
    let start = kinds.iter().position(|k| k == from).expect("start kind");
    let end = start
        + kinds[start..]
            .iter()
            .position(|k| k == to)
            .expect("end kind");
    kinds[start..=end].to_vec()
}

#[tokio::test]
async fn a_context_usage_event_follows_every_completed_call() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"pong"}"#)
            .usage(40_000, 1_000),
        Turn::new().text("done").usage(60_000, 500),
    ]);
    let agent = Agent::builder(provider).tool(Echo).build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert_eq!(
        context_usages(&events),
        [(41_000, WINDOW, 20.5), (60_500, WINDOW, 30.3)]
    );
    // Each comes after the call's assistant message, before its tool calls and turn end.
    assert_eq!(
        span(&events, "assistant_message", "turn_ended:ToolUse"),
        [
            "assistant_message",
            "context_usage",
            "tool_call:c1",
            "turn_ended:ToolUse"
        ]
    );
    // The host sees the same figure; the window override applies at once.
    let now = agent.context_usage();
    assert_eq!((now.used, now.window), (60_500, WINDOW));
    agent.update().context_window(Some(121_000)).apply();
    assert_eq!(agent.context_usage().percent, 50.0);
    assert!(agent.state().usage.input == 100_000);
}

#[tokio::test]
async fn without_reported_usage_the_context_is_estimated() {
    let provider = ScriptedProvider::new([Turn::new().text("x".repeat(4_000))]);
    let agent = Agent::builder(provider)
        .system_prompt("s".repeat(400))
        .context_window(10_000)
        .build();
    let events = collect(agent.prompt("y".repeat(800))).await;
    let usages = context_usages(&events);
    assert_eq!(usages.len(), 1);
    let (used, window, percent) = usages[0];
    // 100 (system) + 4 + 200 (prompt) + 4 + 1000 (answer): bytes / 4 plus 4 per message.
    assert_eq!((used, window), (1_308, 10_000));
    assert_eq!(percent, 13.1);
}

/// Turn 1 asks for a tool and reports 85 % of the window: before turn 2 the agent compacts
/// (the summary call is turn 2 of the script), then the run finishes.
#[tokio::test]
async fn auto_compaction_fires_at_the_threshold_before_the_next_call() {
    let provider = ScriptedProvider::new([
        Turn::new().text("first answer"),
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"pong"}"#)
            .usage(169_000, 1_000),
        Turn::new().text("SUMMARY of the work").usage(5_000, 50),
        Turn::new().text("finished").usage(3_000, 10),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .compact_keep_tail(2)
        .build();
    collect(agent.prompt("earlier question")).await;
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert_eq!(compactions(&events), [CompactionReason::Auto]);
    assert_eq!(
        span(&events, "tool_result:c1", "turn_started"),
        [
            "tool_result:c1",
            "compaction_started",
            "usage",
            "compaction_finished",
            "context_usage",
            "turn_started",
        ]
    );
    // The summary is not streamed as assistant output.
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::TextDelta { delta } if delta.contains("SUMMARY"))));
    let (before, after) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::CompactionFinished {
                summary,
                before,
                after,
            } => {
                assert_eq!(summary, "SUMMARY of the work");
                Some((*before, *after))
            }
            _ => None,
        })
        .expect("compaction_finished");
    assert!(before >= 170_000 && after < 1_000, "{before} -> {after}");
    // The next call saw the summary, then the kept call and its result.
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let retry = &requests[3].messages;
    assert!(retry[0].synthetic && retry[0].text().starts_with(COMPACTION_PREFIX));
    assert!(retry[0].text().contains("SUMMARY of the work"));
    assert_eq!(retry[1].role, Role::Assistant);
    assert_eq!(retry[2].role, Role::Tool);
    // The summary request rendered the compacted part as text.
    let summary_request = requests[2].messages[0].text();
    assert!(summary_request.contains("[user]\nearlier question"));
    assert!(summary_request.contains("[user]\ngo"));
    assert_eq!(
        agent.messages().last().map(|m| m.text()),
        Some("finished".into())
    );
}

#[tokio::test]
async fn auto_compact_off_never_compacts() {
    let provider = ScriptedProvider::new([
        Turn::new().text("first answer"),
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"pong"}"#)
            .usage(199_000, 1_000),
        Turn::new().text("finished").usage(199_500, 10),
        Turn::new().text("third").usage(199_900, 10),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .compact_keep_tail(2)
        .auto_compact("off".parse().expect("off"))
        .build();
    assert_eq!(agent.auto_compact(), AutoCompact::Off);
    collect(agent.prompt("earlier question")).await;
    let events = collect(agent.prompt("go")).await;
    let more = collect(agent.prompt("and again")).await;
    for events in [&events, &more] {
        assert_eq!(finished(events), RunStatus::Success);
        assert!(compactions(events).is_empty());
    }
    assert_eq!(provider.requests().len(), 4);
    assert_eq!(context_usages(&more), [(199_910, WINDOW, 100.0)]);
    assert_eq!(agent.messages().len(), 8);
}

#[tokio::test]
async fn a_lower_threshold_compacts_earlier() {
    let provider = ScriptedProvider::new([
        Turn::new().text("one").usage(100_000, 1_000),
        Turn::new().text("summary"),
        Turn::new().text("two"),
    ]);
    let agent = Agent::builder(provider)
        .compact_keep_tail(1)
        .auto_compact(AutoCompact::At(50))
        .build();
    let first = collect(agent.prompt("a")).await;
    assert!(compactions(&first).is_empty(), "checked before calls only");
    // The next prompt's first call is preceded by the compaction.
    let second = collect(agent.prompt("b")).await;
    assert_eq!(compactions(&second), [CompactionReason::Auto]);
    assert_eq!(finished(&second), RunStatus::Success);
    let messages = agent.messages();
    assert!(messages[0].text().ends_with("summary"));
    assert_eq!(messages[1].text(), "b");
}

#[tokio::test]
async fn a_context_overflow_is_recovered_by_one_compaction_and_one_retry() {
    let provider = ScriptedProvider::new([
        Turn::new().text("one"),
        Turn::new().text("two"),
        Turn::new().error(
            ProviderErrorKind::ContextLength,
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
        Turn::new().text("the summary"),
        Turn::new().text("three").usage(2_000, 5),
    ]);
    let agent = Agent::builder(provider.clone())
        .auto_compact(AutoCompact::Off)
        .build();
    collect(agent.prompt("a")).await;
    collect(agent.prompt("b")).await;
    let events = collect(agent.prompt("c")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert_eq!(compactions(&events), [CompactionReason::Overflow]);
    assert!(events.contains(&AgentEvent::TurnEnded {
        step: 1,
        stop: StopReason::Continue,
        error: Some("prompt is too long: 210000 tokens > 200000 maximum".into()),
    }));
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::Error { .. })));
    assert_eq!(
        span(&events, "turn_ended:Continue", "turn_started"),
        [
            "turn_ended:Continue",
            "compaction_started",
            "compaction_finished",
            "context_usage",
            "turn_started",
        ]
    );
    // The retried call got the compacted transcript, the prompt among the kept tail.
    let requests = provider.requests();
    let retried = &requests[4].messages;
    assert!(retried[0].text().starts_with(COMPACTION_PREFIX));
    assert_eq!(retried.last().map(|m| m.text()), Some("c".into()));
    assert_eq!(
        agent.messages().last().map(|m| m.text()),
        Some("three".into())
    );
}

#[tokio::test]
async fn a_second_overflow_of_the_same_call_is_a_clean_error() {
    let overflow = || {
        Turn::new().error(
            ProviderErrorKind::ContextLength,
            "This model's maximum context length is 8192 tokens",
        )
    };
    let provider = ScriptedProvider::new([
        Turn::new().text("one"),
        Turn::new().text("two"),
        overflow(),
        Turn::new().text("the summary"),
        overflow(),
        Turn::new().text("never"),
    ]);
    let agent = Agent::builder(provider.clone()).build();
    collect(agent.prompt("a")).await;
    collect(agent.prompt("b")).await;
    let events = collect(agent.prompt("c")).await;
    assert_eq!(finished(&events), RunStatus::Error);
    assert_eq!(compactions(&events), [CompactionReason::Overflow]);
    let tail: Vec<String> = kinds(&events).into_iter().rev().take(3).collect();
    assert_eq!(tail, ["run_finished:Error", "error", "turn_ended:Error"]);
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Error { code: ErrorCode::Provider, message, recoverable: false }
        if message.contains("maximum context length"))));
    assert_eq!(provider.remaining(), 1, "no third attempt");
}

#[tokio::test]
async fn an_overflow_with_nothing_to_compact_ends_at_once() {
    let provider = ScriptedProvider::new([
        Turn::new().error(ProviderErrorKind::ContextLength, "prompt is too long")
    ]);
    let agent = Agent::builder(provider).build();
    let events = collect(agent.prompt("a huge first prompt")).await;
    assert_eq!(finished(&events), RunStatus::Error);
    assert!(compactions(&events).is_empty());
}

#[tokio::test]
async fn a_failed_automatic_compaction_is_reported_and_the_run_goes_on() {
    let provider = ScriptedProvider::new([
        Turn::new().text("one"),
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"pong"}"#)
            .usage(190_000, 0),
        Turn::new().error(ProviderErrorKind::Server, "summary call failed"),
        Turn::new().text("finished anyway"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Echo)
        .compact_keep_tail(2)
        .build();
    collect(agent.prompt("a")).await;
    let events = collect(agent.prompt("b")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert!(events.contains(&AgentEvent::Error {
        code: ErrorCode::Compaction,
        message: "automatic compaction failed: summary call failed".into(),
        recoverable: true,
    }));
    assert_eq!(
        agent.messages().last().map(|m| m.text()),
        Some("finished anyway".into())
    );
}

/// A host note and a model note (the `note` tool) survive two compactions word for word,
/// and a resumed session restores them.
#[tokio::test]
async fn pinned_notes_are_verbatim_after_two_compactions_and_persist() {
    let model_note = "Deploy target: eu-west-1\n  (never us-east-1)";
    let host_note = "The user prefers **tabs**; keep `Cargo.lock` untouched.";
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("n1", "note", json!({ "text": model_note }).to_string()),
        Turn::new().text("noted"),
        Turn::new().text("first summary, which paraphrases everything"),
        Turn::new().text("more work"),
        Turn::new().text("second summary"),
    ]);
    let store = Arc::new(MemorySessionStore::new());
    let agent = Agent::builder(provider.clone())
        .note_tool()
        .compact_keep_tail(1)
        .session(store.clone(), "s1")
        .build();
    assert!(agent.tool_specs().iter().any(|s| s.name == "note"));
    agent.pin_note(host_note).await.expect("pinned");
    let events = collect(agent.prompt("remember the region")).await;
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::ToolResult { name, status: ToolStatus::Ok, .. } if name == "note")));
    assert_eq!(agent.notes(), [host_note, model_note]);
    for round in 0..2 {
        if round == 1 {
            collect(agent.prompt("continue")).await;
        }
        let events = collect(agent.compact()).await;
        assert_eq!(finished(&events), RunStatus::Success, "{events:?}");
        let first = agent.messages()[0].text();
        assert!(
            first.contains(host_note) && first.contains(model_note),
            "{first}"
        );
    }
    let first = agent.messages()[0].text();
    assert!(first.starts_with(&format!("{COMPACTION_PREFIX}second summary")));
    assert_eq!(first.matches(model_note).count(), 1);
    // The second summary request saw the earlier summary without its notes section.
    let request = provider.requests().pop().expect("request").messages[0].text();
    assert!(request.contains("first summary"));
    assert!(!request.contains(host_note));
    assert!(request.contains("pinned notes are carried over verbatim"));

    let records = store.load("s1").await.expect("session");
    assert_eq!(
        SessionRecord::replay_notes(&records),
        [host_note, model_note]
    );
    let resumed = Agent::builder(ScriptedProvider::new([]))
        .resume(store.clone(), "s1")
        .await
        .expect("resumed")
        .build();
    assert_eq!(resumed.notes(), [host_note, model_note]);
    assert_eq!(resumed.messages(), agent.messages());
    assert_eq!(
        resumed.unpin_note(0).await.expect("unpinned"),
        Some(host_note.to_string())
    );
    assert_eq!(resumed.unpin_note(5).await.expect("no such note"), None);
    let records = store.load("s1").await.expect("session");
    assert_eq!(SessionRecord::replay_notes(&records), [model_note]);
    resumed.clear().await.expect("cleared");
    assert!(resumed.notes().is_empty());
    let records = store.load("s1").await.expect("session");
    assert!(SessionRecord::replay_notes(&records).is_empty());
}

/// A tool that prints `lines` numbered lines.
struct Loud {
    lines: usize,
}

#[async_trait]
impl Tool for Loud {
    fn name(&self) -> &str {
        "loud"
    }
    fn description(&self) -> &str {
        "Prints a lot."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(loud_text(self.lines)))
    }
}

fn loud_text(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("line {i:07} of the output\n"))
        .collect()
}

fn result_text(events: &[AgentEvent], id: &str) -> (String, bool) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                id: rid,
                content,
                truncated,
                ..
            } if rid == id => Some((
                content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect(),
                *truncated,
            )),
            _ => None,
        })
        .expect("tool result")
}

/// The path the notice gives, e.g. `… is saved in /tmp/x/c1-0.txt: read it …`.
fn spill_path(text: &str) -> std::path::PathBuf {
    let start = text.find("saved in ").expect("path in notice") + "saved in ".len();
    let end = start + text[start..].find(": read it").expect("path end");
    std::path::PathBuf::from(&text[start..end])
}

#[tokio::test]
async fn a_5_mb_tool_output_is_spilled_with_head_tail_and_path() {
    let lines = 200_000; // 27 bytes each: 5.4 MB
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "loud", "{}"),
        Turn::new().text("read it"),
    ]);
    let store = Arc::new(MemorySessionStore::new());
    let agent = Agent::builder(provider.clone())
        .tool(Loud { lines })
        .session(store.clone(), "spill-test")
        .build();
    let events = collect(agent.prompt("print")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    let (text, truncated) = result_text(&events, "c1");
    assert!(truncated);
    assert!(text.len() <= 10 * 1024, "{}", text.len());
    assert!(text.starts_with("line 0000000 of the output\nline 0000001"));
    assert!(text.ends_with("line 0199999 of the output\n"));
    assert!(text.contains("lines in all"));
    // The path reads back the full text; it lies in the session's spill directory.
    let path = spill_path(&text);
    assert!(path.starts_with(agent.spill_dir()));
    assert!(agent.spill_dir().ends_with("spill-test"));
    assert!(agent_core::spill::is_spill_file(&path));
    let full = std::fs::read_to_string(&path).expect("spill file");
    assert_eq!(full.len(), 27 * lines);
    assert!(full == loud_text(lines));
    // The model, the transcript and the session hold only the short version.
    let sent = &provider.requests()[1].messages[2];
    assert!(
        matches!(&sent.content[0], ContentBlock::ToolResult { content, .. }
        if matches!(&content[0], ContentBlock::Text { text: t } if *t == text))
    );
    let records = store.load("spill-test").await.expect("session");
    let stored = serde_json::to_string(&records).expect("records serialise");
    assert!(stored.len() < 64 * 1024, "{}", stored.len());
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn budgets_are_per_tool_and_small_results_are_untouched() {
    let dir = tempfile_dir();
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "loud", "{}")
            .tool_call("c2", "echo", r#"{"text":"short"}"#),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Loud { lines: 100 }) // 2 700 bytes
        .tool(Echo)
        .tool_output_budget(usize::MAX)
        .tool_output_budget_for("loud", 1_000)
        .spill_dir(&dir)
        .build();
    let events = collect(agent.prompt("go")).await;
    let (loud, truncated) = result_text(&events, "c1");
    assert!(truncated && loud.len() <= 1_000, "{}", loud.len());
    let path = spill_path(&loud);
    assert_eq!(path, dir.join("c1-0.txt"));
    assert_eq!(
        std::fs::read_to_string(&path).expect("spilled"),
        loud_text(100)
    );
    assert_eq!(result_text(&events, "c2"), ("short".to_string(), false));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn when_the_spill_fails_the_model_is_told_and_still_gets_head_and_tail() {
    let dir = tempfile_dir();
    std::fs::create_dir_all(&dir).expect("dir");
    let blocker = dir.join("not-a-dir");
    std::fs::write(&blocker, "a file where the spill dir should be").expect("file");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "loud", "{}"),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Loud { lines: 1_000 })
        .spill_dir(&blocker)
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    let (text, truncated) = result_text(&events, "c1");
    assert!(truncated);
    assert!(
        text.contains("the full output could not be saved"),
        "{text}"
    );
    assert!(text.starts_with("line 0000000") && text.ends_with("line 0000999 of the output\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory under the temporary directory for one test.
fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "agent-core-context-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

#[tokio::test]
async fn the_note_tool_rejects_empty_text() {
    let tool = note_tool();
    let err = tool
        .call(json!({"text": "  "}), ToolContext::new("."))
        .await
        .expect_err("empty");
    assert!(err.to_string().contains("text is empty"));
    let ok = tool
        .call(json!({"text": "keep me"}), ToolContext::new("."))
        .await
        .expect("pinned");
    assert!(ok.text_content().starts_with("Pinned."));
}

/// A host tool of its own called `note`.
struct HostNote;

#[async_trait]
impl Tool for HostNote {
    fn name(&self) -> &str {
        "note"
    }
    fn description(&self) -> &str {
        "The host's own note tool."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("host note taken"))
    }
}

#[tokio::test]
async fn a_host_tool_called_note_wins_and_pins_nothing() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("n1", "note", r#"{"text":"not pinned"}"#),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider).tool(HostNote).note_tool().build();
    assert_eq!(agent.tools().len(), 1);
    let events = collect(agent.prompt("go")).await;
    assert_eq!(result_text(&events, "n1").0, "host note taken");
    assert!(agent.notes().is_empty());
}

#[tokio::test]
async fn the_summary_prompt_is_configurable() {
    let provider = ScriptedProvider::new([
        Turn::new().text("done"),
        Turn::new().text("summary one"),
        Turn::new().text("done again"),
        Turn::new().text("summary two"),
    ]);
    let custom = "Summarise as a bulleted changelog for the release manager.";
    let agent = Agent::builder(provider.clone())
        .compaction_prompt(custom)
        .compact_keep_tail(1)
        .build();
    collect(agent.prompt("work")).await;
    let events = collect(agent.compact()).await;
    assert_eq!(finished(&events), RunStatus::Success, "{events:?}");
    let request = provider.requests().pop().expect("the compaction request");
    assert_eq!(request.system.as_deref(), Some(custom));

    // Without one (or a blank one) the default applies.
    let default = Agent::builder(provider.clone())
        .compaction_prompt("   ")
        .compact_keep_tail(1)
        .build();
    collect(default.prompt("work")).await;
    collect(default.compact()).await;
    let request = provider.requests().pop().expect("the compaction request");
    assert_eq!(
        request.system.as_deref(),
        Some(agent_core::compaction::DEFAULT_COMPACTION_PROMPT)
    );
}

/// A tool that counts how often its schema is made.
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

#[async_trait]
impl Tool for Counted {
    fn name(&self) -> &str {
        "counted"
    }
    fn description(&self) -> &str {
        "Counts its schemas."
    }
    fn parameters(&self) -> Value {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

/// An idle agent (a server holds thousands) asked for its context usage estimates its tool
/// specs once and keeps the number, not the specs: the estimate is the same after the
/// specs are built for a model call.
#[tokio::test]
async fn an_idle_agents_context_estimate_keeps_no_tool_specs() {
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("hi")]))
        .tool(Counted(made.clone()))
        .build();
    let idle = agent.context_usage();
    assert!(idle.used > 0, "the tool spec is counted: {idle:?}");
    assert_eq!(agent.context_usage(), idle);
    assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The first model call builds the specs (once) for the request.
    collect(agent.prompt("go")).await;
    assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 2);
}
