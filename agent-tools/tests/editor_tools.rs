//! The file tools, `bash` and `exec_command` with a client's editor lent to them
//! (`agent_core::editor`): reads see the editor's buffers, writes go to the editor and not to
//! the disk, `bash` runs in the editor's terminal and `exec_command` keeps one across calls,
//! an editor that fails is the call's error, and without an editor nothing changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::editor::{
    Editor, EditorFiles, EditorTerminals, LiveTerminal, ReadText, TerminalCommand, TerminalExit,
    TerminalOutput, TerminalRun,
};
use agent_core::sandbox::{SandboxContext, SandboxPolicy};
use agent_core::{async_trait, ToolContext, ToolError, ToolOutput};
use agent_tools::ToolSet;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

/// An editor holding buffers in memory; records every request.
#[derive(Default)]
struct Buffers {
    texts: Mutex<HashMap<PathBuf, String>>,
    reads: Mutex<Vec<ReadText>>,
    fail: Option<String>,
}

impl Buffers {
    fn with(path: &Path, text: &str) -> Arc<Self> {
        let buffers = Self::default();
        buffers.set(path, text);
        Arc::new(buffers)
    }

    fn set(&self, path: &Path, text: &str) {
        self.texts
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), text.to_string());
    }

    fn get(&self, path: &Path) -> Option<String> {
        self.texts.lock().unwrap().get(path).cloned()
    }
}

#[async_trait]
impl EditorFiles for Buffers {
    async fn read_text(&self, request: ReadText, _ctx: &ToolContext) -> Result<String, ToolError> {
        self.reads.lock().unwrap().push(request.clone());
        if let Some(why) = &self.fail {
            return Err(ToolError::Failed(why.clone()));
        }
        let text = self.get(&request.path).ok_or_else(|| {
            ToolError::Failed(format!("file not found: {}", request.path.display()))
        })?;
        let from = request.line.unwrap_or(1).max(1) as usize - 1;
        let take = request.limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(from).take(take).collect())
    }

    async fn write_text(
        &self,
        path: &Path,
        content: &str,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        if let Some(why) = &self.fail {
            return Err(ToolError::Failed(why.clone()));
        }
        self.set(path, content);
        Ok(())
    }
}

/// A terminal that records the command and answers with a canned run.
struct Terminal {
    seen: Mutex<Vec<TerminalCommand>>,
    answer: TerminalRun,
}

#[async_trait]
impl EditorTerminals for Terminal {
    async fn run(
        &self,
        command: TerminalCommand,
        _ctx: &ToolContext,
    ) -> Result<TerminalRun, ToolError> {
        self.seen.lock().unwrap().push(command);
        Ok(self.answer.clone())
    }
}

fn setup() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().unwrap();
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

fn ctx(ws: &Path, editor: Editor) -> ToolContext {
    let mut ctx = ToolContext::new(ws);
    ctx.call_id = "call_1".into();
    ctx.editor = editor;
    ctx
}

async fn call(
    tools: &ToolSet,
    name: &str,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    tokio::time::timeout(LIMIT, tools.get(name).unwrap().call(args, ctx))
        .await
        .expect("the call finishes")
}

fn text(output: &ToolOutput) -> String {
    output.text_content()
}

#[tokio::test]
async fn read_file_sees_the_buffer_not_the_disk() {
    let (dir, tools) = setup();
    let path = dir.path().join("a.txt");
    std::fs::write(&path, "on disk\n").unwrap();
    let buffers = Buffers::with(&path, "unsaved one\nunsaved two\nunsaved three\n");
    let editor = Editor::none().with_files(buffers.clone());
    let output = call(
        &tools,
        "read_file",
        json!({"path": "a.txt"}),
        ctx(dir.path(), editor.clone()),
    )
    .await
    .expect("read");
    let shown = text(&output);
    assert!(shown.contains("     1\tunsaved one"), "{shown}");
    assert!(!shown.contains("on disk"), "{shown}");
    // An absolute path; line and limit only when asked (one line more, to tell the rest).
    let asked = buffers.reads.lock().unwrap()[0].clone();
    assert_eq!(asked, ReadText::whole(&path));
    let output = call(
        &tools,
        "read_file",
        json!({"path": "a.txt", "offset": 2, "limit": 1}),
        ctx(dir.path(), editor),
    )
    .await
    .expect("read a page");
    let shown = text(&output);
    assert!(shown.starts_with("     2\tunsaved two\n"), "{shown}");
    assert!(shown.contains("more lines follow: use offset=3"), "{shown}");
    let asked = buffers.reads.lock().unwrap()[1].clone();
    assert_eq!((asked.line, asked.limit), (Some(2), Some(2)));
}

