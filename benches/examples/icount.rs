//! Runs one adapter pipeline (or its serialise-only baseline) a given number of times, for
//! instruction counts under callgrind, which are deterministic where wall-clock figures on a
//! shared machine are not:
//!
//! ```sh
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/icount zero text 0
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/icount zero text 20
//! ```
//!
//! (total(20) − total(0) − clone(20) + clone(0)) / 20 is the cost of one run of the workload
//! (`clone` counts making the inputs); `benches/icount.sh` does this for every pipeline.
//! The `e2e-*` pipelines run `DELTAS` text deltas end to end through a front end (the
//! `agent_loop` and `acp` benches' pipelines); `icount.sh` reports the difference between two
//! sizes per delta.

#[path = "../benches/front_ends/mod.rs"]
mod front_ends;

use benches::e2e::{run_once, runtime, Pipeline};
use benches::pipelines::{rpc_frames, rpc_pipeline, serialise, zero_frames, zero_pipeline};
use benches::{mixed_run, text_run, CountingSink};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [pipeline, workload, times] = args.as_slice() else {
        eprintln!(
            "usage: icount zero|zero-base|rpc|rpc-base|clone text|mixed TIMES\n       icount loop|e2e-drain|e2e-exec|e2e-rpc|e2e-zcode|e2e-acp - DELTAS"
        );
        std::process::exit(2);
    };
    let times: usize = times.parse().unwrap_or(1);
    // `times` text deltas from a scripted turn through the ZCode app-server or ACP front end,
    // in process, until the turn's last line has been read (the acp bench's pipeline).
    if let Some(front) = match pipeline.as_str() {
        "e2e-zcode" => Some(front_ends::FrontEnd::Zcode),
        "e2e-acp" => Some(front_ends::FrontEnd::Acp),
        _ => None,
    } {
        let dir = std::env::temp_dir().join(format!("icount-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let script = front_ends::script(&dir, times);
        let (_, bytes, lines) =
            front_ends::run_once(&front_ends::runtime(), front, &dir, &script, times);
        let _ = std::fs::remove_dir_all(&dir);
        println!("{lines} lines, {bytes} bytes");
        return;
    }
    if let Some(pipeline) = match pipeline.as_str() {
        // `times` text deltas from the scripted provider through Agent::prompt and a front end
        // (workload ignored): the agent loop alone (drained), exec, rpc.
        "loop" | "e2e-drain" => Some(Pipeline::Drain),
        "e2e-exec" => Some(Pipeline::StreamJson),
        "e2e-rpc" => Some(Pipeline::Rpc),
        _ => None,
    } {
        let data = std::env::temp_dir().join(format!("icount-{}", std::process::id()));
        let (_, bytes) = run_once(&runtime(), pipeline, times, &data);
        let _ = std::fs::remove_dir_all(&data);
        println!("{bytes} bytes");
        return;
    }
    let events = match workload.as_str() {
        "mixed" => mixed_run(10),
        _ => text_run(1000, " token"),
    };
    let mut sink = CountingSink::default();
    let mut buf = Vec::new();
    let zero = zero_frames(&events);
    let rpc = rpc_frames(&events);
    // The inputs are cloned before the loop so only the pipeline is counted.
    let mapped = matches!(pipeline.as_str(), "zero" | "rpc" | "clone");
    let inputs: Vec<_> = (0..times)
        .map(|_| if mapped { events.clone() } else { Vec::new() })
        .collect();
    for input in inputs {
        match pipeline.as_str() {
            "zero" => zero_pipeline(input, &sink),
            "zero-base" => serialise(&zero, &mut buf, &mut sink),
            "rpc" => rpc_pipeline(input, &mut sink),
            // The cost of making the inputs, to subtract from the pipelines' counts (the
            // pipelines drop their input, so dropping stays counted there).
            "clone" => std::mem::forget(input),
            _ => serialise(&rpc, &mut buf, &mut sink),
        }
    }
    println!("{} events, {} bytes", events.len(), sink.bytes());
    eprintln!(
        "size_of AgentEvent {} EventBody {}",
        std::mem::size_of::<agent_core::AgentEvent>(),
        std::mem::size_of::<adapter_stream_json::wire::EventBody>()
    );
}
