//! The `_meta` this agent attaches to tool call updates, where ACP has no field for what
//! happened: a hook's decision on the call, a sandbox block, the sub-agent a call runs, the
//! permission rule that decided it (`_meta.permission`: agent-core's `DecidingRule`); and to
//! a thought, a model call made again with the fallback model.
//! Serde types, serialised into the schema's `Meta` map.

use agent_client_protocol::v1::schema::Meta;
use agent_core::{
    hooks::{HookEvent, HookOutcome},
    permission::Block,
};
use serde::Serialize;

/// `_meta.hook`: a lifecycle hook decided something about the call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookMeta<'a> {
    /// The hook's name.
    pub name: &'a str,
    /// Where it ran (`before_tool`, `after_tool`).
    pub event: HookEvent,
    /// What it decided (`deny`, `rewrite`, `append`, …).
    pub outcome: HookOutcome,
    /// Why (scrubbed by the agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

/// `_meta.block`: the sandbox refused something the call did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockMeta<'a> {
    /// `sandbox`, `network`, ….
    pub code: agent_core::permission::BlockCode,
    /// The tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<&'a str>,
    /// Why.
    pub reason: &'a str,
    /// The path refused, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'a str>,
    /// Whether the model can recover (another path, asking to rerun).
    pub recoverable: bool,
}

impl<'a> From<&'a Block> for BlockMeta<'a> {
    fn from(block: &'a Block) -> Self {
        Self {
            code: block.code,
            tool_name: block.tool_name.as_deref(),
            reason: &block.reason,
            path: block.path.as_deref(),
            recoverable: block.recoverable,
        }
    }
}

/// `_meta.subagent`: the call runs a sub-agent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentMeta<'a> {
    /// The child's id (also its session id in the store).
    pub task_id: &'a str,
    /// The sub-agent's name.
    pub name: &'a str,
    /// The model it calls.
    pub model: &'a str,
    /// Whether it runs in the background.
    pub background: bool,
    /// 1 for a child of the session's agent.
    pub depth: u32,
}

/// `_meta.modelFallback`: a model call failed and was made again with the fallback model.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackMeta<'a> {
    /// The model that failed.
    pub from: &'a str,
    /// The fallback model.
    pub to: &'a str,
    /// The failure.
    pub reason: &'a str,
}

/// A `_meta` map holding `value` under `key` (none when it cannot be serialised, which
/// the types above always can).
pub fn meta(key: &str, value: impl Serialize) -> Option<Meta> {
    let value = serde_json::to_value(value).ok()?;
    let mut map = Meta::new();
    map.insert(key.to_string(), value);
    Some(map)
}