#[tokio::test]
async fn writes_and_edits_go_to_the_editor_not_to_the_disk() {
    let (dir, tools) = setup();
    let buffers = Arc::new(Buffers::default());
    let editor = Editor::none().with_files(buffers.clone());
    let path = dir.path().join("new.txt");
    let output = call(
        &tools,
        "write_file",
        json!({"path": "new.txt", "content": "alpha\nbeta\n"}),
        ctx(dir.path(), editor.clone()),
    )
    .await
    .expect("write");
    assert!(
        text(&output).starts_with("Created new.txt"),
        "{}",
        text(&output)
    );
    assert_eq!(output.changed_files, ["new.txt"]);
    assert!(!path.exists(), "nothing was written to the disk");
    assert_eq!(buffers.get(&path).as_deref(), Some("alpha\nbeta\n"));

    let output = call(
        &tools,
        "edit_file",
        json!({"path": "new.txt", "old_string": "beta", "new_string": "gamma"}),
        ctx(dir.path(), editor.clone()),
    )
    .await
    .expect("edit");
    assert!(text(&output).contains("-beta\n+gamma"), "{}", text(&output));
    assert_eq!(buffers.get(&path).as_deref(), Some("alpha\ngamma\n"));
    assert!(!path.exists());

    let patch = "*** Begin Patch\n*** Update File: new.txt\n@@\n alpha\n-gamma\n+delta\n*** Add File: added.txt\n+fresh\n*** End Patch";
    let output = call(
        &tools,
        "apply_patch",
        json!({"patch": patch}),
        ctx(dir.path(), editor),
    )
    .await
    .expect("patch");
    assert!(!output.is_error, "{}", text(&output));
    assert_eq!(buffers.get(&path).as_deref(), Some("alpha\ndelta\n"));
    assert_eq!(
        buffers.get(&dir.path().join("added.txt")).as_deref(),
        Some("fresh\n")
    );
    assert!(!dir.path().join("added.txt").exists());
}

#[tokio::test]
async fn an_editor_that_fails_is_the_calls_error_and_confinement_still_holds() {
    let (dir, tools) = setup();
    let buffers = Arc::new(Buffers {
        fail: Some("the editor refused: permission denied".into()),
        ..Buffers::default()
    });
    let editor = Editor::none().with_files(buffers.clone());
    let err = call(
        &tools,
        "read_file",
        json!({"path": "x.txt"}),
        ctx(dir.path(), editor.clone()),
    )
    .await
    .expect_err("fails");
    assert!(err.to_string().contains("the editor refused"), "{err}");
    let err = call(
        &tools,
        "write_file",
        json!({"path": "../outside.txt", "content": "x"}),
        ctx(dir.path(), editor),
    )
    .await
    .expect_err("outside the workspace");
    assert!(matches!(err, ToolError::Blocked(_)), "{err:?}");
    assert!(
        buffers.reads.lock().unwrap().len() == 1,
        "the escape never reached the editor"
    );
}

#[tokio::test]
async fn bash_runs_in_the_editors_terminal_when_the_sandbox_is_off() {
    let (dir, tools) = setup();
    let terminal = Arc::new(Terminal {
        seen: Mutex::default(),
        answer: TerminalRun {
            output: "hi from the terminal\n".into(),
            truncated: false,
            exit: TerminalExit::Code(0),
        },
    });
    let mut ctx = ctx(dir.path(), Editor::none().with_terminals(terminal.clone()));
    ctx.sandbox = SandboxContext::new(SandboxPolicy::off());
    let output = call(
        &tools,
        "bash",
        json!({"command": "echo hi", "timeout_ms": 5000}),
        ctx,
    )
    .await
    .expect("bash");
    assert!(!output.is_error);
    let shown = text(&output);
    assert!(shown.starts_with("exit code: 0"), "{shown}");
    assert!(shown.contains("hi from the terminal"), "{shown}");
    let seen = terminal.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].program, "bash");
    assert_eq!(seen[0].args, ["-lc", "echo hi"]);
    assert_eq!(seen[0].cwd, dir.path());
    assert_eq!(seen[0].timeout, Duration::from_millis(5000));
    assert!(seen[0].output_byte_limit.is_some());
    assert!(seen[0].env.iter().any(|(k, v)| k == "PAGER" && v == "cat"));
}

