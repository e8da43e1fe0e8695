use std::time::Duration;

use futures::StreamExt;

use super::*;
use crate::emit::MAX_BURST;
use crate::provider::{ProviderEvent, ProviderRequest, ProviderStream};

/// Answers every request with 200 numbered text deltas, all ready at once.
struct Counting;

impl Provider for Counting {
    fn id(&self) -> &str {
        "counting"
    }

    fn stream(&self, _: ProviderRequest) -> ProviderStream {
        futures::stream::iter((0..200).map(|i| Ok(ProviderEvent::TextDelta(format!("{i} ")))))
            .boxed()
    }
}

/// A stream that never ends and is always ready.
struct Endless;

impl Provider for Endless {
    fn id(&self) -> &str {
        "endless"
    }

    fn stream(&self, _: ProviderRequest) -> ProviderStream {
        futures::stream::repeat_with(|| Ok(ProviderEvent::TextDelta("x".into()))).boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_a_stream_that_is_always_ready() {
    let agent = Agent::builder(Endless).build();
    let mut run = agent.prompt("go on forever");
    let mut seen = Vec::new();
    while seen.len() < 1000 {
        let n = tokio::time::timeout(Duration::from_secs(10), run.recv_many(&mut seen, 100))
            .await
            .expect("events keep coming");
        assert!(n > 0);
    }
    run.abort();
    let drain = async {
        let mut last = None;
        while let Some(event) = run.next().await {
            last = Some(event);
        }
        last
    };
    let last = tokio::time::timeout(Duration::from_secs(10), drain)
        .await
        .expect("the run ends after abort");
    assert!(matches!(
        last,
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
}

#[tokio::test]
async fn deltas_a_stream_has_ready_travel_as_bursts_in_order() {
    let agent = Agent::builder(Counting).build();
    let mut run = agent.prompt("count");
    let (mut bursts, mut deltas) = (0, Vec::new());
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), run.rx.recv())
            .await
            .expect("the run goes on");
        let events = match next {
            None => break,
            Some(Batch::One(event)) => vec![event],
            Some(Batch::Many(events)) => {
                assert!(events.len() > 1 && events.len() <= MAX_BURST);
                bursts += 1;
                events
            }
        };
        deltas.extend(events.into_iter().filter_map(|e| match e {
            AgentEvent::TextDelta { delta } => Some(delta),
            _ => None,
        }));
    }
    assert!(bursts >= 200 / MAX_BURST, "only {bursts} bursts");
    let expected: Vec<String> = (0..200).map(|i| format!("{i} ")).collect();
    assert_eq!(deltas, expected);
}
