//! The one coverage harness (feature `test-util`): one event of every [`AgentEvent`]
//! variant ([`agent_core::testing::one_of_each`]) through any [`Mapping`], failing for each
//! variant the mapping neither maps nor declares not shown.

use agent_core::testing::{one_of_each, type_of, variant_names};
use agent_core::AgentEvent;

use super::mapping::{Coverage, Fold, Mapping};
use super::state::TurnState;

/// What a mapping did with one sample event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Covered {
    /// The variant's serde tag.
    pub kind: String,
    /// What the mapping said.
    pub coverage: Coverage,
    /// How many frames it made.
    pub frames: usize,
}

/// The coverage of every variant, in the samples' order.
#[derive(Debug, Clone, Default)]
pub struct CoverageReport {
    /// One entry per sample.
    pub entries: Vec<Covered>,
}

impl CoverageReport {
    /// The entry of variant `kind`.
    pub fn get(&self, kind: &str) -> Option<&Covered> {
        self.entries.iter().find(|e| e.kind == kind)
    }

    /// The variants shown.
    pub fn shown(&self) -> Vec<&str> {
        self.of(Coverage::Shown)
    }

    /// The variants declared not shown.
    pub fn not_shown(&self) -> Vec<&str> {
        self.of(Coverage::NotShown)
    }

    fn of(&self, coverage: Coverage) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|e| e.coverage == coverage)
            .map(|e| e.kind.as_str())
            .collect()
    }
}

/// Feeds [`one_of_each`] (in its order, so a sub-agent's events follow its start and a
/// block follows its call) through `mapping` over a fresh [`TurnState`], and panics naming
/// every variant the mapping does not know ([`Coverage::Unknown`]) and every variant
/// declared not shown that still made frames. Returns what it saw, for the protocol's own
/// checks (which shown variants may map to nothing).
pub fn assert_covers<M: Mapping>(mapping: M) -> CoverageReport {
    let report = coverage(Fold::with_state(TurnState::new(), mapping), one_of_each());
    let mut problems = Vec::new();
    for entry in &report.entries {
        match entry.coverage {
            Coverage::Unknown => problems.push(format!(
                "`{}` is neither mapped nor declared not shown",
                entry.kind
            )),
            Coverage::NotShown if entry.frames > 0 => problems.push(format!(
                "`{}` is declared not shown but made {} frame(s)",
                entry.kind, entry.frames
            )),
            _ => {}
        }
    }
    for name in variant_names() {
        if report.get(&name).is_none() {
            problems.push(format!(
                "`{name}` has no sample in agent_core::testing::one_of_each"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the mapping's coverage:\n{}",
        problems.join("\n")
    );
    report
}

/// What `fold` does with each of `events`.
pub fn coverage<M: Mapping>(mut fold: Fold<M>, events: Vec<AgentEvent>) -> CoverageReport {
    let mut report = CoverageReport::default();
    for event in &events {
        let mut frames = 0;
        let coverage = fold.feed(event, |_| frames += 1);
        report.entries.push(Covered {
            kind: type_of(event),
            coverage,
            frames,
        });
    }
    report
}
