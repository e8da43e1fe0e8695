//! The run: `run_start` (and the unsafe-mode warning), then the agent's events streamed
//! through the [`Pipeline`] in bursts, then the terminal lines.

use std::time::Duration;

use agent_core::{Agent, CancellationToken, UserInput};

use super::finished;
use super::setup::Ready;
use crate::mapping::exit;
use crate::output::Writer;
use crate::pipeline::Pipeline;
use crate::wire::{EventBody, WarningEvent};

/// How long a signalled run may take to wind down before the terminal lines are written
/// anyway.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Most events taken from the run at once.
const MAX_BATCH_EVENTS: usize = 1024;
/// Most bytes queued before stdout is written, when more keep arriving.
const MAX_BATCH_BYTES: usize = 32 * 1024;

/// Starts the run and streams it to `writer`; returns the exit code.
pub(super) async fn run(ready: Ready, mut writer: Writer, interrupt: &CancellationToken) -> i32 {
    let Ready {
        agent,
        input,
        prompt,
        start,
        unsafe_reason,
        mapping,
        mut recorder,
    } = ready;
    if writer.write(&EventBody::RunStart(start)).is_err() {
        return exit::CRASH;
    }
    if let Some(reason) = unsafe_reason {
        let warning = EventBody::Warning(WarningEvent {
            message: format!(
                "Unsafe permissions are active for this run because {reason} was passed."
            ),
        });
        if writer.write(&warning).is_err() {
            return exit::CRASH;
        }
    }
    if let Some(recorder) = &mut recorder {
        recorder.user_message(&prompt);
    }
    let mut pipeline = Pipeline::new(mapping, recorder);
    let code = drive(&agent, input, &mut pipeline, &mut writer, interrupt).await;
    if let Some(failure) = pipeline.recorder().and_then(|r| r.failure()) {
        let _ = writer.stderr_line(&format!(
            "[zero] WARNING: session not fully recorded: {failure}"
        ));
    }
    code
}

/// Streams the run to the writer and writes its terminal lines; returns the exit code.
///
/// Every event already waiting is taken at once and queued, then the queue is flushed: a
/// burst costs one write, and the last line of it is on stdout before the loop waits again.
/// A signal aborts the run; if it has not wound down within [`INTERRUPT_GRACE`], the
/// terminal lines are written anyway.
async fn drive(
    agent: &Agent,
    input: UserInput,
    pipeline: &mut Pipeline,
    w: &mut Writer,
    interrupt: &CancellationToken,
) -> i32 {
    let mut run = agent.prompt(input);
    let mut events = Vec::with_capacity(MAX_BATCH_EVENTS);
    let mut interrupted = false;
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let grace = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let received = tokio::select! {
            biased;
            _ = interrupt.cancelled(), if !interrupted => {
                interrupted = true;
                run.abort();
                deadline = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                continue;
            }
            _ = grace => break,
            n = run.recv_many(&mut events, MAX_BATCH_EVENTS) => n,
        };
        if received == 0 {
            break;
        }
        for event in events.drain(..) {
            let queued =
                pipeline
                    .push(event, w)
                    .and_then(|()| match w.queued_bytes() >= MAX_BATCH_BYTES {
                        true => w.flush(),
                        false => Ok(()),
                    });
            if queued.is_err() {
                run.abort();
                return exit::CRASH;
            }
            if pipeline.is_finished() {
                break;
            }
        }
        if w.flush().is_err() {
            run.abort();
            return exit::CRASH;
        }
        if pipeline.is_finished() {
            break;
        }
    }
    match pipeline.finish(interrupted, w) {
        Ok(code) => code,
        Err(err) => finished(Err(err), exit::CRASH),
    }
}
