//! The adapters' mapping + serialisation pipelines and the serialise-only baseline, shared by
//! the `adapters` bench and the `icount` example (instruction counts under callgrind).

use std::io::Write;

use adapter_rpc::framing::to_line;
use adapter_rpc::processor::{EventProcessor as RpcProcessor, SharedMeter, UsageMeter};
use adapter_rpc::wire::Frame;
use adapter_stream_json::cli::OutputFormat;
use adapter_stream_json::mapping::{Mapper, MapperConfig};
use adapter_stream_json::order::ZeroOrder;
use adapter_stream_json::output::Writer;
use adapter_stream_json::pipeline::Pipeline;
use adapter_stream_json::wire::OutputEvent;
use agent_core::AgentEvent;

use crate::CountingSink;

/// The run id of every stream-json line.
pub const RUN_ID: &str = "run_20260101000000_abcdef";

/// stream-json: order → mapping → `Writer` (stream-json format) → sink, queued and flushed
/// the way `exec` does when events arrive faster than they are written (every 32 KiB, and at
/// the end).
pub fn zero_pipeline(events: Vec<AgentEvent>, sink: &CountingSink) {
    let mut pipeline = Pipeline::new(MapperConfig::default(), None);
    let mut writer = Writer::new(
        OutputFormat::StreamJson,
        RUN_ID,
        Box::new(sink.clone()),
        Box::new(std::io::sink()),
        "auto",
    );
    for event in events {
        pipeline.push(event, &mut writer).expect("sink never fails");
        if writer.queued_bytes() >= 32 * 1024 {
            writer.flush().expect("sink never fails");
        }
    }
    pipeline
        .finish(false, &mut writer)
        .expect("sink never fails");
    writer.flush().expect("sink never fails");
}

/// The stream-json frames of `events`, for the baseline.
pub fn zero_frames(events: &[AgentEvent]) -> Vec<OutputEvent> {
    let mut order = ZeroOrder::new();
    let mut mapper = Mapper::new(MapperConfig::default());
    let mut ordered = Vec::new();
    let mut bodies = Vec::new();
    for event in events.iter().cloned() {
        order.push(event, &mut ordered);
    }
    order.finish(&mut ordered);
    for event in ordered {
        mapper.map(event, &mut bodies);
    }
    bodies.extend(mapper.outcome(false).terminal().events);
    bodies
        .into_iter()
        .map(|b| OutputEvent::new(RUN_ID, b))
        .collect()
}

/// zut RPC: processor → line serialiser → sink.
pub fn rpc_pipeline(events: Vec<AgentEvent>, sink: &mut CountingSink) {
    let mut processor = RpcProcessor::new(SharedMeter::new(UsageMeter::new("openai")));
    for event in events {
        if let Some(event) = processor.process(event) {
            let line = to_line(&Frame::Event(event)).expect("serialisable");
            sink.write_all(&line).expect("sink never fails");
        }
    }
}

/// The zut RPC frames of `events`, for the baseline.
pub fn rpc_frames(events: &[AgentEvent]) -> Vec<Frame> {
    let mut processor = RpcProcessor::new(SharedMeter::new(UsageMeter::new("openai")));
    events
        .iter()
        .cloned()
        .filter_map(|e| processor.process(e))
        .map(Frame::Event)
        .collect()
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
