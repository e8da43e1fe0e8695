//! Which tools an agent offers: [`ToolFilter`] (allow-list, deny-list, read-only) and
//! [`ToolRequest`], the one place a front end's tool list is assembled (the workspace's
//! default tools with the extra roots, the host's own tools, the filter), used by
//! [`AgentFactory`](super::AgentFactory) and by the one-agent front ends (rpc, exec).
//!
//! The filter checks names only when asked ([`ToolRequest::check`]); the errors are typed
//! ([`ToolFilterError`]) so each front end words them its own way.

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{SideEffect, Tool};
use agent_tools::{Catalogue, SearchBackend, ToolSet};

use super::factory::canonical_tool_name;

/// Which of the assembled tools are offered: only those of an allow-list (when given),
/// never those of a deny-list, and in read-only (plan) mode only tools that read or
/// change nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    read_only: bool,
}

/// A tool filter's names do not fit the tools there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFilterError {
    /// A name that no tool can have (empty, or other than `[A-Za-z0-9_-]`).
    #[error("invalid tool name {0:?}")]
    InvalidName(String),
    /// A name that no tool has.
    #[error("unknown tool {name:?}")]
    UnknownTool {
        /// The name.
        name: String,
        /// The tools there are, in their order (the checked names besides them excluded).
        available: Vec<String>,
    },
    /// A name both allowed and denied.
    #[error("tool {0:?} is both enabled and disabled")]
    EnabledAndDisabled(String),
}

/// Whether `name` is one a tool can have: `[A-Za-z0-9_-]+`.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ToolFilter {
    /// Every tool.
    pub fn all() -> Self {
        Self::default()
    }

    /// No tool at all (`--no-tools`).
    pub fn nothing() -> Self {
        Self::only(Vec::new())
    }

    /// Only the tools named.
    pub fn only(names: impl IntoIterator<Item = String>) -> Self {
        Self {
            allow: Some(names.into_iter().collect()),
            ..Self::default()
        }
    }

    /// An allow-list when given (`None`: every tool), and a deny-list.
    pub fn lists(allow: Option<Vec<String>>, deny: Vec<String>) -> Self {
        Self {
            allow,
            deny,
            read_only: false,
        }
    }

    /// Also never the tools named.
    pub fn deny(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.deny.extend(names);
        self
    }

    /// Only tools without side effects beyond reading (plan mode).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The names in this project's spelling ([`canonical_tool_name`]: `Bash` → `bash`, …).
    pub fn canonical(self) -> Self {
        Self {
            allow: self
                .allow
                .map(|names| names.iter().map(|n| canonical_tool_name(n)).collect()),
            deny: self.deny.iter().map(|n| canonical_tool_name(n)).collect(),
            read_only: self.read_only,
        }
    }

    /// The names in a catalogue's spelling: each name `rename` maps (an SDK name the
    /// catalogue offers under another, `list_dir` → `list_directory`) is replaced.
    pub fn renamed(self, rename: impl Fn(&str) -> Option<&'static str>) -> Self {
        let map = |names: Vec<String>| {
            names
                .into_iter()
                .map(|n| rename(&n).map(str::to_string).unwrap_or(n))
                .collect()
        };
        Self {
            allow: self.allow.map(map),
            deny: map(self.deny),
            read_only: self.read_only,
        }
    }

    /// Each name of a group (`group` gives the names offered only together with a name)
    /// stands for the whole group.
    pub fn grouped(self, group: impl Fn(&str) -> Option<&'static [&'static str]>) -> Self {
        let expand = |names: Vec<String>| {
            let mut out: Vec<String> = Vec::with_capacity(names.len());
            for name in names {
                let members = group(&name).map(|g| g.iter().map(|m| m.to_string()).collect());
                for member in members.unwrap_or_else(|| vec![name]) {
                    if !out.contains(&member) {
                        out.push(member);
                    }
                }
            }
            out
        };
        Self {
            allow: self.allow.map(expand),
            deny: expand(self.deny),
            read_only: self.read_only,
        }
    }

    /// The allow-list, when there is one.
    pub fn allowed(&self) -> Option<&[String]> {
        self.allow.as_deref()
    }

    /// The deny-list.
    pub fn denied(&self) -> &[String] {
        &self.deny
    }

    /// Whether the filter lets a tool named `name` through, by name only.
    pub fn allows_name(&self, name: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == name))
            && !self.deny.iter().any(|n| n == name)
    }

    /// Whether the filter lets `tool` through.
    pub fn allows(&self, tool: &dyn Tool) -> bool {
        self.allows_name(tool.name())
            && (!self.read_only
                || matches!(tool.side_effect(), SideEffect::Read | SideEffect::None))
    }

    /// The tools of `tools` the filter lets through, in their order.
    pub fn apply(&self, mut tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        tools.retain(|t| self.allows(t.as_ref()));
        tools
    }

    /// Checks the names against the tools there are (`known`, in their order, and
    /// `also_known`): each allowed then each denied name in turn must be a valid name
    /// (when `valid_names`) and a known one; then no name may be both allowed and denied.
    /// The first failure is the error.
    pub fn check(
        &self,
        known: &[&str],
        also_known: &[String],
        valid_names: bool,
    ) -> Result<(), ToolFilterError> {
        for name in self.allow.iter().flatten().chain(&self.deny) {
            if valid_names && !valid_tool_name(name) {
                return Err(ToolFilterError::InvalidName(name.clone()));
            }
            if !known.contains(&name.as_str()) && !also_known.contains(name) {
                return Err(ToolFilterError::UnknownTool {
                    name: name.clone(),
                    available: known.iter().map(|n| n.to_string()).collect(),
                });
            }
        }
        if let Some(name) = self.allow.iter().flatten().find(|n| self.deny.contains(n)) {
            return Err(ToolFilterError::EnabledAndDisabled(name.clone()));
        }
        Ok(())
    }
}

