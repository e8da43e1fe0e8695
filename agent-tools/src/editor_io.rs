//! The file tools' and `bash`'s side of [`agent_core::editor`]: when the call's context
//! lends the client's text buffers, `read_file`, `write_file`, `edit_file` and
//! `apply_patch` read and write through them (a read sees unsaved changes, a write goes
//! through the editor); when it lends terminals, `bash` runs there. Paths are resolved and
//! confined exactly as for the disk first; what only the disk can answer (a directory, an
//! image, a deletion) still goes to the disk. Without an editor nothing here runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::editor::{EditorFiles, EditorTerminals, ReadText, TerminalCommand, TerminalExit};
use agent_core::permission::{Block, BlockCode, PermissionAction, Risk};
use agent_core::sandbox::SandboxEscalation;
use agent_core::{SideEffect, ToolContext, ToolError, ToolOutput};
use agent_sandbox::{Confinement, Roots, SandboxError};

use crate::bash::{render, sandbox_note, Capture, PROFILE_END, PROFILE_END_PRINTF};

use crate::patch::{Change, FileOp, OpKind};
use crate::workspace::Workspace;

/// The editor's text files, when the call has them.
pub(crate) fn files(ctx: &ToolContext) -> Option<&Arc<dyn EditorFiles>> {
    ctx.editor.files()
}

/// Whether `path` on the disk is an image (`read_file` returns it as one, which a text
/// buffer cannot).
pub(crate) fn is_image_on_disk(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 32];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let n = file.read(&mut head).unwrap_or(0);
    crate::image::sniff_image(&head[..n]).is_some()
}

/// The whole text of `path` as the editor has it.
pub(crate) async fn read_whole(
    files: &Arc<dyn EditorFiles>,
    path: &Path,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    files.read_text(ReadText::whole(path), ctx).await
}

/// The texts of the files `ops` update, as the editor has them, by absolute path (a file
/// the editor cannot read and the disk does not have is left out: planning the patch
/// reports it missing).
pub(crate) async fn patch_sources(
    files: &Arc<dyn EditorFiles>,
    workspace: &Workspace,
    base: &str,
    ops: &[FileOp],
    ctx: &ToolContext,
) -> Result<HashMap<PathBuf, String>, ToolError> {
    let mut texts = HashMap::new();
    for op in ops {
        if !matches!(op.kind, OpKind::Update { .. }) {
            continue;
        }
        let joined = match base {
            "." | "" => op.path.clone(),
            base => format!("{}/{}", base.trim_end_matches('/'), op.path),
        };
        // A path that does not resolve is refused by planning, in its own words.
        let Ok(resolved) = workspace.resolve("apply_patch", &joined) else {
            continue;
        };
        if texts.contains_key(&resolved.path) {
            continue;
        }
        match read_whole(files, &resolved.path, ctx).await {
            Ok(text) => {
                texts.insert(resolved.path, text);
            }
            Err(_) if !resolved.path.exists() => {}
            Err(err) => return Err(err),
        }
    }
    Ok(texts)
}

