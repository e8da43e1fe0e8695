//! Reliability of the tools: arbitrary argument JSON never panics or hangs a tool and never
//! lets it touch anything outside the workspace, and confinement holds under every
//! permission mode (unsafe included: the tools keep it even when agent-core pre-approves).
//!
//! Property runs use `AGENT_SDK_PROPTEST_CASES` cases (default 256).

use std::path::PathBuf;
use std::time::Duration;

use agent_core::{
    async_trait,
    event::ToolStatus,
    permission::{Approval, ApprovalRequest},
    Agent, AgentEvent, Approver, PermissionMode, RunStatus, ToolContext,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use futures::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{json, Map, Value};

/// Bound on one tool call or one agent run.
const LIMIT: Duration = Duration::from_secs(60);
const SECRET: &str = "outside secret: do not read\n";
/// Replaced by the absolute path of the directory next to the workspace.
const OUTSIDE: &str = "@OUTSIDE@";

fn cases() -> u32 {
    std::env::var("AGENT_SDK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A workspace `ws` with a sibling directory `outside` holding one file.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws/src")).expect("ws");
        std::fs::create_dir_all(dir.path().join("outside")).expect("outside");
        std::fs::write(dir.path().join("ws/src/lib.rs"), "fn main() {}\n").expect("file");
        std::fs::write(dir.path().join("outside/secret.txt"), SECRET).expect("secret");
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("outside"), dir.path().join("ws/link"))
            .expect("symlink");
        Self { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// The outside directory is exactly as created, and nothing appeared next to `ws`.
    fn assert_untouched(&self, what: &str) {
        let mut names: Vec<String> = std::fs::read_dir(self.outside())
            .expect("outside")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["secret.txt"], "{what}: a file appeared outside");
        let secret = std::fs::read_to_string(self.outside().join("secret.txt")).expect("read");
        assert_eq!(secret, SECRET, "{what}: the outside file changed");
        let mut top: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("top")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(top, ["outside", "ws"], "{what}: a file appeared next to ws");
    }

    fn substitute(&self, value: Value) -> Value {
        match value {
            Value::String(s) => {
                Value::String(s.replace(OUTSIDE, &self.outside().to_string_lossy()))
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.substitute(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, self.substitute(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Strings that stress a path or text argument.
fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "\\PC{0,24}",
        1 => Just(String::new()),
        1 => Just("..".to_string()),
        1 => Just("../outside/secret.txt".to_string()),
        1 => Just("../outside/new.txt".to_string()),
        1 => Just("src/../../outside/new.txt".to_string()),
        1 => Just(format!("{OUTSIDE}/secret.txt")),
        1 => Just(format!("{OUTSIDE}/created.txt")),
        1 => Just("link/secret.txt".to_string()),
        1 => Just("link/created.txt".to_string()),
        1 => Just("/".to_string()),
        1 => Just("/etc/passwd".to_string()),
        1 => Just("src/lib.rs".to_string()),
        1 => Just("a\u{0}b".to_string()),
        1 => Just("line\u{2028}sep\u{2029}".to_string()),
        1 => Just("**/*".to_string()),
        1 => Just("../**".to_string()),
        1 => Just("(((((".to_string()),
        1 => Just("x".repeat(70_000)),
        1 => Just("é".repeat(5_000)),
    ]
}

/// Arbitrary JSON values, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value nested `depth` levels deep (beyond what serde_json's parser would ever hand a
/// tool: it stops at 128).
fn deep(depth: usize) -> Value {
    let mut value = json!("bottom");
    for i in 0..depth {
        value = match i % 2 {
            0 => json!([value]),
            _ => json!({"path": value}),
        };
    }
    value
}

const KEYS: &[&str] = &[
    "path",
    "content",
    "offset",
    "limit",
    "old_string",
    "new_string",
    "replace_all",
    "pattern",
    "glob",
    "explanation",
    "plan",
    "step",
    "status",
    "timeout_ms",
];

/// Argument objects: arbitrary values, objects with the tools' own keys holding
/// arbitrary (often mistyped) values, and deeply nested values.
fn args() -> impl Strategy<Value = Value> {
    let known = prop::collection::btree_map(prop::sample::select(KEYS), json_value(), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    let typed = (
        nasty_string(),
        nasty_string(),
        nasty_string(),
        any::<i64>(),
        any::<bool>(),
    )
        .prop_map(|(path, a, b, n, flag)| {
            json!({
                "path": path, "content": a, "old_string": a, "new_string": b,
                "pattern": a, "glob": b, "offset": n, "limit": n, "replace_all": flag,
                "plan": [{"step": a, "status": b}], "explanation": path,
            })
        });
    prop_oneof![
        3 => json_value(),
        4 => known,
        4 => typed,
        1 => (1usize..200).prop_map(deep),
    ]
}

/// `bash` arguments whose command is never an arbitrary string (random shell text must not
/// run on the test machine): a harmless command or a mistyped value, any `timeout_ms`.
fn bash_args() -> impl Strategy<Value = Value> {
    let command = prop_oneof![
        Just(json!("true")),
        Just(json!("echo ok")),
        Just(json!("printf '%s' \"$PWD\"")),
        Just(json!("exit 3")),
        Just(json!("")),
        json_value().prop_filter("not a string", |v| !v.is_string()),
    ];
    let timeout = prop_oneof![
        Just(None),
        json_value().prop_map(Some),
        any::<i64>().prop_map(|n| Some(json!(n))),
    ];
    let extra = prop::collection::btree_map(prop::sample::select(KEYS), json_value(), 0..3);
    prop_oneof![
        4 => (command, timeout, extra).prop_map(|(command, timeout, extra)| {
            let mut map: Map<String, Value> = extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            map.insert("command".into(), command);
            if let Some(t) = timeout {
                map.insert("timeout_ms".into(), t);
            }
            Value::Object(map)
        }),
        1 => json_value().prop_filter("no command string", |v| {
            !v.get("command").is_some_and(Value::is_string)
        }),
    ]
}

/// Calls `name` with `args` (and assesses it first), bounded by [`LIMIT`]; returns the
/// result text. A panic inside the tool fails the test.
fn call(rt: &tokio::runtime::Runtime, sb: &Sandbox, name: &str, args: Value) -> String {
    let tools = ToolSet::defaults(sb.ws());
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    let args = sb.substitute(args);
    let _ = tool.assess(&args, &sb.ws());
    let ctx = ToolContext::new(sb.ws());
    let result = rt.block_on(async {
        tokio::time::timeout(LIMIT, tool.call(args.clone(), ctx))
            .await
            .unwrap_or_else(|_| panic!("{name} hung on {args}"))
    });
    match result {
        Ok(out) => out.text_content(),
        Err(err) => {
            let text = err.to_string();
            assert!(!text.is_empty(), "{name}: an error without words");
            text
        }
    }
}

fn run_tool_property(name: &'static str, strategy: impl Strategy<Value = Value>, cases: u32) {
    let rt = runtime();
    let mut runner = runner(cases);
    let result = runner.run(&strategy, |args| {
        let sb = Sandbox::new();
        let text = call(&rt, &sb, name, args.clone());
        prop_assert!(
            !text.contains("do not read"),
            "{name} returned the outside file for {args}"
        );
        sb.assert_untouched(&format!("{name} {args}"));
        Ok(())
    });
    if let Err(err) = result {
        panic!("{name}: {err}");
    }
}

#[test]
fn read_file_survives_arbitrary_arguments() {
    run_tool_property("read_file", args(), cases());
}

#[test]
fn write_file_survives_arbitrary_arguments() {
    run_tool_property("write_file", args(), cases());
}

#[test]
fn edit_file_survives_arbitrary_arguments() {
    run_tool_property("edit_file", args(), cases());
}

#[test]
fn list_dir_survives_arbitrary_arguments() {
    run_tool_property("list_dir", args(), cases());
}

#[test]
fn glob_survives_arbitrary_arguments() {
    run_tool_property("glob", args(), cases());
}

#[test]
fn grep_survives_arbitrary_arguments() {
    run_tool_property("grep", args(), cases());
}

#[test]
fn plan_survives_arbitrary_arguments() {
    run_tool_property("plan", args(), cases());
}

#[test]
fn bash_survives_arbitrary_arguments() {
    // Every case starts a shell: a quarter of the budget keeps CI time in check.
    run_tool_property("bash", bash_args(), (cases() / 4).max(16));
}

/// Approves everything, as a user clicking "always allow" would.
struct AllowAll;

#[async_trait]
impl Approver for AllowAll {
    async fn approve(&self, _request: ApprovalRequest) -> Approval {
        Approval::AllowAlways
    }
}

fn escaping_calls(sb: &Sandbox) -> Vec<(&'static str, String)> {
    let abs = sb.outside().to_string_lossy().into_owned();
    vec![
        (
            "read_file",
            json!({"path": "../outside/secret.txt"}).to_string(),
        ),
        (
            "read_file",
            json!({"path": format!("{abs}/secret.txt")}).to_string(),
        ),
        ("read_file", json!({"path": "link/secret.txt"}).to_string()),
        (
            "write_file",
            json!({"path": "../outside/new.txt", "content": "x"}).to_string(),
        ),
        (
            "write_file",
            json!({"path": format!("{abs}/abs.txt"), "content": "x"}).to_string(),
        ),
        (
            "write_file",
            json!({"path": "link/via-link.txt", "content": "x"}).to_string(),
        ),
        (
            "edit_file",
            json!({"path": "../outside/secret.txt", "old_string": "do not", "new_string": "did"})
                .to_string(),
        ),
        ("list_dir", json!({"path": ".."}).to_string()),
        ("list_dir", json!({"path": abs}).to_string()),
        ("glob", json!({"pattern": "*", "path": ".."}).to_string()),
        (
            "grep",
            json!({"pattern": "do not", "path": ".."}).to_string(),
        ),
        (
            "grep",
            json!({"pattern": "do not", "path": "link"}).to_string(),
        ),
    ]
}

#[test]
fn paths_stay_inside_the_workspace_under_every_permission_mode() {
    let rt = runtime();
    for mode in [
        PermissionMode::Ask,
        PermissionMode::Auto,
        PermissionMode::Plan,
        PermissionMode::Unsafe,
    ] {
        let sb = Sandbox::new();
        let calls = escaping_calls(&sb);
        let mut turn = Turn::new();
        for (i, (name, args)) in calls.iter().enumerate() {
            turn = turn.tool_call(format!("c{i}"), *name, args.as_str());
        }
        let provider = ScriptedProvider::new([turn, Turn::new().text("done")]);
        let agent = Agent::builder(provider)
            .tools(ToolSet::defaults(sb.ws()).into_tools())
            .permission_mode(mode)
            .approver(AllowAll)
            .cwd(sb.ws())
            .build();
        let events = rt.block_on(async {
            tokio::time::timeout(LIMIT, agent.prompt("escape").collect::<Vec<_>>())
                .await
                .expect("the run finished")
        });
        let results: Vec<(ToolStatus, String)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolResult {
                    status, content, ..
                } => Some((
                    *status,
                    content
                        .iter()
                        .filter_map(|b| match b {
                            agent_core::ContentBlock::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<String>(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), calls.len(), "{mode:?}: one result per call");
        for ((status, text), (name, args)) in results.iter().zip(&calls) {
            assert_eq!(
                *status,
                ToolStatus::Error,
                "{mode:?}: {name} {args} was not refused: {text}"
            );
            assert!(
                !text.contains("do not read"),
                "{mode:?}: {name} leaked: {text}"
            );
        }
        assert!(
            matches!(
                events.last(),
                Some(AgentEvent::RunFinished {
                    status: RunStatus::Success,
                    ..
                })
            ),
            "{mode:?}: {:?}",
            events.last()
        );
        sb.assert_untouched(&format!("{mode:?}"));
    }
}

#[test]
fn deep_nesting_and_huge_values_are_plain_argument_errors() {
    let rt = runtime();
    let sb = Sandbox::new();
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "grep",
        "glob",
        "plan",
    ] {
        let text = call(
            &rt,
            &sb,
            name,
            // Arguments reach tools through serde_json's parser, which refuses nesting past
            // 128 levels; deeper values cannot arrive, and dropping a 1000-deep Value can
            // overflow a 2 MiB test-thread stack in a debug build.
            json!({"path": deep(127), "pattern": deep(127)}),
        );
        assert!(
            text.contains("invalid") || text.contains("Error") || text.contains("error"),
            "{name}: {text}"
        );
    }
    sb.assert_untouched("deep");
}
