//! How tool calls look in an editor: an ACP [`ToolKind`] by tool name (for an MCP tool, from
//! its server's annotations: [`mcp_kind`]), a title, the paths they touch as absolute
//! [`ToolCallLocation`]s, and for `edit_file` / `write_file` a [`Diff`] content (`path`,
//! `oldText`, `newText`) that stays in the call's content when it completes. Also the
//! content blocks and the plan in ACP form.

use std::borrow::Cow;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall as AcpToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_core::{
    permission::{ApprovalRequest, Block},
    tool::{PlanItem, PlanStatus},
    ContentBlock,
};
use agent_mcp::{McpManager, McpToolInfo};
use base64::Engine as _;
use serde_json::Value;

use agent_host::session::canonical_tool_name;

const TITLE_MAX: usize = 120;

/// The ACP kind of a tool, by name (this project's names; ZCode's are mapped first).
pub fn tool_kind(name: &str) -> ToolKind {
    match canonical_tool_name(name).as_str() {
        "read_file" | "list_dir" | "view_image" => ToolKind::Read,
        "write_file" | "edit_file" | "apply_patch" => ToolKind::Edit,
        "glob" | "grep" | "web_search" => ToolKind::Search,
        "bash" | "exec_command" | "write_stdin" => ToolKind::Execute,
        "plan" | "think" | "Task" => ToolKind::Think,
        "web_fetch" | "fetch" => ToolKind::Fetch,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The ACP kind of an MCP tool, from its server's annotations: `readOnlyHint` → `read`
/// (`fetch` when `openWorldHint` says it reaches outside systems), `destructiveHint` → `edit`,
/// anything else (no annotations) → `other`.
pub fn mcp_kind(info: &McpToolInfo) -> ToolKind {
    match (
        info.read_only_hint,
        info.destructive_hint,
        info.open_world_hint,
    ) {
        (Some(true), _, Some(true)) => ToolKind::Fetch,
        (Some(true), _, _) => ToolKind::Read,
        (_, Some(true), _) => ToolKind::Edit,
        _ => ToolKind::Other,
    }
}

/// The title of an MCP tool's call: the server's title for the tool, else
/// `tool (server)`.
pub fn mcp_title(info: &McpToolInfo) -> String {
    match info.title.as_deref().map(str::trim) {
        Some(title) if !title.is_empty() => clip(title),
        _ => format!("{} ({})", info.remote_name, info.server),
    }
}

/// The kind and title of a call: by name for this agent's tools, from the session's MCP
/// servers for theirs.
pub fn describe(name: &str, args: &Value, mcp: Option<&McpManager>) -> (ToolKind, String) {
    match mcp.and_then(|m| m.tool_info(name)) {
        Some(info) => (mcp_kind(&info), mcp_title(&info)),
        None => (tool_kind(name), tool_title(name, args)),
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
        // Zero's `Task` payload: `{name, description, prompt, run_in_background?}`.
        "Task" => match (arg(args, "name"), arg(args, "description")) {
            (Some(who), Some(what)) => clip(&format!("{who}: {what}")),
            (Some(who), None) => format!("Task: {}", clip(who)),
            _ => "Task".to_string(),
        },
        _ => name.to_string(),
    }
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
                vec![ToolCallLocation::new(cwd.join(p)).line(line)]
            })
            .unwrap_or_default(),
        "write_file" | "edit_file" => path
            .map(|p| vec![ToolCallLocation::new(cwd.join(p))])
            .unwrap_or_default(),
        "list_dir" | "glob" | "grep" => {
            vec![ToolCallLocation::new(cwd.join(path.unwrap_or(".")))]
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
            vec![Diff::new(cwd.join(path), new)
                .old_text(old.map(str::to_string))
                .into()]
        }
        ("write_file", Some(path)) => {
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![Diff::new(cwd.join(path), content).into()]
        }
        ("exit_plan_mode", _) => arg(args, "plan")
            .map(|plan| vec![text_block(plan).into()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `args` with every known secret (a key registered with `agent_core::secrets`, the value
/// of a sensitive environment variable) in its strings replaced by `[REDACTED]`: a model
/// may quote a key in a call, and the call's title, locations and raw input are shown.
pub fn scrubbed_args(args: &Value) -> Cow<'_, Value> {
    let secrets: Vec<String> = agent_core::secrets::registered_secrets()
        .into_iter()
        .chain(agent_core::secrets::sensitive_env_values())
        .collect();
    if secrets.is_empty() || !holds_any(args, &secrets) {
        return Cow::Borrowed(args);
    }
    let mut clean = args.clone();
    scrub_strings(&mut clean, &secrets);
    Cow::Owned(clean)
}

fn holds_any(value: &Value, secrets: &[String]) -> bool {
    match value {
        Value::String(text) => secrets.iter().any(|s| text.contains(s.as_str())),
        Value::Array(items) => items.iter().any(|v| holds_any(v, secrets)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| secrets.iter().any(|s| k.contains(s.as_str())) || holds_any(v, secrets)),
        _ => false,
    }
}

fn scrub_strings(value: &mut Value, secrets: &[String]) {
    let scrub = |text: &str| {
        let mut out = text.to_string();
        for secret in secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), agent_core::secrets::REDACTED);
            }
        }
        out
    };
    match value {
        Value::String(text) => *text = scrub(text),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_strings(v, secrets)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                scrub_strings(&mut item, secrets);
                map.insert(scrub(&key), item);
            }
        }
        _ => {}
    }
}

