//! In-process tests of `run_exec` with an injected scripted provider, so the requests the
//! model received can be inspected (resume and fork context), and with custom tools.

use std::io::Write;
use std::sync::{Arc, Mutex};

use adapter_stream_json::{run_exec, ExecHooks, ExecIo};
use agent_core::{
    async_trait, message::Role, sandbox::SandboxSupport, ContentBlock, Provider, SideEffect, Tool,
    ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use serde_json::{json, Value};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buf {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("buffer")).into_owned()
    }
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect()
    }
}

async fn exec(
    data: &std::path::Path,
    work: &std::path::Path,
    provider: Arc<dyn Provider>,
    tools: Vec<Arc<dyn Tool>>,
    args: &[&str],
) -> Outcome {
    let data = data.to_path_buf();
    let hooks = ExecHooks {
        provider: Some(provider),
        tools,
        env: Arc::new(move |k| (k == "XDG_DATA_HOME").then(|| data.display().to_string())),
        cwd: Some(work.to_path_buf()),
        ..ExecHooks::default()
    };
    exec_with(hooks, args).await
}

async fn exec_with(hooks: ExecHooks, args: &[&str]) -> Outcome {
    let out = Buf::default();
    let err = Buf::default();
    let io = ExecIo {
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(out.clone()),
        stderr: Box::new(err.clone()),
    };
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let code = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        run_exec(&args, io, hooks),
    )
    .await
    .expect("run_exec finishes");
    Outcome {
        code,
        stdout: out.text(),
        stderr: err.text(),
    }
}

/// The text of the last user message of a request.
fn last_user_text(provider: &ScriptedProvider, request: usize) -> String {
    let requests = provider.requests();
    let message = requests[request]
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .expect("a user message");
    message.text()
}

#[tokio::test]
async fn resume_and_fork_give_the_model_the_prior_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, work) = (dir.path().join("data"), dir.path().to_path_buf());

    let first = ScriptedProvider::new([Turn::new().text("The capital is Paris.")]);
    let out = exec(
        &data,
        &work,
        Arc::new(first.clone()),
        vec![],
        &[
            "-o",
            "stream-json",
            "--init-session-id",
            "s1",
            "Capital of France?",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        last_user_text(&first, 0),
        "Capital of France?",
        "a new session gets the bare prompt"
    );

    let second = ScriptedProvider::new([Turn::new().text("Yes.")]);
    let out = exec(
        &data,
        &work,
        Arc::new(second.clone()),
        vec![],
        &["-o", "stream-json", "--resume", "s1", "Are you sure?"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.stderr, "");
    assert_eq!(
        last_user_text(&second, 0),
        "Continuing Zero session s1.\nPrevious session context:\n\
         - #1 message: user Capital of France?\n\
         - #2 message: assistant The capital is Paris.\n\
         \nCurrent user request:\nAre you sure?"
    );

    let third = ScriptedProvider::new([Turn::new().text("Branched.")]);
    let out = exec(
        &data,
        &work,
        Arc::new(third.clone()),
        vec![],
        &["-o", "stream-json", "--fork", "s1", "Branch"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    let fork_id = out.events()[0]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    assert_ne!(fork_id, "s1");
    let prompt = last_user_text(&third, 0);
    assert!(
        prompt.starts_with("Forked from Zero session s1.\nPrevious session context:\n"),
        "{prompt}"
    );
    assert!(
        prompt.contains("- #3 message: user Are you sure?\n- #4 message: assistant Yes.\n"),
        "{prompt}"
    );
    assert!(
        prompt.ends_with("\n\nCurrent user request:\nBranch"),
        "{prompt}"
    );
}

/// A tool printing `size` bytes.
struct Loud {
    size: usize,
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
        json!({"type": "object", "properties": {}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: vec![ContentBlock::text("é".repeat(self.size / 2))],
            ..ToolOutput::default()
        })
    }
}

#[tokio::test]
async fn tool_result_output_is_cut_at_10240_bytes_on_a_char_boundary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "loud", "{}"),
        Turn::new().text("ok"),
    ]);
    let out = exec(
        &dir.path().join("data"),
        dir.path(),
        Arc::new(provider.clone()),
        vec![Arc::new(Loud { size: 50_000 })],
        &["-o", "stream-json", "go"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result");
    let output = result["output"].as_str().expect("output");
    assert_eq!(result["truncated"], true);
    // The agent loop held it to its 10 KiB tool-output budget: head and tail on character
    // boundaries around the notice naming the spill file with the whole output.
    assert!(output.len() <= 10240, "{}", output.len());
    assert!(output.starts_with('é') && output.ends_with('é'));
    assert!(output.contains("The full output is saved in"), "{output}");
}

/// With no tool that runs commands there is nothing to confine: a sandbox policy the kernel
/// could not enforce is not worth a warning.
#[tokio::test]
async fn no_sandbox_warning_when_no_tool_runs_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let provider = ScriptedProvider::new([Turn::new().text("hello")]);
    let hooks = ExecHooks {
        provider: Some(Arc::new(provider)),
        env: Arc::new(move |k| (k == "XDG_DATA_HOME").then(|| data.display().to_string())),
        cwd: Some(dir.path().to_path_buf()),
        ..ExecHooks::default()
    };
    let out = exec_with(
        hooks,
        &["-o", "stream-json", "--enabled-tools", "read_file", "go"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    let types: Vec<String> = out
        .events()
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        types,
        ["run_start", "text", "final", "run_end"],
        "{}",
        out.stdout
    );
}

/// On a kernel that cannot enforce the sandbox (simulated), the run says so in a `warning`
/// right after `run_start`, and `--sandbox-fallback refuse` refuses commands.
#[tokio::test]
async fn a_sandbox_weaker_than_asked_is_a_warning_and_the_fallback_applies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("b1", "bash", r#"{"command":"echo hi"}"#),
        Turn::new().text("refused"),
    ]);
    let hooks = ExecHooks {
        provider: Some(Arc::new(provider)),
        env: Arc::new(move |k| (k == "XDG_DATA_HOME").then(|| data.display().to_string())),
        cwd: Some(dir.path().to_path_buf()),
        sandbox_support: Some(SandboxSupport::unavailable("Landlock is off (simulated)")),
        ..ExecHooks::default()
    };
    let out = exec_with(
        hooks,
        &[
            "-o",
            "stream-json",
            "--skip-permissions-unsafe",
            "--sandbox-fallback",
            "refuse",
            "go",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stdout);
    let events = out.events();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        &types[..3],
        ["run_start", "warning", "warning"],
        "{types:?}"
    );
    assert!(events[1]["message"]
        .as_str()
        .expect("unsafe warning")
        .starts_with("Unsafe permissions are active"));
    let message = events[2]["message"].as_str().expect("message");
    assert!(
        message.starts_with("The sandbox enforces less than asked: sandbox workspace-write"),
        "{message}"
    );
    assert!(message.contains("Landlock is off (simulated)"), "{message}");
    assert!(message.contains("fallback refuse"), "{message}");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(result["status"], "error", "{result}");
    assert!(!result["output"]
        .as_str()
        .unwrap_or_default()
        .contains("hi\n"));
}