#[tokio::test]
async fn a_failed_command_in_the_terminal_is_an_error_result() {
    let (dir, tools) = setup();
    let terminal = Arc::new(Terminal {
        seen: Mutex::default(),
        answer: TerminalRun {
            output: "boom\n".into(),
            truncated: true,
            exit: TerminalExit::Code(3),
        },
    });
    let mut ctx = ctx(dir.path(), Editor::none().with_terminals(terminal));
    ctx.sandbox = SandboxContext::new(SandboxPolicy::off());
    let output = call(&tools, "bash", json!({"command": "false"}), ctx)
        .await
        .expect("bash");
    assert!(output.is_error);
    assert!(output.truncated);
    assert!(
        text(&output).starts_with("exit code: 3"),
        "{}",
        text(&output)
    );
}

#[tokio::test]
async fn a_confining_sandbox_without_a_launcher_keeps_bash_local() {
    let (dir, tools) = setup();
    let terminal = Arc::new(Terminal {
        seen: Mutex::default(),
        answer: TerminalRun {
            output: String::new(),
            truncated: false,
            exit: TerminalExit::Code(0),
        },
    });
    let mut ctx = ctx(dir.path(), Editor::none().with_terminals(terminal.clone()));
    ctx.sandbox = SandboxContext::new(SandboxPolicy::workspace_write());
    // This test binary never called `launcher::run_if_launched`.
    assert!(!agent_tools::launcher::available());
    let output = call(&tools, "bash", json!({"command": "echo local"}), ctx)
        .await
        .expect("bash");
    assert!(text(&output).contains("local"), "{}", text(&output));
    assert!(
        terminal.seen.lock().unwrap().is_empty(),
        "not in the editor's terminal"
    );
}

/// An editor whose terminals are real processes (standard input closed, as an editor's
/// terminal takes none): what each was started with, and the calls it was shown in.
#[derive(Default)]
struct Processes {
    started: Mutex<Vec<TerminalCommand>>,
    shown: Arc<Mutex<Vec<String>>>,
    killed: Arc<Mutex<usize>>,
}

/// One of [`Processes`]' terminals.
struct Process {
    child: tokio::sync::Mutex<tokio::process::Child>,
    output: Arc<Mutex<String>>,
    /// Reads the output until the command's end.
    reader: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    exit: Mutex<Option<TerminalExit>>,
    shown: Arc<Mutex<Vec<String>>>,
    killed: Arc<Mutex<usize>>,
}

#[async_trait]
impl EditorTerminals for Processes {
    async fn run(&self, _: TerminalCommand, _: &ToolContext) -> Result<TerminalRun, ToolError> {
        Err(ToolError::Failed("this editor only keeps terminals".into()))
    }