fn raw_input(args: &Value, raw_args: Option<&str>) -> Value {
    match (args, raw_args) {
        (Value::Null, Some(raw)) => {
            Value::Object([("raw".into(), raw.into())].into_iter().collect())
        }
        (args, _) => args.clone(),
    }
}

/// The `tool_call` that announces a call (`mcp`: the session's MCP servers, which describe
/// their own tools).
pub fn tool_call(
    id: &str,
    name: &str,
    args: &Value,
    raw_args: Option<&str>,
    cwd: &Path,
    mcp: Option<&McpManager>,
) -> AcpToolCall {
    let args = &*scrubbed_args(args);
    let raw_args = raw_args.map(agent_core::secrets::scrub_known_values);
    let raw_args = raw_args.as_deref();
    let (kind, title) = describe(name, args, mcp);
    AcpToolCall::new(id.to_string(), title)
        .kind(kind)
        .status(ToolCallStatus::Pending)
        .locations(tool_locations(name, args, cwd))
        .content(tool_preview(name, args, cwd))
        .raw_input(raw_input(args, raw_args))
}

/// The tool call of a permission prompt, as `session/request_permission` carries it, under
/// `call_id` (the request's own, or a sub-agent's prefixed with its task id).
pub fn permission_tool_call(
    request: &ApprovalRequest,
    call_id: String,
    cwd: &Path,
    mcp: Option<&McpManager>,
) -> ToolCallUpdate {
    let name = &request.tool;
    let args = &*scrubbed_args(&request.args);
    let preview = tool_preview(name, args, cwd);
    let (kind, title) = describe(name, args, mcp);
    let mut content = preview;
    if let Some(block) = &request.block {
        // Why the sandbox wants approval: an escalation rerun of a confined command.
        content.push(text_block(block_text(block)).into());
    }
    ToolCallUpdate::new(
        call_id,
        ToolCallUpdateFields::new()
            .title(title)
            .kind(kind)
            .status(ToolCallStatus::Pending)
            .locations(tool_locations(name, args, cwd))
            .content((!content.is_empty()).then_some(content))
            .raw_input(args.clone()),
    )
}

/// A sandbox block in words, as a call's content shows it: `Blocked by the sandbox
/// (sandbox): reason [path]`.
pub fn block_text(block: &Block) -> String {
    // The code's wire name (`sandbox`, `network`, …).
    let code = block.code.as_str();
    let mut text = format!("Blocked by the sandbox ({code}): {}", block.reason);
    if let Some(path) = &block.path {
        text.push_str(&format!(" [{path}]"));
    }
    text
}

