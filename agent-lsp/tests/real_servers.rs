//! agent-lsp against real language servers (pyright and typescript-language-server from
//! npm, installed on first use by `test_support::lsp`): on small fixture projects,
//! definitions and references across two files, workspace symbols and hover in each
//! dialect; an edit that introduces a type error gets it in its result and the fix clears
//! it; servers start only when asked, restart once after a crash, and leave no process when
//! the session ends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Tool, ToolContext, ToolOutput};
use agent_lsp::{Dialect, Lsp, LspConfig};
use agent_tools::ToolSet;
use serde_json::{json, Value};

/// Bound on one test.
const TEST_TIMEOUT: Duration = Duration::from_secs(180);
/// Bound on a server process going away.
const GONE: Duration = Duration::from_secs(20);

const UTIL_PY: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";
const MAIN_PY: &str = "from util import add\n\ntotal: int = add(1, 2)\nprint(total)\n";
const BROKEN_PY: &str = "from util import add\n\ntotal: int = add(\"x\", 2)\nprint(total)\n";

const MATH_TS: &str = "export function add(a: number, b: number): number {\n  return a + b;\n}\n";
const MAIN_TS: &str =
    "import { add } from \"./math\";\n\nconst total: number = add(1, 2);\nconsole.log(total);\n";

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// A Python project: `util.py` defines `add`, `main.py` calls it.
fn python_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "pyproject.toml",
        "[project]\nname = \"fixture\"\n",
    );
    write(dir.path(), "util.py", UTIL_PY);
    write(dir.path(), "main.py", MAIN_PY);
    dir
}

/// A TypeScript project: `src/math.ts` exports `add`, `src/main.ts` calls it.
fn typescript_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}"#,
    );
    write(dir.path(), "src/math.ts", MATH_TS);
    write(dir.path(), "src/main.ts", MAIN_TS);
    dir
}

/// The built-in table with the npm servers' absolute paths.
fn config() -> LspConfig {
    let mut config = LspConfig::builtin();
    let servers = json!({"servers": {
        "pyright-langserver": {"command": test_support::lsp::bin("pyright-langserver")},
        "typescript-language-server": {
            "command": test_support::lsp::bin("typescript-language-server"),
            "initializationOptions": {"tsserver": {"path": test_support::lsp::tsserver_lib()}}
        }
    }});
    config.merge_json(&servers.to_string()).expect("valid");
    // Generous bounds: the tests start several servers at once on a small machine.
    config.diagnostics_timeout = Duration::from_secs(60);
    config.request_timeout = Duration::from_secs(60);
    config
}

fn tool(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(tool: &Arc<dyn Tool>, dir: &Path, args: Value) -> ToolOutput {
    tool.call(args.clone(), ToolContext::new(dir))
        .await
        .unwrap_or_else(|e| panic!("{} {args}: {e}", tool.name()))
}

async fn bounded<F: std::future::Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("the test finished in time");
}

