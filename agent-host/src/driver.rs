//! The turn driver: a [`Run`] to its end, mapped to lines, written in bursts.
//!
//! ```text
//! loop {
//!     wait for the output gate (a client that reads slowly holds the turn here)
//!     take every event already waiting (Run::recv_many, at most MAX_BURST_EVENTS)
//!     map each into the burst's Frames (handed over early past MAX_BATCH_BYTES)
//!     hand the burst to the writer as one message
//! }
//! ```
//!
//! A burst is one message to the writer, which writes and flushes it before it waits, so a
//! delta reaches the output before the turn waits for the next one; nothing is timed. The
//! driver allocates nothing per event: the event buffer lives for the run, and the frames'
//! buffer is swapped with the writer's spare one.

use agent_core::{AgentEvent, Run};

use crate::output::{Encode, Frames, LineSender, MAX_BATCH_BYTES};

/// Most events taken from the run at once.
pub const MAX_BURST_EVENTS: usize = 256;

/// How a [`drive`] ended (always: the run ended).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Events taken from the run.
    pub events: u64,
    /// The output was closed while the run went on: some lines were not written.
    pub output_closed: bool,
}

/// Drives `run` to its end: every event goes through `map`, which appends the lines it maps
/// to (none, one or several) to the burst's [`Frames`]; each burst is sent to `out` as one
/// message. Waits on `out`'s gate before taking more events when too much output is queued.
///
/// `frames` is the buffer of the bursts (its escapes apply to every line); pass the same one
/// for every run of a worker. When the output is closed, the run is still drained to its
/// end (its transcript and side effects complete as usual) and [`Driven::output_closed`] is
/// set; abort the run through its [`agent_core::AbortHandle`] to end it sooner.
pub async fn drive<T, M>(
    run: &mut Run,
    out: &LineSender<T>,
    frames: &mut Frames,
    mut map: M,
) -> Driven
where
    T: Encode,
    M: FnMut(&AgentEvent, &mut Frames),
{
    let mut events = Vec::with_capacity(MAX_BURST_EVENTS);
    let mut driven = Driven::default();
    loop {
        let gate = out.gate();
        if !gate.has_room() {
            gate.ready().await;
        }
        let taken = run.recv_many(&mut events, MAX_BURST_EVENTS).await;
        if taken == 0 {
            break;
        }
        driven.events += taken as u64;
        for event in events.drain(..) {
            map(&event, frames);
            if frames.len_bytes() >= MAX_BATCH_BYTES {
                send(out, frames, &mut driven);
            }
        }
        send(out, frames, &mut driven);
    }
    driven
}

fn send<T: Encode>(out: &LineSender<T>, frames: &mut Frames, driven: &mut Driven) {
    if frames.is_empty() {
        return;
    }
    if out.send_frames(frames).is_err() {
        driven.output_closed = true;
        frames.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backpressure::OutputGate;
    use crate::output::{line_writer, NoMessage};
    use agent_core::Agent;
    use agent_providers::scripted::{ScriptedProvider, Turn};
    use std::sync::Arc;
    use std::time::Duration;

    const WAIT: Duration = Duration::from_secs(20);

    fn agent(deltas: usize) -> Agent {
        let mut turn = Turn::new();
        for i in 0..deltas {
            turn = turn.text(format!("t{i} "));
        }
        Agent::builder(ScriptedProvider::new([turn])).build()
    }

    /// Maps text deltas to `"<delta>"` lines and the end of the run to `"end"`.
    fn map(event: &AgentEvent, frames: &mut Frames) {
        match event {
            AgentEvent::TextDelta { delta } => frames.push(delta.as_str()),
            AgentEvent::RunFinished { .. } => frames.push("end"),
            _ => Ok(()),
        }
        .expect("serialise")
    }

    #[tokio::test]
    async fn a_run_is_mapped_in_order_and_ends_with_the_run() {
        let agent = agent(1000);
        let (out, writer) = line_writer::<NoMessage>(Arc::new(OutputGate::default()));
        let (client, server) = tokio::io::duplex(4096);
        let written = tokio::spawn(writer.run(server));
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut client = client;
            let mut text = String::new();
            client.read_to_string(&mut text).await.map(|_| text)
        });
        let mut run = agent.prompt("go");
        let mut frames = Frames::new();
        let driven = tokio::time::timeout(WAIT, drive(&mut run, &out, &mut frames, map))
            .await
            .expect("drove in time");
        assert!(!driven.output_closed);
        assert!(driven.events > 1000, "{driven:?}");
        drop(out);
        written.await.expect("join").expect("written");
        let text = tokio::time::timeout(WAIT, reader)
            .await
            .expect("read in time")
            .expect("join")
            .expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1001);
        for (i, line) in lines[..1000].iter().enumerate() {
            assert_eq!(*line, format!("\"t{i} \""));
        }
        assert_eq!(lines[1000], "\"end\"");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_gate_holds_the_turn_until_the_writer_catches_up() {
        const LIMIT: usize = 8;
        let agent = agent(3000);
        let gate = Arc::new(OutputGate::new(LIMIT));
        let (out, writer) = line_writer::<NoMessage>(gate.clone());
        let driver = tokio::spawn(async move {
            let mut run = agent.prompt("go");
            let mut frames = Frames::new();
            let driven = drive(&mut run, &out, &mut frames, map).await;
            (driven, out)
        });
        // Nobody writes yet: the turn fills the gate and stops there. Give every task on
        // this one-thread runtime many turns to prove it does not run ahead.
        tokio::time::timeout(WAIT, async {
            while gate.queued() < LIMIT {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the gate filled");
        for _ in 0..10_000 {
            tokio::task::yield_now().await;
        }
        assert!(!driver.is_finished(), "the turn waits for the writer");
        assert!(
            gate.queued() < LIMIT + MAX_BURST_EVENTS,
            "at most one burst past the limit: {}",
            gate.queued()
        );
        // Start writing: the turn goes on to its end.
        let sink = tokio::spawn(writer.run(tokio::io::sink()));
        let (driven, out) = tokio::time::timeout(WAIT, driver)
            .await
            .expect("finished once written")
            .expect("join");
        assert!(!driven.output_closed);
        drop(out);
        sink.await.expect("join").expect("written");
        assert!(gate.high_water() < LIMIT + MAX_BURST_EVENTS);
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn a_closed_output_still_drains_the_run() {
        let agent = agent(100);
        let (out, writer) = line_writer::<NoMessage>(Arc::new(OutputGate::new(1)));
        drop(writer);
        let mut run = agent.prompt("go");
        let mut frames = Frames::new();
        let driven = tokio::time::timeout(WAIT, drive(&mut run, &out, &mut frames, map))
            .await
            .expect("not held by a closed output");
        assert!(driven.output_closed);
        assert!(driven.events > 100);
        assert!(frames.is_empty());
        assert_eq!(
            agent.messages().len(),
            2,
            "the run completed its transcript"
        );
    }
}
