//! Tests of [`super`].

use super::*;
use serde_json::json;

#[test]
fn responses_omit_absent_id_data_and_error() {
    let ok = serde_json::to_value(Frame::Response(Response::ok("abort", None, None)))
        .expect("serialise");
    assert_eq!(
        ok,
        json!({"type": "response", "command": "abort", "success": true})
    );
    let fail =
        serde_json::to_value(Response::fail("x", Some(String::new()), "boom")).expect("serialise");
    assert_eq!(
        fail,
        json!({"type": "response", "command": "x", "success": false, "error": "boom"})
    );
}

#[test]
fn events_are_tagged_and_usage_is_flat() {
    let usage = WireUsage {
        input: 1,
        cost_usd: 0.5,
        ..WireUsage::default()
    };
    let value = serde_json::to_value(Frame::Event(Event::Usage {
        turn: usage,
        cumulative: usage,
    }))
    .expect("serialise");
    assert_eq!(value["type"], "usage");
    assert_eq!(value["input"], 1);
    assert_eq!(value["reasoning"], Value::Null);
    assert_eq!(value["cumulative"]["cost_usd"], 0.5);
    assert_eq!(
        serde_json::to_value(Event::AssistantStart).expect("serialise"),
        json!({"type": "assistant_start"})
    );
    let plan = serde_json::to_value(Event::PlanUpdate {
        id: None,
        explanation: None,
        plan: vec![],
    })
    .expect("serialise");
    assert_eq!(
        plan,
        json!({"type": "plan_update", "explanation": null, "plan": []})
    );
}