    async fn start(
        &self,
        command: TerminalCommand,
        ctx: &ToolContext,
    ) -> Result<Option<Box<dyn LiveTerminal>>, ToolError> {
        use tokio::io::AsyncReadExt;
        self.started.lock().unwrap().push(command.clone());
        let mut child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            .current_dir(&command.cwd)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let output = Arc::new(Mutex::new(String::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = output.clone();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf).await {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        self.shown.lock().unwrap().push(ctx.call_id.clone());
        Ok(Some(Box::new(Process {
            child: tokio::sync::Mutex::new(child),
            output,
            reader: tokio::sync::Mutex::new(Some(reader)),
            exit: Mutex::default(),
            shown: self.shown.clone(),
            killed: self.killed.clone(),
        })))
    }
}

#[async_trait]
impl LiveTerminal for Process {
    async fn show(&self, ctx: &ToolContext) {
        self.shown.lock().unwrap().push(ctx.call_id.clone());
    }

    async fn wait(
        &self,
        within: Duration,
        _: &ToolContext,
    ) -> Result<Option<TerminalExit>, ToolError> {
        let mut child = self.child.lock().await;
        let Ok(status) = tokio::time::timeout(within, child.wait()).await else {
            return Ok(None);
        };
        let status = status.map_err(|e| ToolError::Failed(e.to_string()))?;
        // As an editor's terminal, all the command printed is shown once it has ended.
        if let Some(reader) = self.reader.lock().await.take() {
            let _ = tokio::time::timeout(LIMIT, reader).await;
        }
        let exit = match status.code() {
            Some(code) => TerminalExit::Code(code as u32),
            None => TerminalExit::Signal("SIGKILL".into()),
        };
        *self.exit.lock().unwrap() = Some(exit.clone());
        Ok(Some(exit))
    }

    async fn output(&self) -> Result<TerminalOutput, ToolError> {
        Ok(TerminalOutput {
            output: self.output.lock().unwrap().clone(),
            truncated: false,
            exit: self.exit.lock().unwrap().clone(),
        })
    }

    async fn kill(&self) -> Result<(), ToolError> {
        *self.killed.lock().unwrap() += 1;
        let _ = self.child.lock().await.start_kill();
        Ok(())
    }
}

#[cfg(unix)]
#[tokio::test]
async fn exec_command_keeps_its_command_in_the_editors_terminal_and_write_stdin_feeds_it() {
    let (dir, tools) = setup();
    let editor = Arc::new(Processes::default());
    let ctx_of = |call: &str| {
        let mut ctx = ctx(dir.path(), Editor::none().with_terminals(editor.clone()));
        ctx.sandbox = SandboxContext::new(SandboxPolicy::off());
        ctx.call_id = call.into();
        ctx
    };
    let started = call(
        &tools,
        "exec_command",
        json!({"cmd": "echo ready; read line; echo got:$line", "yield_time_ms": 250}),
        ctx_of("call_exec"),
    )
    .await
    .expect("exec_command");
    let shown = text(&started);
    assert!(
        shown.contains("ready") && shown.contains("session_id: 1"),
        "{shown}"
    );
    {
        let seen = editor.started.lock().unwrap();
        assert_eq!(seen.len(), 1, "one terminal, started in the editor");
        assert_eq!(seen[0].program, "bash");
        assert_eq!(seen[0].args[0], "-c");
        assert!(
            seen[0].args[1].starts_with("{ exec 0<"),
            "{:?}",
            seen[0].args
        );
        assert_eq!(seen[0].cwd, dir.path());
    }
    // The input goes through the session's pipe, and the command's end is reported.
    let fed = call(
        &tools,
        "write_stdin",
        json!({"session_id": 1, "chars": "hi\n", "yield_time_ms": 10000}),
        ctx_of("call_stdin"),
    )
    .await
    .expect("write_stdin");
    let shown = text(&fed);
    assert!(
        shown.contains("got:hi") && shown.contains("exit_code: 0"),
        "{shown}"
    );
    assert!(!shown.contains("ready"), "only what is new: {shown}");
    assert_eq!(*editor.shown.lock().unwrap(), ["call_exec", "call_stdin"]);
    // "\u0003" kills a command in the editor's terminal.
    call(
        &tools,
        "exec_command",
        json!({"cmd": "sleep 30", "yield_time_ms": 250}),
        ctx_of("call_sleep"),
    )
    .await
    .expect("exec_command");
    let stopped = call(
        &tools,
        "write_stdin",
        json!({"session_id": 2, "chars": "\u{3}", "yield_time_ms": 10000}),
        ctx_of("call_stop"),
    )
    .await
    .expect("write_stdin");
    assert!(
        text(&stopped).contains("interrupted: true"),
        "{}",
        text(&stopped)
    );
    assert_eq!(*editor.killed.lock().unwrap(), 1);
    // `tty: false` asks for pipes, which an editor's terminal is not: it runs here.
    let piped = call(
        &tools,
        "exec_command",
        json!({"cmd": "echo piped", "tty": false, "yield_time_ms": 5000}),
        ctx_of("call_piped"),
    )
    .await
    .expect("exec_command");
    assert!(text(&piped).contains("piped"), "{}", text(&piped));
    assert_eq!(
        editor.started.lock().unwrap().len(),
        2,
        "no terminal for tty: false"
    );
}
