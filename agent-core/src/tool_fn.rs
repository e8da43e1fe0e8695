//! [`tool_fn`]: a typed [`Tool`] from an async function, its schema derived from the
//! argument type.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::OnceLock;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::permission::{Permission, SideEffect};
use crate::schema::StrictSchema;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// A tool built from an async function by [`tool_fn`].
pub struct FnTool<Args, F> {
    name: String,
    description: String,
    f: F,
    side_effect: SideEffect,
    permission: Option<Permission>,
    /// Derived on first use: schemas cost something to build, and an agent that never
    /// calls the model should not pay for them.
    schema: OnceLock<StrictSchema>,
    _args: PhantomData<fn() -> Args>,
}

/// A [`Tool`] from an async function taking typed arguments.
///
/// The parameters schema is derived from `Args` with `schemars` (doc comments become
/// descriptions) and brought to the providers' strict rules ([`StrictSchema`]): every
/// object has `additionalProperties: false` and lists all its properties as required, an
/// optional field admitting `null`. Arguments that do not fit `Args` never reach `f`: the
/// call fails with [`ToolError::InvalidArguments`] naming the field, which the model sees
/// and can correct.
///
/// The function returns anything that converts into a [`ToolOutput`] (a `String`, a `&str`,
/// a `serde_json::Value`, or a `ToolOutput`). The tool has no side effect and needs no
/// approval unless [`FnTool::side_effect`] or [`FnTool::permission`] says otherwise.
///
/// ```
/// use agent_core::{tool_fn, Agent, SideEffect, ToolContext, ToolError};
/// use agent_providers::scripted::{ScriptedProvider, Turn};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The numbers to add.
///     numbers: Vec<i64>,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let add = tool_fn("add", "Adds numbers.", |args: AddArgs, _ctx: ToolContext| async move {
///     Ok::<_, ToolError>(args.numbers.iter().sum::<i64>().to_string())
/// })
/// .side_effect(SideEffect::None);
///
/// let provider = ScriptedProvider::new([
///     Turn::new().tool_call("c1", "add", r#"{"numbers":[1,2,3]}"#),
///     Turn::new().text("6"),
/// ]);
/// let agent = Agent::builder(provider).tool(add).build();
/// let outcome = agent.run("What is 1+2+3?").await;
/// assert_eq!(outcome.text.as_deref(), Some("6"));
/// # }
/// ```
pub fn tool_fn<Args, F, Fut, Out>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<Args, F>
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    Out: Into<ToolOutput>,
{
    FnTool {
        name: name.into(),
        description: description.into(),
        f,
        side_effect: SideEffect::None,
        permission: None,
        schema: OnceLock::new(),
        _args: PhantomData,
    }
}

impl<Args: JsonSchema, F> FnTool<Args, F> {
    /// Declares what the tool does to the world (default [`SideEffect::None`]). It decides
    /// the default permission (reads and no-effect tools run, the rest ask) and whether
    /// calls of one step may run in parallel (reads and no-effect tools do).
    #[must_use = "returns the changed value"]
    pub fn side_effect(mut self, side_effect: SideEffect) -> Self {
        self.side_effect = side_effect;
        self
    }

    /// Sets the tool's static permission, overriding the one its side effect implies.
    #[must_use = "returns the changed value"]
    pub fn permission(mut self, permission: Permission) -> Self {
        self.permission = Some(permission);
        self
    }

    /// The derived schema, with whether it is fully strict.
    pub fn strict_schema(&self) -> &StrictSchema {
        self.schema.get_or_init(StrictSchema::of::<Args>)
    }
}

impl<Args, F> fmt::Debug for FnTool<Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("side_effect", &self.side_effect)
            .field("permission", &self.permission)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<Args, F, Fut, Out> Tool for FnTool<Args, F>
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    Out: Into<ToolOutput>,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.strict_schema().schema.clone()
    }

    fn side_effect(&self) -> SideEffect {
        self.side_effect
    }

    fn permission(&self) -> Permission {
        self.permission.unwrap_or(match self.side_effect {
            SideEffect::Read | SideEffect::None => Permission::Allow,
            _ => Permission::Prompt,
        })
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = self
            .strict_schema()
            .parse(args)
            .map_err(|err| ToolError::InvalidArguments(err.to_string()))?;
        (self.f)(args, ctx).await.map(Into::into)
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::text(text)
    }
}

impl From<Value> for ToolOutput {
    /// The value as compact JSON text.
    fn from(value: Value) -> Self {
        ToolOutput::text(value.to_string())
    }
}