/// How [`ToolRequest::build`] checks the filter's names ([`ToolFilter::check`]).
#[derive(Debug, Clone, Default)]
pub struct ToolCheck {
    /// Names that count as known besides the assembled tools' (tools offered elsewhere,
    /// e.g. MCP tools, or tools added later).
    pub also_known: Vec<String>,
    /// Whether a name must be a valid tool name ([`valid_tool_name`]).
    pub valid_names: bool,
}

/// The tools one agent offers, assembled: the default tools of `workspace` (reaching the
/// extra `roots` too), then `extra` (each replacing a tool of its name; its output scrubbed
/// and capped like the defaults'), then `own` (as they are, replacing one of their name:
/// e.g. the `Task` tools, which run sub-agents through the calling run), filtered.
pub struct ToolRequest {
    /// The workspace root.
    pub workspace: PathBuf,
    /// More directories the file tools may reach (`--add-dir`), absolute.
    pub roots: Vec<PathBuf>,
    /// Tools added to the defaults, guarded like them.
    pub extra: Vec<Arc<dyn Tool>>,
    /// Tools added as they are, after the others.
    pub own: Vec<Arc<dyn Tool>>,
    /// Which are offered.
    pub filter: ToolFilter,
    /// When given, the filter's names are checked first.
    pub check: Option<ToolCheck>,
    /// Whose tool names and argument shapes the defaults have: the SDK's (ZCode, ACP),
    /// Zero's (exec) or zut's (rpc). The filter's names are the catalogue's.
    pub catalogue: Catalogue,
    /// The `web_search` backend (none: no `web_search`); [`ToolRequest::new`] reads Zero's
    /// variables ([`SearchBackend::from_env`]); for zut's catalogue, without them,
    /// DuckDuckGo's HTML page, zut's own ([`SearchBackend::duckduckgo`]: zut offers its web
    /// tools by default).
    pub web_search: Option<SearchBackend>,
}

