//! The run: `run_start` (and the unsafe-mode and skipped-server warnings), the
//! `session_start` hooks, then the agent's events driven through the [`ZeroFold`] by
//! agent-host's turn driver, the `session_end` hooks, then the terminal lines.
//!
//! # Signals
//!
//! SIGINT and SIGTERM are one rule: the run is aborted (tools stop, their process groups
//! are killed), the session records `interrupted`, and the last lines are
//! `error{code:"interrupted"}` then `run_end{status:"interrupted", exitCode:130}`, as in
//! Zero; the process exits 130. A run that does not wind down within five seconds gets its
//! terminal lines anyway. MCP servers are shut down before the process exits.

use std::time::Duration;

use agent_core::{
    hooks::{SessionEnd, SessionEndReason, SessionSource},
    structured::OutputSpec,
    Agent, AgentEvent, CancellationToken, UserInput,
};
use agent_host::driver::drive;

use super::setup::Ready;
use super::{finished, Output};
use crate::mapping::exit;
use crate::pipeline::ZeroFold;
use crate::wire::{EventBody, WarningEvent};

/// How long a signalled run may take to wind down before the terminal lines are written
/// anyway (the `session_end` hooks of an interrupted run get as long).
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Starts the run and streams it to `out`; returns the exit code.
pub(super) async fn run(ready: Ready, out: &mut Output, interrupt: &CancellationToken) -> i32 {
    let Ready {
        agent,
        input,
        prompt,
        start,
        unsafe_reason,
        mapping,
        mut recorder,
        output,
        warnings,
        trust_notice,
        notices,
        has_hooks,
        resumed,
    } = ready;
    for notice in notices.iter().map(String::as_str).chain(trust_notice) {
        let _ = out.renderer.stderr_line(notice);
    }
    // `run_start` is on stdout before the agent starts; if it cannot be written, the agent
    // never runs.
    if out.write(&EventBody::RunStart(start)).is_err() {
        return exit::CRASH;
    }
    let unsafe_warning = unsafe_reason
        .map(|reason| {
            format!("Unsafe permissions are active for this run because {reason} was passed.")
        })
        .into_iter();
    for message in unsafe_warning.chain(warnings) {
        if out
            .write(&EventBody::Warning(WarningEvent { message }))
            .is_err()
        {
            return exit::CRASH;
        }
    }
    if out.stdout.send_and_wait(&mut out.frames).await.is_err() {
        return exit::CRASH;
    }
    if let Some(recorder) = &mut recorder {
        recorder.user_message(&prompt);
    }
    if has_hooks {
        let source = match resumed {
            true => SessionSource::Resume,
            false => SessionSource::Startup,
        };
        // Advisory; a signal does not wait for it.
        tokio::select! {
            biased;
            _ = interrupt.cancelled() => {}
            _ = agent.session_start(source) => {}
        }
    }
    let mut pipeline = ZeroFold::new(mapping, recorder).check_output(output.clone());
    let run = Stream {
        agent: &agent,
        input,
        output,
        has_hooks,
    };
    let code = run.stream(&mut pipeline, out, interrupt).await;
    if let Some(failure) = pipeline.recorder().and_then(|r| r.failure()) {
        let _ = out.renderer.stderr_line(&format!(
            "[zero] WARNING: session not fully recorded: {failure}"
        ));
    }
    code
}

/// One prompt of an agent, to be streamed.
struct Stream<'a> {
    agent: &'a Agent,
    input: UserInput,
    /// `--output-schema`: the run is a structured one.
    output: Option<OutputSpec>,
    /// `session_end` hooks run once the agent is done.
    has_hooks: bool,
}

impl Stream<'_> {
    /// Drives the run to its end through the pipeline and renders its terminal lines;
    /// returns the exit code.
    ///
    /// agent-host's driver takes every event already waiting, maps the burst and hands it
    /// to the line writer as one message, which writes and flushes it before the next burst
    /// is taken. A signal aborts the run; if it has not wound down within
    /// [`INTERRUPT_GRACE`], the terminal lines are written anyway. When stdout fails, the
    /// run is aborted too and the exit is a crash.
    async fn stream(
        self,
        pipeline: &mut ZeroFold,
        out: &mut Output,
        interrupt: &CancellationToken,
    ) -> i32 {
        let agent = self.agent;
        let mut run = match self.output {
            Some(spec) => agent.prompt_structured(self.input, spec),
            None => agent.prompt(self.input),
        };
        let abort = run.abort_handle();
        let Output {
            renderer,
            frames,
            stdout,
        } = out;
        let sender = stdout.sender();
        let mut failed = false;
        let interrupted = {
            let driving = drive(&mut run, sender, frames, |event, frames| {
                if failed {
                    return;
                }
                let delta = matches!(
                    event,
                    AgentEvent::TextDelta { .. } | AgentEvent::ReasoningDelta { .. }
                );
                // A closed stdout is noticed at the next event that is not a delta (a delta
                // has no side effect), or when the run has ended.
                if pipeline.map(event, renderer, frames).is_err() || (!delta && sender.is_closed())
                {
                    failed = true;
                    abort.abort();
                }
            });
            tokio::pin!(driving);
            let interrupted = tokio::select! {
                biased;
                _ = interrupt.cancelled() => true,
                _ = &mut driving => false,
            };
            if interrupted {
                abort.abort();
                let _ = tokio::time::timeout(INTERRUPT_GRACE, &mut driving).await;
            }
            interrupted
        };
        if failed || sender.is_closed() {
            return exit::CRASH;
        }
        if self.has_hooks {
            let mut end = SessionEnd::new(SessionEndReason::Exit);
            end.last_status = pipeline.status();
            let ending = agent.session_end(end);
            match interrupted {
                true => {
                    let _ = tokio::time::timeout(INTERRUPT_GRACE, ending).await;
                }
                false => {
                    ending.await;
                }
            }
        }
        let code = pipeline.finish(interrupted, renderer, frames);
        match code {
            Ok(code) => finished(stdout.send(frames), code),
            Err(_) => exit::CRASH,
        }
    }
}
