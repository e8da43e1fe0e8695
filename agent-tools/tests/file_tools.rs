//! The file tools: happy paths and failure messages.

use std::path::Path;

use agent_core::{SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use agent_tools::{ToolSet, TRUNCATION_MARKER};
use serde_json::{json, Value};

fn setup() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().unwrap();
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    let ctx = ToolContext::new(tools.workspace());
    tokio::time::timeout(std::time::Duration::from_secs(30), tool.call(args, ctx))
        .await
        .expect("tool call timed out")
}

async fn ok(tools: &ToolSet, name: &str, args: Value) -> ToolOutput {
    match call(tools, name, args).await {
        Ok(out) => out,
        Err(e) => panic!("{name} failed: {e}"),
    }
}

async fn err(tools: &ToolSet, name: &str, args: Value) -> String {
    match call(tools, name, args).await {
        Ok(out) if out.is_error => out.text_content(),
        Ok(out) => panic!("{name} succeeded: {}", out.text_content()),
        Err(e) => e.to_string(),
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn defaults_in_order_with_schemas_and_side_effects() {
    let (_dir, tools) = setup();
    assert_eq!(
        tools.names(),
        [
            "read_file",
            "write_file",
            "edit_file",
            "apply_patch",
            "list_dir",
            "glob",
            "grep",
            "view_image",
            "bash",
            "exec_command",
            "write_stdin",
            "plan",
            "web_fetch"
        ]
    );
    let expect = [
        (
            "read_file",
            SideEffect::Read,
            vec!["path"],
            vec!["offset", "limit"],
        ),
        (
            "write_file",
            SideEffect::Write,
            vec!["path", "content"],
            vec![],
        ),
        (
            "edit_file",
            SideEffect::Write,
            vec!["path", "old_string", "new_string"],
            vec!["replace_all"],
        ),
        ("apply_patch", SideEffect::Write, vec!["patch"], vec!["cwd"]),
        ("list_dir", SideEffect::Read, vec![], vec!["path"]),
        ("glob", SideEffect::Read, vec!["pattern"], vec!["path"]),
        (
            "grep",
            SideEffect::Read,
            vec!["pattern"],
            vec!["path", "glob"],
        ),
        (
            "bash",
            SideEffect::Shell,
            vec!["command"],
            vec!["timeout_ms", "sandbox_permissions", "justification"],
        ),
        ("plan", SideEffect::None, vec!["plan"], vec!["explanation"]),
        ("view_image", SideEffect::Read, vec!["path"], vec![]),
        (
            "exec_command",
            SideEffect::Shell,
            vec!["cmd"],
            vec!["workdir", "yield_time_ms", "max_output_tokens", "tty"],
        ),
        (
            "write_stdin",
            SideEffect::Shell,
            vec![],
            vec!["session_id", "chars", "yield_time_ms", "max_output_tokens"],
        ),
        (
            "web_fetch",
            SideEffect::Network,
            vec!["url"],
            vec!["max_bytes", "format"],
        ),
    ];
    for (name, side_effect, required, optional) in expect {
        let tool = tools.get(name).unwrap();
        assert_eq!(tool.side_effect(), side_effect, "{name}");
        assert!(
            tool.description().len() > 40,
            "{name} needs a real description"
        );
        let schema = tool.parameters();
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert!(schema.get("$schema").is_none());
        let props = schema["properties"].as_object().unwrap();
        let mut req: Vec<&str> = schema["required"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        req.sort();
        let mut want = required.clone();
        want.sort();
        assert_eq!(req, want, "{name} required");
        for p in required.iter().chain(&optional) {
            assert!(props.contains_key(*p), "{name} lacks {p}: {schema}");
            assert!(
                props[*p].get("description").is_some(),
                "{name}.{p} undocumented"
            );
        }
        assert_eq!(
            props.len(),
            required.len() + optional.len(),
            "{name}: {schema}"
        );
    }
    let plan = tools.get("plan").unwrap().parameters();
    let status = &plan["properties"]["plan"]["items"]["properties"]["status"];
    assert_eq!(
        status["enum"],
        json!(["pending", "in_progress", "completed"]),
        "{plan}"
    );
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    let (dir, tools) = setup();
    write(dir.path(), "a.txt", "one\ntwo\nthree\nfour\n");
    let out = ok(&tools, "read_file", json!({"path": "a.txt"})).await;
    assert_eq!(
        out.text_content(),
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    assert!(!out.is_error && !out.truncated);

    let out = ok(
        &tools,
        "read_file",
        json!({"path": "a.txt", "offset": 2, "limit": 2}),
    )
    .await;
    let text = out.text_content();
    assert!(text.starts_with("     2\ttwo\n     3\tthree\n"), "{text}");
    assert!(text.contains("use offset=4 to continue"), "{text}");

    let e = err(&tools, "read_file", json!({"path": "a.txt", "offset": 10})).await;
    assert!(
        e.contains("offset 10 is past the end of a.txt (4 lines)"),
        "{e}"
    );
}

#[tokio::test]
async fn read_file_failures_are_clear() {
    let (dir, tools) = setup();
    std::fs::write(dir.path().join("bin.dat"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("empty.txt"), "").unwrap();

    let e = err(&tools, "read_file", json!({"path": "bin.dat"})).await;
    assert!(e.contains("bin.dat is a binary file (6 bytes)"), "{e}");
    let e = err(&tools, "read_file", json!({"path": "missing.txt"})).await;
    assert_eq!(e, "file not found: missing.txt");
    let e = err(&tools, "read_file", json!({"path": "sub"})).await;
    assert!(e.contains("sub is a directory"), "{e}");
    let e = err(&tools, "read_file", json!({"offset": 1})).await;
    assert!(e.contains("invalid arguments") && e.contains("path"), "{e}");
    let out = ok(&tools, "read_file", json!({"path": "empty.txt"})).await;
    assert_eq!(out.text_content(), "empty.txt is empty (0 bytes).");
}

#[tokio::test]
async fn read_file_caps_huge_files() {
    let (dir, tools) = setup();
    let line = "x".repeat(99);
    let text: String = (0..5000).map(|_| format!("{line}\n")).collect();
    write(dir.path(), "big.txt", &text);
    let out = ok(&tools, "read_file", json!({"path": "big.txt"})).await;
    let shown = out.text_content();
    assert!(out.truncated);
    // The whole result, hint included, fits the cap (so the agent never spills it).
    assert!(shown.len() <= 10240, "{}", shown.len());
    assert!(shown.contains("more lines follow: use offset="), "{shown}");
}

#[tokio::test]
async fn read_file_redacts_secrets() {
    let (dir, tools) = setup();
    write(
        dir.path(),
        ".env",
        "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123\nDEBUG=1\n",
    );
    let out = ok(&tools, "read_file", json!({"path": ".env"})).await;
    assert!(out.redacted);
    let text = out.text_content();
    assert!(text.contains("OPENAI_API_KEY=[REDACTED]"), "{text}");
    assert!(text.contains("DEBUG=1"));
}

#[tokio::test]
async fn write_file_creates_parents_and_reports_changes() {
    let (dir, tools) = setup();
    let out = ok(
        &tools,
        "write_file",
        json!({"path": "deep/er/new.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(out.changed_files, vec!["deep/er/new.txt".to_string()]);
    assert!(
        out.text_content().starts_with("Created deep/er/new.txt"),
        "{}",
        out.text_content()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(),
        "hello\n"
    );

    let out = ok(
        &tools,
        "write_file",
        json!({"path": "deep/er/new.txt", "content": "bye"}),
    )
    .await;
    assert!(
        out.text_content().starts_with("Overwrote"),
        "{}",
        out.text_content()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(),
        "bye"
    );

    let e = err(
        &tools,
        "write_file",
        json!({"path": "deep", "content": "x"}),
    )
    .await;
    assert!(e.contains("deep is a directory"), "{e}");
    let e = err(&tools, "write_file", json!({"path": "x.txt"})).await;
    assert!(e.contains("content"), "{e}");
}

#[tokio::test]
async fn edit_file_replaces_and_diffs() {
    let (dir, tools) = setup();
    write(
        dir.path(),
        "src/lib.rs",
        "fn a() {}\nfn b() {}\nfn c() {}\n",
    );
    let out = ok(
        &tools,
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "fn b() {}", "new_string": "fn beta() {}"}),
    )
    .await;
    let text = out.text_content();
    assert!(
        text.starts_with("Edited src/lib.rs (1 replacement)."),
        "{text}"
    );
    assert!(
        text.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
        "{text}"
    );
    assert!(text.contains("-fn b() {}\n+fn beta() {}\n"), "{text}");
    assert_eq!(out.changed_files, vec!["src/lib.rs".to_string()]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "fn a() {}\nfn beta() {}\nfn c() {}\n"
    );
}

#[tokio::test]
async fn edit_file_failures_and_replace_all() {
    let (dir, tools) = setup();
    write(dir.path(), "t.txt", "x = 1\nx = 1\n");
    let e = err(
        &tools,
        "edit_file",
        json!({"path": "t.txt", "old_string": "y", "new_string": "z"}),
    )
    .await;
    assert!(e.contains("old_string was not found in t.txt"), "{e}");
    let e = err(
        &tools,
        "edit_file",
        json!({"path": "t.txt", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    .await;
    assert!(e.contains("old_string occurs 2 times in t.txt"), "{e}");
    assert!(e.contains("replace_all"), "{e}");
    let e = err(
        &tools,
        "edit_file",
        json!({"path": "t.txt", "old_string": "", "new_string": "z"}),
    )
    .await;
    assert!(e.contains("old_string is empty"), "{e}");
    let e = err(
        &tools,
        "edit_file",
        json!({"path": "t.txt", "old_string": "x", "new_string": "x"}),
    )
    .await;
    assert!(e.contains("identical"), "{e}");
    let e = err(
        &tools,
        "edit_file",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(e.contains("file not found: nope.txt"), "{e}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "x = 1\nx = 1\n"
    );

    let out = ok(
        &tools,
        "edit_file",
        json!({"path": "t.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
    )
    .await;
    assert!(out.text_content().contains("(2 replacements)"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "x = 2\nx = 2\n"
    );
}

#[tokio::test]
async fn list_dir_respects_gitignore() {
    let (dir, tools) = setup();
    write(dir.path(), ".gitignore", "target/\n*.log\n");
    write(dir.path(), "src/main.rs", "fn main() {}\n");
    write(dir.path(), "target/debug/app", "bin");
    write(dir.path(), "build.log", "log");
    write(dir.path(), "README.md", "# hi\n");
    let out = ok(&tools, "list_dir", json!({})).await;
    assert_eq!(out.text_content(), ".gitignore\nREADME.md\nsrc/");
    let out = ok(&tools, "list_dir", json!({"path": "src"})).await;
    assert_eq!(out.text_content(), "main.rs");
    let e = err(&tools, "list_dir", json!({"path": "README.md"})).await;
    assert!(e.contains("is a file, not a directory"), "{e}");
    let e = err(&tools, "list_dir", json!({"path": "nope"})).await;
    assert_eq!(e, "directory not found: nope");
}

#[tokio::test]
async fn glob_matches_and_respects_gitignore() {
    let (dir, tools) = setup();
    write(dir.path(), ".gitignore", "target/\n");
    write(dir.path(), "src/main.rs", "");
    write(dir.path(), "src/util/mod.rs", "");
    write(dir.path(), "build.rs", "");
    write(dir.path(), "target/gen.rs", "");
    let out = ok(&tools, "glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(out.text_content(), "build.rs\nsrc/main.rs\nsrc/util/mod.rs");
    let out = ok(&tools, "glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(out.text_content(), "build.rs");
    let out = ok(&tools, "glob", json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(out.text_content(), "main.rs");
    let out = ok(&tools, "glob", json!({"pattern": "**/*.py"})).await;
    assert!(
        out.text_content().starts_with("No files match **/*.py"),
        "{}",
        out.text_content()
    );
    let e = err(&tools, "glob", json!({"pattern": "src/[z"})).await;
    assert!(e.contains("invalid pattern"), "{e}");
}

#[tokio::test]
async fn grep_finds_lines_and_caps() {
    let (dir, tools) = setup();
    write(dir.path(), ".gitignore", "ignored.txt\n");
    write(dir.path(), "a.rs", "fn alpha() {}\nlet beta = 2;\n");
    write(dir.path(), "sub/b.txt", "alpha again\n");
    write(dir.path(), "ignored.txt", "alpha hidden\n");
    std::fs::write(dir.path().join("bin.dat"), b"alpha\0binary").unwrap();
    let out = ok(&tools, "grep", json!({"pattern": "alpha"})).await;
    assert_eq!(
        out.text_content(),
        "a.rs:1: fn alpha() {}\nsub/b.txt:1: alpha again"
    );
    let out = ok(&tools, "grep", json!({"pattern": "alpha", "glob": "*.rs"})).await;
    assert_eq!(out.text_content(), "a.rs:1: fn alpha() {}");
    let out = ok(&tools, "grep", json!({"pattern": "alpha", "path": "sub"})).await;
    assert_eq!(out.text_content(), "sub/b.txt:1: alpha again");
    let out = ok(&tools, "grep", json!({"pattern": "^let \\w+ = \\d"})).await;
    assert_eq!(out.text_content(), "a.rs:2: let beta = 2;");
    let out = ok(&tools, "grep", json!({"pattern": "gamma"})).await;
    assert!(
        out.text_content().starts_with("No matches for \"gamma\""),
        "{}",
        out.text_content()
    );
    let e = err(&tools, "grep", json!({"pattern": "("})).await;
    assert!(e.contains("invalid regex"), "{e}");

    let many: String = (0..500).map(|i| format!("hit {i}\n")).collect();
    write(dir.path(), "many.txt", &many);
    let out = ok(
        &tools,
        "grep",
        json!({"pattern": "^hit", "path": "many.txt"}),
    )
    .await;
    assert!(out.truncated);
    let text = out.text_content();
    assert!(
        text.contains("stopped after 200 matches"),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
}

#[tokio::test]
async fn output_cap_is_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let tools = ToolSet::builder(dir.path()).output_cap(64).build();
    write(dir.path(), "f.txt", &"é".repeat(200));
    let out = ok(&tools, "grep", json!({"pattern": "é"})).await;
    assert!(out.truncated);
    let text = out.text_content();
    assert!(text.ends_with(TRUNCATION_MARKER));
    assert!(text.len() <= 64);
}

#[tokio::test]
async fn plan_returns_the_update() {
    let (_dir, tools) = setup();
    let out = ok(
        &tools,
        "plan",
        json!({"explanation": "start", "plan": [
            {"step": "Read code", "status": "completed"},
            {"step": "Fix bug", "status": "in_progress"},
            {"step": "Test", "status": "pending"}
        ]}),
    )
    .await;
    let update = out.plan.expect("plan update");
    assert_eq!(update.explanation.as_deref(), Some("start"));
    assert_eq!(update.plan.len(), 3);
    assert_eq!(
        update.plan[1].status,
        agent_core::tool::PlanStatus::InProgress
    );
    assert_eq!(
        out.content,
        vec![agent_core::ContentBlock::text(
            "Plan updated: 3 items (1 completed, 1 in progress, 1 pending)."
        )]
    );
    let e = err(
        &tools,
        "plan",
        json!({"plan": [{"step": "x", "status": "doing"}]}),
    )
    .await;
    assert!(e.contains("unknown variant `doing`"), "{e}");
    let e = err(
        &tools,
        "plan",
        json!({"plan": [{"step": " ", "status": "pending"}]}),
    )
    .await;
    assert!(e.contains("item 1 has an empty step"), "{e}");
}

#[tokio::test]
async fn toolset_filters_and_custom_tools() {
    let (_dir, tools) = setup();
    let only = tools
        .clone()
        .filter(Some(&["read_file".to_string(), "grep".to_string()]), &[])
        .unwrap();
    assert_eq!(only.names(), ["read_file", "grep"]);
    let e = tools
        .clone()
        .filter(None, &["nope".to_string()])
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("unknown tool \"nope\"; available tools: read_file, write_file"),
        "{e}"
    );

    struct Leaky;
    #[agent_core::async_trait]
    impl Tool for Leaky {
        fn name(&self) -> &str {
            "leaky"
        }
        fn description(&self) -> &str {
            "Prints the environment."
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {}})
        }
        fn side_effect(&self) -> SideEffect {
            SideEffect::None
        }
        async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(
                "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            ))
        }
    }
    let with = tools.with(Leaky);
    assert_eq!(with.names().last(), Some(&"leaky"));
    let out = ok(&with, "leaky", json!({})).await;
    assert!(out.redacted);
    assert_eq!(out.text_content(), "GITHUB_TOKEN=[REDACTED]");
}
