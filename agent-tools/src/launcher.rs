//! The sandbox launcher: how a command that another program starts (a client editor's
//! terminal) is confined by the agent's OS sandbox all the same.
//!
//! A binary that can launch calls [`run_if_launched`] first thing in `main`. Started as
//! `<binary> __agent-sandbox-exec <spec> -- <program> <args>…`, it applies the sandbox of
//! `<spec>` (the policy, what the kernel supports, the writable roots) to itself, exactly
//! as `bash` confines its own children (Landlock, seccomp, its own process group,
//! `$TMPDIR`), and then becomes the program (`exec`): nothing of the launcher stays
//! around, the editor's terminal runs the confined command under the launcher's pid. Any
//! other start returns at once, noting that this executable can launch ([`available`]).
//! [`invocation`] builds the command line.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::sandbox::{SandboxContext, SandboxPolicy, SandboxSupport};
use agent_sandbox::{Confinement, Roots, SandboxError};
use serde::{Deserialize, Serialize};

/// The first argument of a launcher's command line.
pub const LAUNCH_ARG: &str = "__agent-sandbox-exec";

/// [`run_if_launched`] ran in this process (so its executable can launch).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// What a launcher is told: the sandbox and its roots.
#[derive(Debug, Serialize, Deserialize)]
struct Spec {
    policy: SandboxPolicy,
    support: Option<SandboxSupport>,
    workspace: PathBuf,
    extra: Vec<PathBuf>,
    tmp: Option<PathBuf>,
}

/// When the process was started as a launcher (`argv[1]` is [`LAUNCH_ARG`]): confines it
/// and executes the command, never returning (an error is printed to stderr and the exit
/// code is 126). Otherwise notes that this executable can launch and returns.
pub fn run_if_launched() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(LAUNCH_ARG)) {
        ENABLED.store(true, Ordering::Release);
        return;
    }
    let error = launch(args.collect());
    eprintln!("agent-sandbox launcher: {error}");
    std::process::exit(126);
}

/// Confines this process and becomes the command; returns only on failure.
fn launch(args: Vec<std::ffi::OsString>) -> String {
    let [spec, dashes, program, rest @ ..] = args.as_slice() else {
        return format!("usage: {LAUNCH_ARG} <spec> -- <program> [args…]");
    };
    if dashes != "--" {
        return format!("usage: {LAUNCH_ARG} <spec> -- <program> [args…]");
    }
    let spec: Spec = match serde_json::from_str(&spec.to_string_lossy()) {
        Ok(spec) => spec,
        Err(err) => return format!("invalid sandbox spec: {err}"),
    };
    let (sandbox, roots) = spec.into_parts();
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest);
    if let Err(err) = agent_sandbox::prepare_std(&mut cmd, &sandbox, &roots) {
        return err.to_string();
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        format!("cannot run {}: {}", program.to_string_lossy(), cmd.exec())
    }
    #[cfg(not(unix))]
    {
        format!(
            "cannot run {}: not supported here",
            program.to_string_lossy()
        )
    }
}

impl Spec {
    fn into_parts(self) -> (SandboxContext, Roots) {
        let mut sandbox = SandboxContext::new(self.policy);
        sandbox.support = self.support;
        let roots = Roots {
            workspace: self.workspace,
            extra: self.extra,
            tmp: self.tmp,
        };
        (sandbox, roots)
    }
}

/// Whether this process's executable can launch (its `main` called [`run_if_launched`]).
pub fn available() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// A confined command line: the program, its arguments, and the confinement it gets.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program to start (this executable).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// What confines the command (for reading its refusals).
    pub confinement: Confinement,
}

/// The command line that runs `program args` under `sandbox` (with `roots`) through this
/// executable as the launcher ([`available`] says whether it can). Fails as the sandbox
/// would (a `refuse` fallback on a kernel that cannot enforce the policy).
pub fn invocation(
    sandbox: &SandboxContext,
    roots: &Roots,
    program: &str,
    args: &[String],
) -> Result<Launch, SandboxError> {
    // What the launcher will apply, worked out here as it will be there (nothing runs).
    let confinement =
        agent_sandbox::prepare_std(&mut std::process::Command::new(program), sandbox, roots)?;
    let exe = std::env::current_exe().map_err(|e| SandboxError::Setup {
        context: "finding this executable for the sandbox launcher".to_string(),
        message: e.to_string(),
    })?;
    let spec = Spec {
        policy: sandbox.policy.clone(),
        support: sandbox.support.clone(),
        workspace: roots.workspace.clone(),
        extra: roots.extra.clone(),
        tmp: roots.tmp.clone(),
    };
    let spec = serde_json::to_string(&spec).map_err(|e| SandboxError::Setup {
        context: "writing the sandbox launcher's spec".to_string(),
        message: e.to_string(),
    })?;
    let mut launch_args = vec![
        LAUNCH_ARG.to_string(),
        spec,
        "--".to_string(),
        program.to_string(),
    ];
    launch_args.extend(args.iter().cloned());
    Ok(Launch {
        program: exe.to_string_lossy().into_owned(),
        args: launch_args,
        confinement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_round_trips_through_the_command_line() {
        let sandbox = SandboxContext::new(SandboxPolicy::workspace_write());
        let roots = Roots::new("/ws").extra_root("/extra").tmp("/tmp/x");
        let launch = invocation(&sandbox, &roots, "bash", &["-lc".into(), "true".into()])
            .expect("invocation");
        assert_eq!(launch.args[0], LAUNCH_ARG);
        assert_eq!(&launch.args[2..], ["--", "bash", "-lc", "true"]);
        let spec: Spec = serde_json::from_str(&launch.args[1]).expect("spec");
        let (back, back_roots) = spec.into_parts();
        assert_eq!(back.policy, sandbox.policy);
        assert_eq!(back_roots, roots);
    }
}