fn pids(lsp: &Lsp) -> Vec<u32> {
    lsp.running().iter().filter_map(|s| s.pid).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_definitions_references_symbols_and_hover_in_each_dialect() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        let ws = python_project();
        let dir = ws.path();
        let lsp = Lsp::new(dir, config());
        assert!(lsp.running().is_empty(), "nothing starts before a query");

        let zero = tool(&lsp.tools(Dialect::Zero, &[]), "lsp_navigate");
        let definition = call(
            &zero,
            dir,
            json!({"op": "definition", "path": "main.py", "line": 3, "character": 14}),
        )
        .await;
        assert!(!definition.is_error, "{definition:?}");
        assert_eq!(
            definition.text_content(),
            "1 definition result(s):\n  util.py:1:5"
        );
        assert_eq!(lsp.running().len(), 1, "one server for the workspace");
        assert_eq!(lsp.running()[0].id, "pyright-langserver");

        let references = call(
            &zero,
            dir,
            json!({"op": "references", "path": "util.py", "line": 1, "character": 5}),
        )
        .await;
        let text = references.text_content();
        assert!(text.contains("references result(s):"), "{text}");
        for place in ["util.py:1:5", "main.py:3:14"] {
            assert!(
                text.lines().any(|l| l == format!("  {place}")),
                "{place} in {text}"
            );
        }

        let symbols = call(
            &zero,
            dir,
            json!({"op": "workspace_symbol", "path": "main.py", "query": "add"}),
        )
        .await;
        let text = symbols.text_content();
        assert!(text.contains("  function add — util.py:1:5"), "{text}");

        let hover = call(
            &zero,
            dir,
            json!({"op": "hover", "path": "main.py", "line": 3, "character": 14}),
        )
        .await;
        let text = hover.text_content();
        assert!(text.starts_with("Hover at main.py:3:14:\n"), "{text}");
        assert!(
            text.contains("(function) def add(") && text.contains(") -> int"),
            "{text}"
        );

        let missing_op = call(&zero, dir, json!({"op": "definition", "path": "main.py"})).await;
        assert!(missing_op.is_error);
        assert_eq!(
            missing_op.text_content(),
            "Error: lsp_navigate definition requires 1-based line and character."
        );

        // The SDK's dialect shows each location with its line.
        let sdk = tool(&lsp.tools(Dialect::Sdk, &[]), "lsp_navigate");
        let definition = call(
            &sdk,
            dir,
            json!({"op": "definition", "path": "main.py", "line": 3, "character": 14}),
        )
        .await;
        assert_eq!(
            definition.text_content(),
            "1 definition result(s):\n  util.py:1:5: def add(a: int, b: int) -> int:"
        );
        let references = call(
            &sdk,
            dir,
            json!({"op": "references", "path": "util.py", "line": 1, "character": 5}),
        )
        .await;
        assert!(
            references
                .text_content()
                .contains("  main.py:3:14: total: int = add(1, 2)"),
            "{}",
            references.text_content()
        );

        // zut's: each server's raw answer under its id.
        let zut = tool(&lsp.tools(Dialect::Zut, &[]), "lsp");
        let definition = call(
            &zut,
            dir,
            json!({"action": "definition", "path": "main.py", "line": 3, "column": 14}),
        )
        .await;
        let text = definition.text_content();
        assert!(!definition.is_error, "{text}");
        assert!(text.starts_with("pyright-langserver:\n["), "{text}");
        assert!(text.contains("util.py\""), "{text}");
        let status = call(&zut, dir, json!({"action": "status", "path": "main.py"})).await;
        let status: Value = serde_json::from_str(&status.text_content()).expect("JSON");
        assert_eq!(status[0]["id"], "pyright-langserver");
        assert_eq!(status[0]["state"], "ready");
        let symbols = call(&zut, dir, json!({"action": "symbols", "query": "add"})).await;
        assert!(
            symbols.text_content().contains("\"name\": \"add\""),
            "{}",
            symbols.text_content()
        );

        // Still one server: every dialect shares the session's.
        assert_eq!(lsp.running().len(), 1);
        let pids = pids(&lsp);
        lsp.shutdown().await;
        assert!(test_support::procs::wait_gone(&pids, GONE).await.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_definitions_references_and_symbols_across_files() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        let ws = typescript_project();
        let dir = ws.path();
        let lsp = Lsp::new(dir, config());
        let sdk = tool(&lsp.tools(Dialect::Sdk, &[]), "lsp_navigate");
        let definition = call(&sdk, dir, json!({"op": "definition", "path": "src/main.ts", "line": 3, "character": 23})).await;
        assert_eq!(
            definition.text_content(),
            "1 definition result(s):\n  src/math.ts:1:17: export function add(a: number, b: number): number {"
        );
        let references = call(&sdk, dir, json!({"op": "references", "path": "src/math.ts", "line": 1, "character": 17})).await;
        let text = references.text_content();
        for place in ["src/math.ts:1:17", "src/main.ts:1:10", "src/main.ts:3:23"] {
            assert!(text.contains(&format!("  {place}: ")), "{place} in {text}");
        }
        let symbols = call(&sdk, dir, json!({"op": "workspace_symbol", "path": "src/main.ts", "query": "add"})).await;
        // tsserver places a symbol at its whole declaration.
        assert!(
            symbols.text_content().contains("function add — src/math.ts:1:1: export function add("),
            "{}",
            symbols.text_content()
        );
        let hover = call(&sdk, dir, json!({"op": "hover", "path": "src/main.ts", "line": 3, "character": 23})).await;
        assert!(hover.text_content().contains("add(a: number, b: number): number"), "{}", hover.text_content());
        assert_eq!(lsp.running()[0].id, "typescript-language-server");
        lsp.shutdown().await;
    })
    .await;
}

