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

use benches::pipelines::{rpc_frames, rpc_pipeline, serialise, zero_frames, zero_pipeline};
use benches::{mixed_run, text_run, CountingSink};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [pipeline, workload, times] = args.as_slice() else {
        eprintln!("usage: icount zero|zero-base|rpc|rpc-base|clone text|mixed TIMES");
        std::process::exit(2);
    };
    let times: usize = times.parse().unwrap_or(1);
    if pipeline == "loop" {
        // The agent loop alone: `times` text deltas from the scripted provider through
        // Agent::prompt, drained (workload ignored).
        agent_loop(times);
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

fn agent_loop(n: usize) {
    use futures::StreamExt;
    let mut turn = agent_providers::scripted::Turn::new();
    for _ in 0..n {
        turn = turn.text(" token");
    }
    let provider = agent_providers::ScriptedProvider::new([turn]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let events = rt.block_on(async {
        let agent = agent_core::Agent::builder(provider).build();
        let mut run = agent.prompt("Say something long.");
        let mut events = 0usize;
        while run.next().await.is_some() {
            events += 1;
        }
        events
    });
    println!("{events} events");
}
