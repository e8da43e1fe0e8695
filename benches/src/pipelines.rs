//! The adapters' mapping + serialisation pipelines and the serialise-only baseline, shared by
//! the `adapters` bench and the `icount` example (instruction counts under callgrind).

use std::io::Write;

use adapter_rpc::framing::to_line;
use adapter_rpc::processor::{RpcMapping, SharedMeter, UsageMeter};
use adapter_rpc::wire::{Frame, FrameRef};
use adapter_stream_json::cli::OutputFormat;
use adapter_stream_json::mapping::MappingConfig;
use adapter_stream_json::output::{Frames, Renderer};
use adapter_stream_json::pipeline::{bodies, ZeroFold};
use adapter_stream_json::wire::OutputEvent;
use agent_core::AgentEvent;
use agent_host::turn::Fold;

use crate::CountingSink;

/// The run id of every stream-json line.
pub const RUN_ID: &str = "run_20260101000000_abcdef";

/// stream-json: order → mapping → `Renderer` (stream-json format) → sink: each event lent
/// to the pipeline the way a session's turn lends it, the lines handed to the sink
/// every 64 KiB and at the end (the turn's batching).
pub fn zero_pipeline(events: Vec<AgentEvent>, sink: &CountingSink) {
    let mut pipeline = ZeroFold::new(MappingConfig::default(), None);
    let mut renderer = Renderer::new(
        OutputFormat::StreamJson,
        RUN_ID,
        Box::new(std::io::sink()),
        Box::new(std::io::sink()),
    );
    let mut frames = Frames::new();
    let mut sink = sink.clone();
    for event in &events {
        pipeline
            .map(event, &mut renderer, &mut frames)
            .expect("renders");
        if frames.len_bytes() >= 64 * 1024 {
            sink.write_all(frames.bytes()).expect("sink never fails");
            frames.clear();
        }
    }
    pipeline
        .finish(false, &mut renderer, &mut frames)
        .expect("renders");
    sink.write_all(frames.bytes()).expect("sink never fails");
}

/// The stream-json frames of `events`, for the baseline.
pub fn zero_frames(events: &[AgentEvent]) -> Vec<OutputEvent> {
    bodies(MappingConfig::default(), events.iter().cloned())
        .events
        .into_iter()
        .map(|b| OutputEvent::new(RUN_ID, b))
        .collect()
}

fn rpc_fold() -> Fold<RpcMapping> {
    Fold::new(RpcMapping::new(SharedMeter::new(UsageMeter::new("openai"))))
}

/// zut RPC: the turn fold with its mapping (each event lent, as a session's turn lends it)
/// → line serialiser → sink.
pub fn rpc_pipeline(events: Vec<AgentEvent>, sink: &mut CountingSink) {
    let mut fold = rpc_fold();
    for event in &events {
        fold.feed(event, |event| {
            let line = to_line(&FrameRef::Event(event)).expect("serialisable");
            sink.write_all(&line).expect("sink never fails");
        });
    }
}

/// The zut RPC frames of `events`, for the baseline.
pub fn rpc_frames(events: &[AgentEvent]) -> Vec<Frame> {
    let mut fold = rpc_fold();
    let mut frames = Vec::new();
    for event in events {
        fold.feed(event, |event| frames.push(Frame::Event(event.into_owned())));
    }
    frames
}

/// Serialise-only: each frame with plain serde_json into one reused buffer, then the sink.
pub fn serialise<T: serde::Serialize>(frames: &[T], buf: &mut Vec<u8>, sink: &mut CountingSink) {
    for frame in frames {
        buf.clear();
        serde_json::to_writer(&mut *buf, frame).expect("serialisable");
        buf.push(b'\n');
        sink.write_all(buf).expect("sink never fails");
    }
}