/// Waits for the type error in an edit's result: the first edit after a server started may
/// race its initial analysis, so the wait is bounded by the configuration, not the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_breaks_the_types_gets_the_error_and_the_fix_clears_it() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        // Zero's words (exec).
        let ws = python_project();
        let dir = ws.path();
        let lsp = Lsp::new(dir, config());
        let tools = lsp.attach(ToolSet::defaults(dir).into_tools(), Dialect::Zero, &[]);
        let (write, edit, nav) = (tool(&tools, "write_file"), tool(&tools, "edit_file"), tool(&tools, "lsp_navigate"));

        // No server runs: an edit shows nothing and starts nothing.
        let quiet = call(&write, dir, json!({"path": "main.py", "content": BROKEN_PY})).await;
        assert!(!quiet.text_content().contains("Diagnostics"), "{quiet:?}");
        assert!(lsp.running().is_empty(), "an edit starts no server");
        call(&write, dir, json!({"path": "main.py", "content": MAIN_PY})).await;

        call(&nav, dir, json!({"op": "definition", "path": "main.py", "line": 3, "character": 14})).await;
        let broken = call(&write, dir, json!({"path": "main.py", "content": BROKEN_PY})).await;
        let text = broken.text_content();
        assert!(!broken.is_error, "{text}");
        assert!(
            text.contains("\n\nDiagnostics in main.py after this change (fix any errors you introduced):\nmain.py:3:18: error: Argument of type \"Literal['x']\" cannot be assigned to parameter \"a\" of type \"int\""),
            "{text}"
        );
        let fixed = call(&edit, dir, json!({"path": "main.py", "old_string": "add(\"x\", 2)", "new_string": "add(1, 2)"})).await;
        assert!(!fixed.is_error, "{fixed:?}");
        assert!(!fixed.text_content().contains("Diagnostics"), "{}", fixed.text_content());
        lsp.shutdown().await;

        // zut's summary (rpc), and the SDK's lsp_diagnostics, on TypeScript.
        let ws = typescript_project();
        let dir = ws.path();
        let lsp = Lsp::new(dir, config());
        let tools = lsp.attach(ToolSet::defaults(dir).into_tools(), Dialect::Zut, &[]);
        let (write, zut) = (tool(&tools, "write_file"), tool(&tools, "lsp"));
        let clean = call(&zut, dir, json!({"action": "diagnostics", "path": "src/main.ts"})).await;
        assert_eq!(clean.text_content(), "No diagnostics.");
        let broken_ts = MAIN_TS.replace("add(1, 2)", "add(\"x\", 2)");
        let broken = call(&write, dir, json!({"path": "src/main.ts", "content": broken_ts})).await;
        let text = broken.text_content();
        assert!(
            text.contains("\n\nDiagnostics: 1 error (deduplicated 1)\n- ERROR: src/main.ts:3:27 [2345] Argument of type 'string' is not assignable to parameter of type 'number'.\n"),
            "{text}"
        );
        let zut_listed = call(&tool(&tools, "lsp_diagnostics"), dir, json!({"path": "src/main.ts"})).await;
        assert!(
            zut_listed.text_content().starts_with("Diagnostics: 1 error (deduplicated 1)\n- ERROR: src/main.ts:3:27 [2345] "),
            "{}",
            zut_listed.text_content()
        );
        let sdk = lsp.tools(Dialect::Sdk, &[]);
        let listed = call(&tool(&sdk, "lsp_diagnostics"), dir, json!({"path": "src/main.ts"})).await;
        assert!(
            listed.text_content().contains("src/main.ts:3:27: error: Argument of type 'string'"),
            "{}",
            listed.text_content()
        );
        let fixed = call(&write, dir, json!({"path": "src/main.ts", "content": MAIN_TS})).await;
        assert!(!fixed.text_content().contains("Diagnostics"), "{}", fixed.text_content());
        lsp.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_edit_diagnostics_can_start_servers_or_be_turned_off() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        let ws = python_project();
        let dir = ws.path();
        let mut eager = config();
        eager.start_on_edit = true;
        let lsp = Lsp::new(dir, eager.clone());
        let tools = lsp.attach(ToolSet::defaults(dir).into_tools(), Dialect::Sdk, &[]);
        let broken = call(
            &tool(&tools, "write_file"),
            dir,
            json!({"path": "main.py", "content": BROKEN_PY}),
        )
        .await;
        assert!(
            broken.text_content().contains("main.py:3:18: error:"),
            "{broken:?}"
        );
        lsp.shutdown().await;

        let mut off = eager;
        off.diagnostics_after_edits = false;
        let lsp = Lsp::new(dir, off);
        let tools = lsp.attach(ToolSet::defaults(dir).into_tools(), Dialect::Sdk, &[]);
        let quiet = call(
            &tool(&tools, "write_file"),
            dir,
            json!({"path": "main.py", "content": BROKEN_PY}),
        )
        .await;
        assert!(!quiet.text_content().contains("Diagnostics"), "{quiet:?}");
        lsp.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_the_session_leaves_no_server_process() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        let py = python_project();
        let ts = typescript_project();
        let root = tempfile::tempdir().expect("tempdir");
        let workspace = root.path().to_path_buf();
        // One workspace holding both projects: two servers.
        for (from, to) in [(py.path(), "py"), (ts.path(), "ts")] {
            copy_dir(from, &workspace.join(to));
        }
        let lsp = Lsp::new(&workspace, config());
        let tools = lsp.tools(Dialect::Sdk, &[]);
        let nav = tool(&tools, "lsp_navigate");
        call(
            &nav,
            &workspace,
            json!({"op": "hover", "path": "py/main.py", "line": 3, "character": 14}),
        )
        .await;
        call(
            &nav,
            &workspace,
            json!({"op": "hover", "path": "ts/src/main.ts", "line": 3, "character": 23}),
        )
        .await;
        let running = lsp.running();
        assert_eq!(running.len(), 2, "{running:?}");
        assert_eq!(
            running[1].root,
            workspace.join("ts"),
            "the TypeScript project's own root"
        );
        let pids = pids(&lsp);
        assert!(pids.iter().all(test_support::procs::alive));
        // tsserver runs as a child of typescript-language-server, in its group.
        let ts_pid = running[1].pid.expect("a pid");
        let helpers = wait_children(ts_pid, "tsserver").await;
        assert!(
            !helpers.is_empty(),
            "typescript-language-server started tsserver"
        );

        // The session ends: its tools and manager are dropped.
        drop(tools);
        drop(nav);
        drop(lsp);
        let mut all: Vec<i32> = pids.iter().map(|p| *p as i32).collect();
        all.extend(helpers);
        let left = test_support::procs::wait_gone(&all, GONE).await;
        assert!(left.is_empty(), "still running: {left:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_restarted_once_then_reported() {
    if !test_support::lsp::ready() {
        return;
    }
    bounded(async {
        let ws = python_project();
        let dir = ws.path();
        let lsp = Lsp::new(dir, config());
        let nav = tool(&lsp.tools(Dialect::Zero, &[]), "lsp_navigate");
        let args = json!({"op": "definition", "path": "main.py", "line": 3, "character": 14});
        call(&nav, dir, args.clone()).await;
        for round in 0..2 {
            let pid = pids(&lsp)[0];
            kill(pid);
            assert!(test_support::procs::wait_gone(&[pid], GONE).await.is_empty());
            wait_not_running(&lsp).await;
            let after = call(&nav, dir, args.clone()).await;
            match round {
                0 => {
                    assert_eq!(after.text_content(), "1 definition result(s):\n  util.py:1:5");
                    assert_ne!(pids(&lsp), [pid], "a new process");
                }
                _ => {
                    assert!(after.is_error);
                    assert!(
                        after.text_content().starts_with("Error: lsp_navigate failed: language server pyright-langserver crashed again after a restart and was stopped"),
                        "{}",
                        after.text_content()
                    );
                }
            }
        }
        assert!(lsp.running().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_file_type_without_a_server_is_unavailable_in_each_dialect() {
    let ws = tempfile::tempdir().expect("tempdir");
    let dir = ws.path();
    write(dir, "notes.xyz", "hello\n");
    write(dir, "main.go", "package main\n");
    let mut config = LspConfig::builtin();
    config
        .merge_json(r#"{"servers": {"gopls": {"command": "/nonexistent/gopls"}}}"#)
        .expect("valid");
    let lsp = Lsp::new(dir, config);
    let position = json!({"op": "definition", "path": "notes.xyz", "line": 1, "character": 1});

    let zero = tool(&lsp.tools(Dialect::Zero, &[]), "lsp_navigate");
    let out = call(&zero, dir, position.clone()).await;
    assert!(!out.is_error);
    assert_eq!(
        out.text_content(),
        "No language server available for notes.xyz — lsp_navigate is unavailable for this file type. Fall back to grep/read_file."
    );
    let sdk = lsp.tools(Dialect::Sdk, &[]);
    let out = call(&tool(&sdk, "lsp_navigate"), dir, position).await;
    assert_eq!(
        out.text_content(),
        "no language server for .xyz files: lsp_navigate is unavailable for this file type. Use grep and read_file instead."
    );
    let out = call(
        &tool(&sdk, "lsp_diagnostics"),
        dir,
        json!({"path": "main.go"}),
    )
    .await;
    assert_eq!(
        out.text_content(),
        "no language server for .go files (/nonexistent/gopls not found on PATH): lsp_diagnostics is unavailable for this file type."
    );
    let zut = tool(&lsp.tools(Dialect::Zut, &[]), "lsp");
    let out = call(
        &zut,
        dir,
        json!({"action": "hover", "path": "notes.xyz", "line": 1, "column": 1}),
    )
    .await;
    assert_eq!(out.text_content(), "No results.");
    let out = call(&zut, dir, json!({"action": "status", "path": "main.go"})).await;
    let status: Value = serde_json::from_str(&out.text_content()).expect("JSON");
    assert_eq!(status[0]["state"], "missing");

    // Paths outside the workspace are refused before anything runs.
    let err = zero
        .call(
            json!({"op": "definition", "path": "../x.py", "line": 1}),
            ToolContext::new(dir),
        )
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("escapes the workspace"), "{err}");
    assert!(lsp.running().is_empty());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Waits (bounded) until the manager no longer counts a killed server as running.
async fn wait_not_running(lsp: &Lsp) {
    let deadline = tokio::time::Instant::now() + GONE;
    while !lsp.running().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the crash was noticed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The children of `pid` whose command line has `needle`, waiting (bounded) for one.
async fn wait_children(pid: u32, needle: &str) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + GONE;
    loop {
        let found = test_support::procs::children(pid, needle);
        if !found.is_empty() || tokio::time::Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
