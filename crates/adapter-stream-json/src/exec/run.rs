//! The run: `run_start` (and the unsafe-mode warning), then the agent's events driven
//! through the [`Pipeline`] by agent-host's turn driver, then the terminal lines.

use std::time::Duration;

use agent_core::{Agent, AgentEvent, CancellationToken, UserInput};
use agent_host::driver::drive;

use super::setup::Ready;
use super::{finished, Output};
use crate::mapping::exit;
use crate::pipeline::Pipeline;
use crate::wire::{EventBody, WarningEvent};

/// How long a signalled run may take to wind down before the terminal lines are written
/// anyway.
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
    } = ready;
    // `run_start` is on stdout before the agent starts; if it cannot be written, the agent
    // never runs.
    if out.write(&EventBody::RunStart(start)).is_err() {
        return exit::CRASH;
    }
    if let Some(reason) = unsafe_reason {
        let warning = EventBody::Warning(WarningEvent {
            message: format!(
                "Unsafe permissions are active for this run because {reason} was passed."
            ),
        });
        if out.write(&warning).is_err() {
            return exit::CRASH;
        }
    }
    if out.stdout.send_and_wait(&mut out.frames).await.is_err() {
        return exit::CRASH;
    }
    if let Some(recorder) = &mut recorder {
        recorder.user_message(&prompt);
    }
    let mut pipeline = Pipeline::new(mapping, recorder);
    let code = stream(&agent, input, &mut pipeline, out, interrupt).await;
    if let Some(failure) = pipeline.recorder().and_then(|r| r.failure()) {
        let _ = out.renderer.stderr_line(&format!(
            "[zero] WARNING: session not fully recorded: {failure}"
        ));
    }
    code
}

/// Drives the run to its end through the pipeline and renders its terminal lines; returns
/// the exit code.
///
/// agent-host's driver takes every event already waiting, maps the burst and hands it to the
/// line writer as one message, which writes and flushes it before the next burst is taken. A
/// signal aborts the run; if it has not wound down within [`INTERRUPT_GRACE`], the terminal
/// lines are written anyway. When stdout fails, the run is aborted too and the exit is a
/// crash.
async fn stream(
    agent: &Agent,
    input: UserInput,
    pipeline: &mut Pipeline,
    out: &mut Output,
    interrupt: &CancellationToken,
) -> i32 {
    let mut run = agent.prompt(input);
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
            // A closed stdout is noticed at the next event that is not a delta (a delta has
            // no side effect), or when the run has ended.
            if pipeline.map(event, renderer, frames).is_err() || (!delta && sender.is_closed()) {
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
    let code = pipeline.finish(interrupted, renderer, frames);
    match code {
        Ok(code) => finished(stdout.send(frames), code),
        Err(_) => exit::CRASH,
    }
}