impl ToolRequest {
    /// Every default tool of `workspace`, nothing else.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            roots: Vec::new(),
            extra: Vec::new(),
            own: Vec::new(),
            filter: ToolFilter::all(),
            check: None,
            catalogue: Catalogue::Sdk,
            web_search: SearchBackend::from_env(),
        }
    }

    /// [`ToolRequest::new`] offering `catalogue`'s tools.
    pub fn with_catalogue(workspace: impl Into<PathBuf>, catalogue: Catalogue) -> Self {
        let mut request = Self {
            catalogue,
            ..Self::new(workspace)
        };
        if catalogue == Catalogue::Zut && request.web_search.is_none() {
            request.web_search = Some(SearchBackend::duckduckgo());
        }
        request
    }

    /// The tools, in order: the defaults (with `extra` replacing or following them), then
    /// `own`; filtered. With [`check`](Self::check), a name that does not fit is the error.
    pub fn build(self) -> Result<Vec<Arc<dyn Tool>>, ToolFilterError> {
        let mut builder = ToolSet::builder(&self.workspace)
            .catalogue(self.catalogue)
            .web_search(self.web_search);
        for root in self.roots {
            builder = builder.allow_root(root);
        }
        let mut set = builder.build();
        for tool in self.extra {
            set.push(tool);
        }
        let mut tools = set.into_tools();
        tools.retain(|t| !self.own.iter().any(|o| o.name() == t.name()));
        tools.extend(self.own);
        // An SDK name (a session's stored list, an old flag) means the catalogue's tool.
        let catalogue = self.catalogue;
        let filter = self.filter.renamed(|name| {
            catalogue
                .name_of(name)
                .filter(|_| catalogue.base_of(name).is_none())
        });
        if let Some(check) = &self.check {
            let known: Vec<&str> = tools.iter().map(|t| t.name()).collect();
            filter.check(&known, &check.also_known, check.valid_names)?;
        }
        // A capability offered whole (zut's web tools): one of its names names all of it,
        // and what the filter keeps of it is kept only whole (read-only keeps none).
        let filter = filter.grouped(|name| catalogue.group(name));
        let mut tools = filter.apply(tools);
        catalogue.retain_whole_groups(&mut tools);
        Ok(tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[Arc<dyn Tool>]) -> Vec<&str> {
        tools.iter().map(|t| t.name()).collect()
    }

    #[test]
    fn filters_allow_deny_and_read_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut request = ToolRequest::new(dir.path());
        request.filter = ToolFilter::only(["read_file".into(), "bash".into()]);
        let offered = request.build().expect("valid");
        let mut offered = names(&offered);
        offered.sort();
        assert_eq!(offered, ["bash", "read_file"]);

        let mut request = ToolRequest::new(dir.path());
        request.filter = ToolFilter::all().deny(["bash".into()]).read_only();
        let offered = request.build().expect("valid");
        assert!(!names(&offered).contains(&"bash"));
        assert!(!names(&offered).contains(&"write_file"));
        assert!(names(&offered).contains(&"read_file"));

        let mut request = ToolRequest::new(dir.path());
        request.filter = ToolFilter::nothing();
        assert!(request.build().expect("valid").is_empty());

        let filter = ToolFilter::lists(Some(vec!["Bash".into()]), vec!["Read".into()]).canonical();
        assert_eq!(filter.allowed(), Some(&["bash".to_string()][..]));
        assert_eq!(filter.denied(), ["read_file"]);
    }

    #[test]
    fn a_catalogue_offers_its_names_and_takes_the_sdks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zero);
        request.filter = ToolFilter::only(["list_dir".into(), "update_plan".into()]);
        request.check = Some(ToolCheck::default());
        let offered = request.build().expect("valid");
        assert_eq!(names(&offered), ["list_directory", "update_plan"]);
        let mut request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zut);
        request.filter = ToolFilter::all().deny(["read_file".into(), "bash".into()]);
        let offered = request.build().expect("valid");
        let offered = names(&offered);
        assert!(
            offered.contains(&"write") && !offered.contains(&"read"),
            "{offered:?}"
        );
        assert!(!offered.contains(&"bash"));
    }

    #[test]
    fn zuts_web_tools_are_offered_allowed_and_denied_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let web = ["web_search", "web_open", "web_find", "web_click"];
        let request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zut);
        assert!(request.web_search.is_some(), "zut's default backend");
        let offered = request.build().expect("valid");
        assert!(
            web.iter().all(|w| names(&offered).contains(w)),
            "{:?}",
            names(&offered)
        );
        let mut request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zut);
        request.filter = ToolFilter::only(["read".into(), "web_search".into()]);
        request.check = Some(ToolCheck::default());
        let offered = request.build().expect("valid");
        assert_eq!(names(&offered)[1..], web);
        let mut request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zut);
        request.filter = ToolFilter::all().deny(["web_find".into()]);
        let offered = request.build().expect("valid");
        assert!(!names(&offered).iter().any(|n| n.starts_with("web_")));
        // Read-only would keep web_find alone, which finds nothing without web_open.
        let mut request = ToolRequest::with_catalogue(dir.path(), Catalogue::Zut);
        request.filter = ToolFilter::all().read_only();
        let offered = request.build().expect("valid");
        assert!(!names(&offered).iter().any(|n| n.starts_with("web_")));
        // The SDK's catalogue: no web_search without a backend, never web_open.
        let mut request = ToolRequest::new(dir.path());
        request.web_search = None;
        let offered = request.build().expect("valid");
        assert!(names(&offered).contains(&"web_fetch"));
        assert!(!names(&offered).contains(&"web_open"));
    }

    #[test]
    fn checks_names_in_order() {
        let known = ["bash", "read_file"];
        let check = |filter: ToolFilter| filter.check(&known, &["mcp_x".into()], true);
        assert_eq!(
            check(ToolFilter::only(["bash".into(), "mcp_x".into()])),
            Ok(())
        );
        assert_eq!(
            check(ToolFilter::only(["b c".into()])),
            Err(ToolFilterError::InvalidName("b c".into()))
        );
        assert_eq!(
            check(ToolFilter::all().deny(["nope".into()])),
            Err(ToolFilterError::UnknownTool {
                name: "nope".into(),
                available: vec!["bash".into(), "read_file".into()],
            })
        );
        assert_eq!(
            check(ToolFilter::lists(
                Some(vec!["bash".into()]),
                vec!["bash".into()]
            )),
            Err(ToolFilterError::EnabledAndDisabled("bash".into()))
        );
        assert_eq!(
            ToolFilter::only(["b c".into()]).check(&known, &[], false),
            Err(ToolFilterError::UnknownTool {
                name: "b c".into(),
                available: vec!["bash".into(), "read_file".into()],
            })
        );
    }
}
