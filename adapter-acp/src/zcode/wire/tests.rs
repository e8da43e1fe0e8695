use super::*;
use serde_json::json;

#[test]
fn event_envelope_flattens_type_and_payload() {
    let event = SessionEvent {
        event_id: "evt_1".into(),
        session_id: "sess_1".into(),
        turn_id: None,
        seq: 3,
        timestamp: 5,
        body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta { delta: "hi".into() }),
    };
    assert_eq!(
        serde_json::to_value(&event).expect("serialise"),
        json!({"eventId": "evt_1", "sessionId": "sess_1", "seq": 3, "timestamp": 5,
               "type": "model.streaming", "payload": {"kind": "text_delta", "delta": "hi"}})
    );
}

#[test]
fn an_event_notification_is_the_same_line_as_the_generic_one() {
    let events = [
        SessionEvent {
            event_id: "evt_1".into(),
            session_id: "sess_1".into(),
            turn_id: Some("turn_1".into()),
            seq: 3,
            timestamp: 5,
            body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
                delta: "h\"i\n\u{1}é".into(),
            }),
        },
        SessionEvent {
            event_id: "evt_2".into(),
            session_id: "sess_1".into(),
            turn_id: None,
            seq: 4,
            timestamp: 6,
            body: EventBody::ModelStreaming(ModelStreamingPayload::ToolCall {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                input: json!({"z": 1, "a": [1.5, null, "x"]}),
            }),
        },
    ];
    for event in &events {
        let generic = Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: serde_json::to_value(event).expect("value"),
        };
        assert_eq!(
            serde_json::to_string(&EventNotification::new(event)).expect("direct"),
            serde_json::to_string(&generic).expect("generic")
        );
    }
}

#[test]
fn tool_parts_and_states_use_camel_case() {
    let part = Part {
        part_id: "p".into(),
        session_id: "s".into(),
        message_id: "m".into(),
        body: PartBody::Tool {
            call_id: "c".into(),
            tool: "bash".into(),
            state: ToolState::Running {
                input: json!({}),
                started_at: 7,
            },
        },
    };
    assert_eq!(
        serde_json::to_value(&part).expect("serialise"),
        json!({"partId": "p", "sessionId": "s", "messageId": "m", "type": "tool",
               "callId": "c", "tool": "bash",
               "state": {"status": "running", "input": {}, "startedAt": 7}})
    );
}

#[test]
fn ids_round_trip_as_received() {
    let raw: RawMessage =
        serde_json::from_value(json!({"id": "a", "method": "m"})).expect("string id");
    assert_eq!(raw.id, Some(RequestId::Str("a".into())));
    let raw: RawMessage = serde_json::from_value(json!({"id": 7})).expect("int id");
    assert_eq!(serde_json::to_value(raw.id).expect("serialise"), json!(7));
    assert!(serde_json::from_value::<RawMessage>(json!({"id": 1, "jsonrpc": "2.0"})).is_err());
}

#[test]
fn requests_parse_by_method_and_match_their_serde_form() {
    let cases = [
        (
            "session/create",
            json!({"workspace": {"workspacePath": "/w"}}),
        ),
        ("session/list", json!({})),
        ("session/send", json!({"sessionId": "s", "content": "hi"})),
        ("session/stop", json!({"sessionId": "s"})),
        ("session/goal", json!({"sessionId": "s", "action": "show"})),
        ("mcp/list", json!({})),
    ];
    for (method, params) in cases {
        let parsed = ClientRequest::parse(method, Some(params.clone())).expect(method);
        assert_eq!(parsed.method(), method);
        let serde_form: ClientRequest =
            serde_json::from_value(json!({"method": method, "params": params})).expect(method);
        assert_eq!(serde_form.method(), method);
        assert!(ClientRequest::METHODS.contains(&method));
    }
    // Absent params are `{}`.
    assert!(matches!(
        ClientRequest::parse("session/list", None),
        Ok(ClientRequest::List(_))
    ));
    assert_eq!(
        ClientRequest::parse("session/nope", None).expect_err("unknown"),
        RequestError::UnknownMethod("session/nope".into())
    );
    assert_eq!(
        ClientRequest::parse("session/stop", Some(json!({}))).expect_err("missing"),
        RequestError::InvalidParams {
            path: "sessionId".into(),
            message: "missing field `sessionId`".into()
        }
    );
}

