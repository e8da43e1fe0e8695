use std::collections::HashSet;

use agent_core::event::RunKind;
use agent_host::turn::coverage::assert_covers;

use super::*;

#[test]
fn every_agent_event_is_mapped_or_declared_not_shown() {
    let mapping = ZcodeMapping::new("turn_1", RunKind::Prompt).with_subagents(true);
    let report = assert_covers(mapping);
    for entry in &report.entries {
        if entry.coverage == Coverage::Shown {
            assert!(entry.frames > 0, "`{}` maps to nothing", entry.kind);
        }
    }
    // The eight of the first front ends, the sandbox report, context usage, compaction
    // start and end, the three sub-agent events, a model fallback and a permission a rule
    // decided.
    assert_eq!(report.shown().len(), 17, "{:?}", report.shown());
}

#[test]
fn event_ids_are_distinct_v4_uuids() {
    let ids: Vec<String> = (0..1000).map(|_| event_id()).collect();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    for id in &ids {
        let uuid = id.strip_prefix("evt_").expect("evt_ prefix");
        assert_eq!(uuid.len(), 36, "{id}");
        let parsed = uuid::Uuid::parse_str(uuid).expect("a uuid");
        assert_eq!(parsed.get_version_num(), 4, "{id}");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{id}");
        assert_eq!(
            parsed.hyphenated().to_string(),
            uuid,
            "lower-case, hyphenated"
        );
    }
}
