//! The run: `run_start` (and the unsafe-mode and skipped-server warnings), then the prompt as
//! the one turn of a standalone host [`Session`] (which runs the `session_start` hooks before
//! it, drives it and folds it), its events rendered through the [`ZeroFold`] by the turn's
//! observer, the `session_end` hooks when the session closes, then the terminal lines.
//!
//! # Signals
//!
//! SIGINT and SIGTERM are one rule: the run is aborted (tools stop, their process groups
//! are killed), the session records `interrupted`, and the last lines are
//! `error{code:"interrupted"}` then `run_end{status:"interrupted", exitCode:130}`, as in
//! Zero; the process exits 130. A run that does not wind down within five seconds gets its
//! terminal lines anyway. MCP servers are shut down before the process exits.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_core::{
    hooks::{SessionEndReason, SessionSource},
    AgentEvent, CancellationToken,
};
use agent_host::backpressure::OutputGate;
use agent_host::output::MAX_BATCH_BYTES;
use agent_host::session::{MemoryStorage, Session, TurnInfo, TurnObserver, TurnOutcome};
use agent_mcp::McpManager;
use tokio::sync::oneshot;

use super::setup::Ready;
use super::{finished, Output};
use crate::mapping::exit;
use crate::pipeline::ZeroFold;
use crate::wire::{EventBody, WarningEvent};

/// How long a signalled run may take to wind down before the terminal lines are written
/// anyway (the `session_end` hooks of an interrupted run get as long).
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Starts the run and streams it to `out`; returns the exit code and `out`.
pub(super) async fn run(
    ready: Ready,
    mcp: McpManager,
    mut out: Output,
    interrupt: &CancellationToken,
) -> (i32, Output) {
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
        resumed,
    } = ready;
    for notice in notices.iter().map(String::as_str).chain(trust_notice) {
        let _ = out.renderer.stderr_line(notice);
    }
    // `run_start` is on stdout before the agent starts; if it cannot be written, the agent
    // never runs.
    let cwd = start.cwd.clone();
    if out.write(&EventBody::RunStart(start)).is_err() {
        return (exit::CRASH, out);
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
            return (exit::CRASH, out);
        }
    }
    if out.stdout.send_and_wait(&mut out.frames).await.is_err() {
        return (exit::CRASH, out);
    }
    if let Some(recorder) = &mut recorder {
        recorder.user_message(&prompt);
    }
    // The session's own metadata is not kept: Zero's session is what the recorder writes.
    let session = Session::standalone(agent, &cwd, Arc::new(MemoryStorage::new()), mcp);
    let (done, ended) = oneshot::channel();
    let gate = out.stdout.sender().gate().clone();
    let slot: Slot = Arc::new(Mutex::new(Some(Streaming {
        pipeline: ZeroFold::new(mapping, recorder).check_output(output.clone()),
        out,
        failed: false,
    })));
    let observer = Box::new(ExecTurn {
        slot: slot.clone(),
        gate,
        done: Some(done),
    });
    // A fresh standalone session takes its first turn.
    let queued = match output {
        Some(spec) => session.enqueue_structured(input, spec, observer),
        None => session.enqueue_prompt(input, None, observer),
    };
    let interrupted = match queued {
        Ok(_) => drive(&session, ended, resumed, interrupt).await,
        Err(_) => return (exit::CRASH, take(&slot).out),
    };
    let Streaming {
        mut pipeline,
        mut out,
        failed,
    } = take(&slot);
    if failed || out.stdout.sender().is_closed() {
        return (exit::CRASH, out);
    }
    // The `session_end` hooks (and the MCP servers' shutdown).
    let closing = session.close(SessionEndReason::Exit);
    match interrupted {
        true => {
            let _ = tokio::time::timeout(INTERRUPT_GRACE, closing).await;
        }
        false => {
            closing.await;
        }
    }
    let Output {
        renderer,
        frames,
        stdout,
    } = &mut out;
    let code = match pipeline.finish(interrupted, renderer, frames) {
        Ok(code) => finished(stdout.send(frames), code),
        Err(_) => exit::CRASH,
    };
    if let Some(failure) = pipeline.recorder().and_then(|r| r.failure()) {
        let _ = out.renderer.stderr_line(&format!(
            "[zero] WARNING: session not fully recorded: {failure}"
        ));
    }
    (code, out)
}