#[test]
fn closed_sets_serialise_with_the_wire_spellings() {
    fn text<T: serde::Serialize>(value: T) -> String {
        serde_json::to_value(value)
            .expect("serialise")
            .as_str()
            .expect("a string")
            .to_string()
    }
    let cases = [
        (text(SessionKind::Subagent), "subagent"),
        (text(TitleSource::FirstInput), "first_input"),
        (text(WirePermissionMode::Unsafe), "unsafe"),
        (text(ActiveToolStatus::Pending), "pending"),
        (text(JobKind::Subagent), "subagent"),
        (text(TaskStatus::Cancelled), "cancelled"),
        (text(TurnKind::Compact), "compact"),
        (text(TodoStatus::InProgress), "in_progress"),
        (text(TodoPriority::Medium), "medium"),
        (text(GoalStatus::Paused), "paused"),
        (text(CompactAcceptance::AlreadyRunning), "already_running"),
        (text(CancelStatus::NotFound), "not_found"),
        (text(FinishReason::ToolCalls), "tool-calls"),
        (text(InputSource::Subagent), "subagent"),
        (text(ExecutionKind::Agent), "agent"),
        (text(ToolErrorKind::SandboxDenied), "sandbox_denied"),
        (text(OriginSource::Subagent), "subagent"),
        (text(ResultType::Success), "success"),
        (text(TurnPhase::Execution), "execution"),
        (text(CompactionState::Failed), "failed"),
        (text(WireCompactionReason::Overflow), "overflow"),
        (text(PermissionOptionId::AllowAlways), "allow_always"),
        (text(WireRiskLevel::Critical), "critical"),
        (text(SchemaInteraction::PlanApproval), "plan_approval"),
        (text(DatabaseKind::Session), "session"),
        (text(StartupPhase::Ready), "ready"),
        (text(PermissionUpdateKind::AddRules), "addRules"),
        (text(PermissionBehavior::Allow), "allow"),
        (
            text(DeliveryKind::WebRemoteReplayable),
            "web-remote-replayable",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    for level in ["low", "medium", "high", "critical"] {
        let core: agent_core::permission::RiskLevel =
            serde_json::from_value(json!(level)).expect("core");
        assert_eq!(text(WireRiskLevel::from(core)), level);
    }
    for status in [
        TaskStatus::Running,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ] {
        assert_eq!(text(status), status.as_str());
    }
}

#[test]
fn open_inputs_accept_any_text_as_before() {
    let update: PermissionUpdate =
        serde_json::from_value(json!({"type": "addRules", "behavior": "allow"})).expect("known");
    assert_eq!(update.kind, PermissionUpdateKind::AddRules);
    assert_eq!(update.behavior, PermissionBehavior::Allow);
    let update: PermissionUpdate = serde_json::from_value(json!({})).expect("absent");
    assert_eq!(update.kind, PermissionUpdateKind::Unset);
    assert_eq!(update.behavior, PermissionBehavior::Unset);
    let update: PermissionUpdate =
        serde_json::from_value(json!({"type": "setMode", "behavior": ""})).expect("other");
    assert_eq!(update.kind, PermissionUpdateKind::Other("setMode".into()));
    assert_eq!(update.behavior, PermissionBehavior::Unset);
    assert!(serde_json::from_value::<PermissionUpdate>(json!({"behavior": 1})).is_err());
    assert_eq!(
        serde_json::to_value(PermissionBehavior::Other("ask".into())).expect("serialise"),
        json!("ask")
    );
    let p: SubscribeParams =
        serde_json::from_value(json!({"sessionId": "s", "deliveryKind": "pager"})).expect("other");
    assert_eq!(p.delivery_kind, Some(DeliveryKind::Other("pager".into())));
    let p: SubscribeParams =
        serde_json::from_value(json!({"sessionId": "s", "deliveryKind": "desktop-continuous"}))
            .expect("known");
    assert_eq!(p.delivery_kind, Some(DeliveryKind::DesktopContinuous));
}