/// Writes planned patch changes through the editor (a removal, which the editor cannot
/// do, on the disk), in order; a failure restores what was written before it, as far as it
/// can, and names what became of the files.
pub(crate) async fn commit_patch(
    files: &Arc<dyn EditorFiles>,
    changes: &[Change],
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    for (done, change) in changes.iter().enumerate() {
        if let Err(err) = commit_one(files, change, ctx).await {
            let mut restored = true;
            for earlier in changes[..done].iter().rev() {
                restored &= undo(files, earlier, ctx).await;
            }
            let state = match restored {
                true => "nothing was changed",
                false => "the patch was partly applied; read the files before retrying",
            };
            return Err(ToolError::Failed(format!(
                "Error applying patch: writing {} failed: {err}; {state}",
                change.display()
            )));
        }
    }
    Ok(())
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

async fn commit_one(
    files: &Arc<dyn EditorFiles>,
    change: &Change,
    ctx: &ToolContext,
) -> Result<(), String> {
    match change {
        Change::Write { path, contents, .. } => files
            .write_text(path, &text(contents), ctx)
            .await
            .map_err(|e| e.to_string()),
        Change::Remove { path, .. } => std::fs::remove_file(path).map_err(|e| e.to_string()),
    }
}

async fn undo(files: &Arc<dyn EditorFiles>, change: &Change, ctx: &ToolContext) -> bool {
    match change {
        Change::Write {
            path,
            before: Some(before),
            ..
        } => files.write_text(path, &text(before), ctx).await.is_ok(),
        // A file the patch created is emptied (the editor cannot delete it).
        Change::Write {
            path, before: None, ..
        } => std::fs::remove_file(path).is_ok() || files.write_text(path, "", ctx).await.is_ok(),
        Change::Remove { path, before, .. } => std::fs::write(path, before).is_ok(),
    }
}

/// Runs `command` with `bash -lc` in one of the client's terminals, as `bash` runs it
/// itself: in the workspace, with its timeout and output cap, and, when the sandbox policy
/// confines commands, confined the same way through this executable's sandbox launcher
/// ([`crate::launcher`]). `None` when the policy confines commands and this executable
/// cannot launch: then `bash` runs the command itself.
pub(crate) async fn bash_in_terminal(
    terminals: &Arc<dyn EditorTerminals>,
    command: &str,
    roots: &Roots,
    timeout: Duration,
    cap: usize,
    ctx: &ToolContext,
) -> Result<Option<ToolOutput>, ToolError> {
    let confined = ctx.sandbox.policy.confines();
    let line = match confined {
        true => format!("{PROFILE_END_PRINTF}{command}"),
        false => command.to_string(),
    };
    let Some((request, confinement)) = terminal_command(
        "bash",
        vec!["-lc".to_string(), line],
        &roots.workspace,
        roots,
        u64::try_from(cap).ok(),
        timeout,
        ctx,
    )?
    else {
        return Ok(None);
    };
    let run = terminals.run(request, ctx).await?;
    let mut output = match confined {
        true => Capture::with_marker(PROFILE_END, cap),
        false => Capture::new(cap),
    };
    output.push(run.output.as_bytes());
    let mut header = match &run.exit {
        TerminalExit::Code(code) => format!("exit code: {code}"),
        TerminalExit::Signal(signal) => format!("killed by signal {signal}"),
        TerminalExit::TimedOut => format!(
            "timed out after {} ms; the command and its processes were killed",
            timeout.as_millis()
        ),
        TerminalExit::Unknown => "exit status unknown".to_string(),
    };
    let failed = run.exit != TerminalExit::Code(0);
    let mut block = None;
    if confinement.is_confined() {
        if let Some(denial) = confinement.find_denial(&output.command_text(), &roots.workspace) {
            header.push('\n');
            header.push_str(&sandbox_note(&confinement, &denial));
            block = Some(denial.block("bash"));
        }
    }
    match ctx.sandbox.escalation {
        Some(SandboxEscalation::Network) => {
            header.push_str("\n[sandbox] ran with network access (approved by the user)")
        }
        Some(SandboxEscalation::Unsandboxed) => {
            header.push_str("\n[sandbox] ran outside the sandbox (approved by the user)")
        }
        None => {}
    }
    let (body, truncated) = render(&header, &output, &Capture::new(cap), cap);
    let mut result = match failed {
        true => ToolOutput::error(body),
        false => ToolOutput::text(body),
    };
    result.truncated = truncated || run.truncated;
    result.block = block;
    Ok(Some(result))
}

/// `bash` with `args` in an editor terminal, in `cwd`, as the tool `tool` runs its own
/// processes: the pager off and, when the sandbox policy confines commands, confined the
/// same way through this executable's sandbox launcher ([`crate::launcher`]). `None` when
/// the policy confines commands and this executable cannot launch: then the tool runs the
/// command itself.
pub(crate) fn terminal_command(
    tool: &str,
    args: Vec<String>,
    cwd: &Path,
    roots: &Roots,
    output_byte_limit: Option<u64>,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<Option<(TerminalCommand, Confinement)>, ToolError> {
    let policy = &ctx.sandbox.policy;
    let (program, args, confinement) = match policy.confines() {
        true if !crate::launcher::available() => return Ok(None),
        true => {
            let launch = crate::launcher::invocation(&ctx.sandbox, roots, "bash", &args)
                .map_err(|e| sandbox_refusal(tool, &e))?;
            (launch.program, launch.args, launch.confinement)
        }
        false => (
            "bash".to_string(),
            args,
            Confinement::none(policy.mode, policy.network),
        ),
    };
    let env = [
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let command = TerminalCommand {
        program,
        args,
        cwd: cwd.to_path_buf(),
        env,
        output_byte_limit,
        timeout,
    };
    Ok(Some((command, confinement)))
}

/// The sandbox refusing to run anything (a `refuse` fallback), as `tool` reports it.
fn sandbox_refusal(tool: &str, err: &SandboxError) -> ToolError {
    match err {
        SandboxError::Refused { .. } => ToolError::Blocked(Box::new(Block {
            code: BlockCode::Sandbox,
            tool_name: Some(tool.to_string()),
            action: PermissionAction::Deny,
            risk: Risk::for_side_effect(SideEffect::Shell),
            path: None,
            reason: err.to_string(),
            recoverable: false,
        })),
        other => ToolError::Failed(format!("{tool}: {other}")),
    }
}
