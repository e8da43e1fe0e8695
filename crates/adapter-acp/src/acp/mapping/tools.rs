//! How tool calls look in an editor: an ACP [`ToolKind`] by tool name, a title, the paths
//! they touch as absolute [`ToolCallLocation`]s, and for `edit_file` / `write_file` a
//! [`Diff`] content (`path`, `oldText`, `newText`) that stays in the call's content when it
//! completes. Also the content blocks and the plan in ACP form.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall as AcpToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_core::{ApprovalRequest, ContentBlock, PlanItem, PlanStatus};
use base64::Engine as _;
use serde_json::Value;

use agent_host::session::canonical_tool_name;

const TITLE_MAX: usize = 120;

/// The ACP kind of a tool, by name (this project's names; ZCode's are mapped first).
pub fn tool_kind(name: &str) -> ToolKind {
    match canonical_tool_name(name).as_str() {
        "read_file" | "list_dir" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "glob" | "grep" | "web_search" => ToolKind::Search,
        "bash" => ToolKind::Execute,
        "plan" | "think" => ToolKind::Think,
        "web_fetch" | "fetch" => ToolKind::Fetch,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn clip(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(TITLE_MAX).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// A short human title for a call.
pub fn tool_title(name: &str, args: &Value) -> String {
    let path = arg(args, "path");
    match canonical_tool_name(name).as_str() {
        "read_file" => format!("Read {}", path.unwrap_or("file")),
        "write_file" => format!("Write {}", path.unwrap_or("file")),
        "edit_file" => format!("Edit {}", path.unwrap_or("file")),
        "list_dir" => format!("List {}", path.unwrap_or(".")),
        "glob" => match (arg(args, "pattern"), path) {
            (Some(p), Some(dir)) => clip(&format!("Find {p} in {dir}")),
            (Some(p), None) => clip(&format!("Find {p}")),
            _ => "Find files".to_string(),
        },
        "grep" => match (arg(args, "pattern"), path) {
            (Some(p), Some(dir)) => clip(&format!("Search {p:?} in {dir}")),
            (Some(p), None) => clip(&format!("Search {p:?}")),
            _ => "Search".to_string(),
        },
        "bash" => match arg(args, "command") {
            Some(command) => format!("`{}`", clip(command)),
            None => "Run a command".to_string(),
        },
        "plan" => "Update plan".to_string(),
        "exit_plan_mode" => "Ready to code?".to_string(),
        "ask_user" => "Ask the user".to_string(),
        _ => name.to_string(),
    }
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// The paths a call touches, absolute (relative ones are resolved against `cwd`).
pub fn tool_locations(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let path = arg(args, "path");
    match canonical_tool_name(name).as_str() {
        "read_file" => path
            .map(|p| {
                let line = args
                    .get("offset")
                    .and_then(Value::as_u64)
                    .and_then(|l| u32::try_from(l).ok());
                vec![ToolCallLocation::new(absolute(cwd, p)).line(line)]
            })
            .unwrap_or_default(),
        "write_file" | "edit_file" => path
            .map(|p| vec![ToolCallLocation::new(absolute(cwd, p))])
            .unwrap_or_default(),
        "list_dir" | "glob" | "grep" => {
            vec![ToolCallLocation::new(absolute(cwd, path.unwrap_or(".")))]
        }
        _ => Vec::new(),
    }
}

/// The content a call shows before it runs: the diff of an edit or write, the plan of
/// `exit_plan_mode`.
pub fn tool_preview(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallContent> {
    let path = arg(args, "path");
    match (canonical_tool_name(name).as_str(), path) {
        ("edit_file", Some(path)) => {
            let old = args.get("old_string").and_then(Value::as_str);
            let new = args
                .get("new_string")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![Diff::new(absolute(cwd, path), new)
                .old_text(old.map(str::to_string))
                .into()]
        }
        ("write_file", Some(path)) => {
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![Diff::new(absolute(cwd, path), content).into()]
        }
        ("exit_plan_mode", _) => arg(args, "plan")
            .map(|plan| vec![text_block(plan).into()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn raw_input(args: &Value, raw_args: Option<&str>) -> Value {
    match (args, raw_args) {
        (Value::Null, Some(raw)) => {
            let mut raw_input = serde_json::Map::new();
            raw_input.insert("raw".to_string(), Value::String(raw.to_string()));
            Value::Object(raw_input)
        }
        (args, _) => args.clone(),
    }
}

/// The `tool_call` that announces a call.
pub fn tool_call(
    id: &str,
    name: &str,
    args: &Value,
    raw_args: Option<&str>,
    cwd: &Path,
) -> AcpToolCall {
    AcpToolCall::new(id.to_string(), tool_title(name, args))
        .kind(tool_kind(name))
        .status(ToolCallStatus::Pending)
        .locations(tool_locations(name, args, cwd))
        .content(tool_preview(name, args, cwd))
        .raw_input(raw_input(args, raw_args))
}

/// The tool call of a permission prompt, as `session/request_permission` carries it.
pub fn permission_tool_call(request: &ApprovalRequest, cwd: &Path) -> ToolCallUpdate {
    let name = &request.tool;
    let args = &request.args;
    let preview = tool_preview(name, args, cwd);
    ToolCallUpdate::new(
        request.call_id.clone(),
        ToolCallUpdateFields::new()
            .title(tool_title(name, args))
            .kind(tool_kind(name))
            .status(ToolCallStatus::Pending)
            .locations(tool_locations(name, args, cwd))
            .content((!preview.is_empty()).then_some(preview))
            .raw_input(args.clone()),
    )
}

pub(super) fn text_block(text: impl Into<String>) -> AcpBlock {
    AcpBlock::Text(TextContent::new(text))
}

fn image_block(mime_type: &str, data: &[u8]) -> AcpBlock {
    let data = base64::engine::general_purpose::STANDARD.encode(data);
    AcpBlock::Image(ImageContent::new(data, mime_type))
}

/// A text or image block of ours as ACP content (other kinds are not content).
pub fn content_block(block: &ContentBlock) -> Option<AcpBlock> {
    match block {
        ContentBlock::Text { text } => Some(text_block(text.clone())),
        ContentBlock::Image { mime_type, data } => Some(image_block(mime_type, data)),
        _ => None,
    }
}

pub(super) fn result_content(
    name: &str,
    args: Option<&Value>,
    ok: bool,
    blocks: &[ContentBlock],
    cwd: &Path,
) -> Vec<ToolCallContent> {
    // A successful edit keeps its diff so the editor can still show what changed.
    let mut content = match (ok, args) {
        (true, Some(args)) if tool_kind(name) == ToolKind::Edit => tool_preview(name, args, cwd),
        _ => Vec::new(),
    };
    content.extend(
        blocks
            .iter()
            .filter_map(content_block)
            .map(ToolCallContent::from),
    );
    content
}

fn plan_entries(plan: &[PlanItem]) -> Plan {
    Plan::new(
        plan.iter()
            .map(|item| {
                let status = match item.status {
                    PlanStatus::Pending => PlanEntryStatus::Pending,
                    PlanStatus::InProgress => PlanEntryStatus::InProgress,
                    PlanStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(item.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// The `plan` update of a checklist.
pub fn plan_update(plan: &[PlanItem]) -> SessionUpdate {
    SessionUpdate::Plan(plan_entries(plan))
}

pub(super) fn update(id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::SideEffect;
    use serde_json::json;

    fn cwd() -> PathBuf {
        PathBuf::from("/work/ws")
    }

    #[test]
    fn kinds_by_tool_name() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("edit_file"), ToolKind::Edit);
        assert_eq!(tool_kind("write_file"), ToolKind::Edit);
        assert_eq!(tool_kind("bash"), ToolKind::Execute);
        assert_eq!(tool_kind("Bash"), ToolKind::Execute);
        assert_eq!(tool_kind("grep"), ToolKind::Search);
        assert_eq!(tool_kind("glob"), ToolKind::Search);
        assert_eq!(tool_kind("plan"), ToolKind::Think);
        assert_eq!(tool_kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(tool_kind("exit_plan_mode"), ToolKind::SwitchMode);
        assert_eq!(tool_kind("mystery"), ToolKind::Other);
    }

    #[test]
    fn permission_call_describes_the_tool() {
        let request = ApprovalRequest {
            call_id: "c9".into(),
            tool: "bash".into(),
            args: json!({"command": "rm -rf build"}),
            mode: agent_core::PermissionMode::Ask,
            side_effect: SideEffect::Shell,
            reason: None,
            risk: Default::default(),
            block: None,
        };
        let v = serde_json::to_value(permission_tool_call(&request, &cwd())).unwrap_or_default();
        assert_eq!(v["toolCallId"], "c9");
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["title"], "`rm -rf build`");
        assert_eq!(v["rawInput"]["command"], "rm -rf build");
    }
}
