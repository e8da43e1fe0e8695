//! [`ToolWrapper`]: a tool made by wrapping another and changing only some of its methods.

use std::path::Path;

use async_trait::async_trait;
use serde_json::Value;

use crate::permission::{Assessment, CallTarget, Permission, SideEffect};
use crate::provider::ToolSpec;
use crate::sandbox::policy::SandboxEscalation;
use crate::sandbox::report::SandboxSupport;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// A tool that wraps another: every method defaults to the wrapped tool's, so a wrapper
/// overrides only what it changes and can never forget one (such as
/// [`Tool::sandbox_support`] or [`Tool::sandbox_escalation`]). Every `ToolWrapper` is a
/// [`Tool`].
///
/// ```
/// use std::sync::Arc;
/// use agent_core::tool::ToolWrapper;
/// use agent_core::{async_trait, tool_fn, Tool, ToolContext, ToolError, ToolOutput};
/// use serde_json::Value;
///
/// /// Appends a line to every successful result of the wrapped tool.
/// struct Signed {
///     inner: Arc<dyn Tool>,
/// }
///
/// #[async_trait]
/// impl ToolWrapper for Signed {
///     fn inner(&self) -> &dyn Tool {
///         &*self.inner
///     }
///
///     async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         let output = self.inner.call(args, ctx).await?;
///         Ok(ToolOutput::text(format!("{}\n-- checked", output.text_content())))
///     }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct EchoArgs {
///     /// What to echo.
///     text: String,
/// }
///
/// async fn echo(args: EchoArgs, _ctx: ToolContext) -> Result<String, ToolError> {
///     Ok(args.text)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let inner: Arc<dyn Tool> = Arc::new(tool_fn("echo", "Echoes a text.", echo));
/// let signed: Arc<dyn Tool> = Arc::new(Signed { inner });
/// assert_eq!(signed.name(), "echo"); // forwarded
/// let args = serde_json::json!({"text": "hi"});
/// let output = signed.call(args, ToolContext::new(".")).await.unwrap();
/// assert_eq!(output.text_content(), "hi\n-- checked");
/// # }
/// ```
///
/// A type implementing `ToolWrapper` gets its [`Tool`] methods from this trait; with both
/// traits in scope, call them through the trait (`Tool::name(&wrapper)`) or through an
/// `Arc<dyn Tool>`.
#[async_trait]
pub trait ToolWrapper: Send + Sync + 'static {
    /// The wrapped tool.
    fn inner(&self) -> &dyn Tool;

    /// [`Tool::name`]; the wrapped tool's by default.
    fn name(&self) -> &str {
        self.inner().name()
    }

    /// [`Tool::description`]; the wrapped tool's by default.
    fn description(&self) -> &str {
        self.inner().description()
    }

    /// [`Tool::parameters`]; the wrapped tool's by default.
    fn parameters(&self) -> Value {
        self.inner().parameters()
    }

    /// [`Tool::side_effect`]; the wrapped tool's by default.
    fn side_effect(&self) -> SideEffect {
        self.inner().side_effect()
    }

    /// [`Tool::permission`]; the wrapped tool's by default.
    fn permission(&self) -> Permission {
        self.inner().permission()
    }

    /// [`Tool::assess`]; the wrapped tool's by default.
    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        self.inner().assess(args, cwd)
    }

    /// [`Tool::call`]; the wrapped tool's by default.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner().call(args, ctx).await
    }

    /// [`Tool::call_target`]; the wrapped tool's by default.
    fn call_target(&self, args: &Value) -> CallTarget {
        self.inner().call_target(args)
    }

    /// [`Tool::sandbox_support`]; the wrapped tool's by default.
    fn sandbox_support(&self) -> Option<SandboxSupport> {
        self.inner().sandbox_support()
    }

    /// [`Tool::sandbox_escalation`]; the wrapped tool's by default.
    fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
        self.inner().sandbox_escalation(args)
    }

    /// [`Tool::answers_to`]; the wrapped tool's by default.
    fn answers_to(&self, name: &str) -> bool {
        self.inner().answers_to(name)
    }

    /// [`Tool::spec`]; by default made of this wrapper's name, description and parameters
    /// (the wrapped tool's, unless the wrapper overrides one of them).
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}

#[async_trait]
impl<W: ToolWrapper> Tool for W {
    fn name(&self) -> &str {
        ToolWrapper::name(self)
    }

    fn description(&self) -> &str {
        ToolWrapper::description(self)
    }

    fn parameters(&self) -> Value {
        ToolWrapper::parameters(self)
    }

    fn side_effect(&self) -> SideEffect {
        ToolWrapper::side_effect(self)
    }

    fn permission(&self) -> Permission {
        ToolWrapper::permission(self)
    }

    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        ToolWrapper::assess(self, args, cwd)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        ToolWrapper::call(self, args, ctx).await
    }

    fn call_target(&self, args: &Value) -> CallTarget {
        ToolWrapper::call_target(self, args)
    }

    fn sandbox_support(&self) -> Option<SandboxSupport> {
        ToolWrapper::sandbox_support(self)
    }

    fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
        ToolWrapper::sandbox_escalation(self, args)
    }

    fn answers_to(&self, name: &str) -> bool {
        ToolWrapper::answers_to(self, name)
    }

    fn spec(&self) -> ToolSpec {
        ToolWrapper::spec(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// A tool that starts processes: it reports sandbox support and asks for escalation.
    struct Sandboxed;

    #[async_trait]
    impl Tool for Sandboxed {
        fn name(&self) -> &str {
            "sandboxed"
        }
        fn description(&self) -> &str {
            "Runs things."
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn side_effect(&self) -> SideEffect {
            SideEffect::Shell
        }
        fn permission(&self) -> Permission {
            Permission::Deny
        }
        async fn call(&self, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ran"))
        }
        fn sandbox_support(&self) -> Option<SandboxSupport> {
            Some(SandboxSupport {
                landlock_abi: Some(4),
                seccomp: true,
                reason: None,
            })
        }
        fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
            args.get("escalate").map(|_| SandboxEscalation::Network)
        }
    }

    /// Overrides only the description.
    struct Described(Arc<dyn Tool>);

    impl ToolWrapper for Described {
        fn inner(&self) -> &dyn Tool {
            &*self.0
        }
        fn description(&self) -> &str {
            "Runs things, wrapped."
        }
    }

    #[tokio::test]
    async fn a_wrapper_reports_what_it_does_not_override_from_the_inner_tool() {
        let wrapped: Arc<dyn Tool> = Arc::new(Described(Arc::new(Sandboxed)));
        assert_eq!(wrapped.name(), "sandboxed");
        assert_eq!(wrapped.side_effect(), SideEffect::Shell);
        assert_eq!(wrapped.permission(), Permission::Deny);
        assert_eq!(wrapped.sandbox_support(), Sandboxed.sandbox_support());
        assert!(wrapped.sandbox_support().is_some());
        assert_eq!(
            wrapped.sandbox_escalation(&json!({"escalate": true})),
            Some(SandboxEscalation::Network)
        );
        assert!(wrapped.sandbox_escalation(&json!({})).is_none());
        let spec = wrapped.spec();
        assert_eq!(spec.name, "sandboxed");
        assert_eq!(spec.description, "Runs things, wrapped.");
        let output = wrapped
            .call(json!({}), ToolContext::new("."))
            .await
            .expect("the inner tool runs");
        assert_eq!(output.text_content(), "ran");
    }
}