/// Runs the `session_start` hooks, which let the queued turn start, and waits for the turn
/// to end (`ended`); returns whether a signal interrupted it. A signal aborts the turn
/// (also while the hooks run: they are advisory, a signal does not wait for them); if it
/// has not wound down within [`INTERRUPT_GRACE`], the terminal lines are written anyway.
async fn drive(
    session: &Arc<Session>,
    mut ended: oneshot::Receiver<()>,
    resumed: bool,
    interrupt: &CancellationToken,
) -> bool {
    let source = match resumed {
        true => SessionSource::Resume,
        false => SessionSource::Startup,
    };
    tokio::select! {
        biased;
        _ = interrupt.cancelled() => {}
        _ = session.begin(source) => {}
    }
    let interrupted = tokio::select! {
        biased;
        _ = interrupt.cancelled() => true,
        _ = &mut ended => false,
    };
    if interrupted {
        session.abort_current();
        let _ = tokio::time::timeout(INTERRUPT_GRACE, &mut ended).await;
    }
    interrupted
}

/// What the turn renders into while it goes on; exec takes it back when the turn ended, or
/// when an interrupted turn did not wind down in time (the observer then renders nothing
/// more).
struct Streaming {
    pipeline: ZeroFold,
    out: Output,
    /// Stdout failed: the turn was stopped, the exit is a crash.
    failed: bool,
}

type Slot = Arc<Mutex<Option<Streaming>>>;

fn lock(slot: &Slot) -> MutexGuard<'_, Option<Streaming>> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes the turn's output back (only exec takes it, once).
fn take(slot: &Slot) -> Streaming {
    match lock(slot).take() {
        Some(streaming) => streaming,
        None => unreachable!("exec takes the turn's output once"),
    }
}

/// The run's turn as exec shows it: every event through the [`ZeroFold`], the lines handed
/// to stdout's writer in bursts (the session flushes before every wait: for the next
/// events, for the writer). It holds nothing against the gate (the default
/// [`TurnObserver::held`]): its one burst is handed over before every wait, so the writer
/// has at most one queued, its gate's limit.
struct ExecTurn {
    slot: Slot,
    /// Stdout's gate: it admits one burst, so a client that stops reading stalls the run.
    gate: Arc<OutputGate>,
    /// Fired when the turn ended.
    done: Option<oneshot::Sender<()>>,
}

impl TurnObserver for ExecTurn {
    fn started(&mut self, _session: &Session, _turn: &TurnInfo) {}

    fn event(&mut self, session: &Session, _turn: &TurnInfo, event: &AgentEvent) {
        let mut slot = lock(&self.slot);
        let Some(streaming) = slot.as_mut().filter(|s| !s.failed) else {
            return;
        };
        let delta = matches!(
            event,
            AgentEvent::TextDelta { .. } | AgentEvent::ReasoningDelta { .. }
        );
        let Output {
            renderer,
            frames,
            stdout,
        } = &mut streaming.out;
        // A closed stdout is noticed at the next event that is not a delta (a delta has no
        // side effect), or when the run has ended. A large burst is handed over early.
        let mapped = streaming.pipeline.map(event, renderer, frames).is_ok()
            && (frames.len_bytes() < MAX_BATCH_BYTES || stdout.send(frames).is_ok());
        if !mapped || (!delta && stdout.sender().is_closed()) {
            streaming.failed = true;
            session.stop();
        }
    }

    fn finished(&mut self, _session: &Session, _turn: &TurnInfo, _outcome: &TurnOutcome) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }

    fn flush(&mut self) {
        let mut slot = lock(&self.slot);
        if let Some(streaming) = slot.as_mut().filter(|s| !s.out.frames.is_empty()) {
            // A failed write shows as a closed stdout at the next event.
            let _ = streaming.out.stdout.send(&mut streaming.out.frames);
        }
    }

    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        Some(self.gate.clone())
    }
}