pub(crate) fn text_block(text: impl Into<String>) -> AcpBlock {
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

/// A call's final status (`completed` when `ok`, else `failed`) and content: a successful
/// edit's diff, the result's text and images, then each of the sandbox's `blocks` in words.
pub(super) fn result_fields(
    name: &str,
    args: Option<&Value>,
    ok: bool,
    result: &[ContentBlock],
    blocks: &[Block],
    cwd: &Path,
) -> ToolCallUpdateFields {
    // A successful edit keeps its diff so the editor can still show what changed.
    let mut content = match (ok, args) {
        (true, Some(args)) if tool_kind(name) == ToolKind::Edit => tool_preview(name, args, cwd),
        _ => Vec::new(),
    };
    content.extend(result.iter().filter_map(content_block).map(Into::into));
    content.extend(blocks.iter().map(|b| text_block(block_text(b)).into()));
    let status = match ok {
        true => ToolCallStatus::Completed,
        false => ToolCallStatus::Failed,
    };
    ToolCallUpdateFields::new().status(status).content(content)
}

/// The `plan` update of a checklist.
pub fn plan_update(plan: &[PlanItem]) -> SessionUpdate {
    let entry = |item: &PlanItem| {
        let status = match item.status {
            PlanStatus::Pending => PlanEntryStatus::Pending,
            PlanStatus::InProgress => PlanEntryStatus::InProgress,
            PlanStatus::Completed => PlanEntryStatus::Completed,
        };
        PlanEntry::new(item.step.clone(), PlanEntryPriority::Medium, status)
    };
    SessionUpdate::Plan(Plan::new(plan.iter().map(entry).collect()))
}

pub(super) fn update(id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::SideEffect;
    use serde_json::json;
    use std::path::PathBuf;

    fn cwd() -> PathBuf {
        PathBuf::from("/work/ws")
    }

    #[test]
    fn kinds_by_tool_name() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("edit_file"), ToolKind::Edit);
        assert_eq!(tool_kind("apply_patch"), ToolKind::Edit);
        assert_eq!(tool_kind("exec_command"), ToolKind::Execute);
        assert_eq!(tool_kind("view_image"), ToolKind::Read);
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
        let v = serde_json::to_value(permission_tool_call(&request, "c9".into(), &cwd(), None))
            .unwrap_or_default();
        assert_eq!(v["toolCallId"], "c9");
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["title"], "`rm -rf build`");
        assert_eq!(v["rawInput"]["command"], "rm -rf build");
        assert!(v.get("content").is_none(), "{v}");

        // A sub-agent's call under its prefixed id; an escalation says what the sandbox
        // refused.
        let escalation = ApprovalRequest {
            block: Some(Block {
                code: agent_core::permission::BlockCode::Network,
                tool_name: Some("bash".into()),
                action: agent_core::permission::PermissionAction::Prompt,
                risk: Default::default(),
                path: None,
                reason: "network access is denied".into(),
                recoverable: true,
            }),
            ..request
        };
        let v = serde_json::to_value(permission_tool_call(
            &escalation,
            "task_1/c9".into(),
            &cwd(),
            None,
        ))
        .unwrap_or_default();
        assert_eq!(v["toolCallId"], "task_1/c9");
        assert_eq!(
            v["content"][0]["content"]["text"],
            "Blocked by the sandbox (network): network access is denied"
        );
    }

    fn info(read_only: Option<bool>, destructive: Option<bool>, open: Option<bool>) -> McpToolInfo {
        McpToolInfo {
            name: "mcp_fs_thing".into(),
            server: "fs".into(),
            remote_name: "thing".into(),
            title: None,
            read_only_hint: read_only,
            destructive_hint: destructive,
            open_world_hint: open,
            side_effect: SideEffect::Read,
        }
    }

    #[test]
    fn mcp_tools_are_described_by_their_annotations() {
        assert_eq!(mcp_kind(&info(Some(true), None, None)), ToolKind::Read);
        assert_eq!(
            mcp_kind(&info(Some(true), None, Some(false))),
            ToolKind::Read
        );
        assert_eq!(
            mcp_kind(&info(Some(true), None, Some(true))),
            ToolKind::Fetch
        );
        assert_eq!(
            mcp_kind(&info(Some(false), Some(true), None)),
            ToolKind::Edit
        );
        assert_eq!(mcp_kind(&info(None, None, None)), ToolKind::Other);
        assert_eq!(
            mcp_kind(&info(Some(false), Some(false), None)),
            ToolKind::Other
        );
        assert_eq!(mcp_title(&info(None, None, None)), "thing (fs)");
        let titled = McpToolInfo {
            title: Some("Do the thing".into()),
            ..info(None, None, None)
        };
        assert_eq!(mcp_title(&titled), "Do the thing");
        // Without the session's servers a name is just a name.
        assert_eq!(
            describe("mcp_fs_thing", &json!({}), None),
            (ToolKind::Other, "mcp_fs_thing".to_string())
        );
    }

    #[test]
    fn a_task_call_names_its_specialist() {
        assert_eq!(tool_kind("Task"), ToolKind::Think);
        assert_eq!(
            tool_title(
                "Task",
                &json!({"name": "explorer", "description": "find the tests", "prompt": "…"})
            ),
            "explorer: find the tests"
        );
        assert_eq!(
            tool_title("Task", &json!({"name": "worker"})),
            "Task: worker"
        );
        assert_eq!(tool_title("Task", &json!({})), "Task");
    }
}
