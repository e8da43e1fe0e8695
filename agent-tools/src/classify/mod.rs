//! Risk classification of shell command lines.
//!
//! The command line is split into simple commands at unquoted control operators (`|`, `||`,
//! `&&`, `;`, `&`, newlines, subshell parentheses), with command and process substitutions
//! and `bash -c` / `eval` strings classified recursively and here-document bodies skipped.
//! Each simple command's words come from a real shell-words parser; its program (after
//! wrappers such as `sudo`, `env`, `timeout`) and arguments decide the categories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agent_core::permission::{
    Assessment, Block, BlockCode, PermissionAction, Risk, RiskCategory, RiskLevel,
};

use crate::workspace::{normalize, Workspace};

mod simple;

use agent_core::permission::shell::{split_line, Op};
use simple::{analyze_simple, Stage};

/// Canonical reason for a shell command without other findings.
pub const SHELL_REASON: &str = "unsandboxed shell command requires approval";
/// Canonical reason for a command that reaches the network.
pub const NETWORK_REASON: &str = "network access requires approval";

/// The classification of one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAssessment {
    /// Level and categories.
    pub risk: Risk,
    /// Sandbox metadata when the command needs attention (network, destructive, piped
    /// installer, writes outside the workspace); its action is `prompt`.
    pub block: Option<Block>,
    /// A short reason for permission prompts.
    pub reason: String,
    /// What was found, one phrase per finding (e.g. `"network: curl"`).
    pub findings: Vec<String>,
}

impl CommandAssessment {
    /// As an [`Assessment`] for the permission gate.
    pub fn into_assessment(self) -> Assessment {
        Assessment {
            risk: self.risk,
            block: self.block,
            reason: Some(self.reason),
        }
    }
}

#[derive(Debug, Default)]
struct Findings {
    categories: BTreeSet<RiskCategory>,
    network: Vec<String>,
    destructive: Vec<String>,
    piped: Vec<String>,
    outside: Vec<String>,
    notes: Vec<String>,
}

impl Findings {
    fn network(&mut self, what: impl Into<String>) {
        self.categories.insert(RiskCategory::Network);
        self.network.push(what.into());
    }

    fn destructive(&mut self, what: impl Into<String>) {
        self.categories.insert(RiskCategory::Destructive);
        self.destructive.push(what.into());
    }

    fn outside(&mut self, path: impl Into<String>) {
        self.categories.insert(RiskCategory::OutOfWorkspace);
        self.outside.push(path.into());
    }
}

/// Classifies `command` as run by the `bash` tool in `workspace`.
///
/// Every command is at least `shell` (high). Network tools make it critical (found by
/// command analysis), as do destructive commands, piped installers and writes outside the
/// workspace. The block's action is `prompt`: the shell is not confined, so the user decides.
pub fn classify_command(command: &str, workspace: &Workspace) -> CommandAssessment {
    let mut f = Findings::default();
    f.categories.insert(RiskCategory::Shell);
    analyze_line(command, workspace, &mut f, 0);
    let mut risk = Risk::from_categories(f.categories.iter().copied());
    if !f.network.is_empty() {
        // Network found by command analysis is critical (Zero's classifier does the same).
        risk.level = RiskLevel::Critical;
    }
    let mut findings = Vec::new();
    findings.extend(f.piped.iter().map(|s| format!("piped installer: {s}")));
    findings.extend(f.destructive.iter().map(|s| format!("destructive: {s}")));
    findings.extend(f.outside.iter().map(|s| format!("outside workspace: {s}")));
    findings.extend(f.network.iter().map(|s| format!("network: {s}")));
    findings.extend(f.notes.iter().cloned());
    let block = |code, reason: String, path: Option<String>| Block {
        code,
        tool_name: Some("bash".to_string()),
        action: PermissionAction::Prompt,
        risk: risk.clone(),
        path,
        reason,
        recoverable: true,
    };
    let (block, reason) = if let Some(first) = f.piped.first() {
        let reason = format!("piped installer requires approval: {first}");
        (
            Some(block(BlockCode::Network, reason.clone(), None)),
            reason,
        )
    } else if let Some(first) = f.destructive.first() {
        let reason = format!("destructive command requires approval: {first}");
        (
            Some(block(BlockCode::DestructiveCommand, reason.clone(), None)),
            reason,
        )
    } else if let Some(first) = f.outside.first() {
        let reason = format!("shell command touches a path outside the workspace: {first}");
        (
            Some(block(
                BlockCode::OutsideWorkspace,
                reason.clone(),
                Some(first.clone()),
            )),
            reason,
        )
    } else if !f.network.is_empty() {
        let reason = NETWORK_REASON.to_string();
        (
            Some(block(BlockCode::Network, reason.clone(), None)),
            reason,
        )
    } else if f.categories.contains(&RiskCategory::UnparseableCommand) {
        (
            None,
            "shell command could not be parsed; approval required".to_string(),
        )
    } else {
        (None, SHELL_REASON.to_string())
    };
    CommandAssessment {
        risk,
        block,
        reason,
        findings,
    }
}

const MAX_DEPTH: usize = 8;

fn analyze_line(line: &str, ws: &Workspace, f: &mut Findings, depth: usize) {
    if depth > MAX_DEPTH {
        f.categories.insert(RiskCategory::UnparseableCommand);
        f.notes.push("nesting too deep".to_string());
        return;
    }
    let split = split_line(line);
    if split.unparseable {
        f.categories.insert(RiskCategory::UnparseableCommand);
        f.notes.push("unbalanced quotes or parentheses".to_string());
    }
    // Group segments into pipelines.
    let mut pipeline: Vec<Stage> = Vec::new();
    for (index, (text, op)) in split.segments.iter().enumerate() {
        let nested: Vec<&str> = split
            .nested
            .iter()
            .filter(|(i, _)| *i == index)
            .map(|(_, s)| s.as_str())
            .collect();
        let mut nested_fetch = false;
        for body in &nested {
            let mut inner = Findings::default();
            analyze_line(body, ws, &mut inner, depth + 1);
            nested_fetch |= !inner.network.is_empty();
            merge(f, inner);
        }
        let stage = match shell_words::split(text) {
            Ok(words) => analyze_simple(&words, ws, f, depth),
            Err(_) => {
                f.categories.insert(RiskCategory::UnparseableCommand);
                f.notes.push(format!("cannot parse {text:?}"));
                Stage::default()
            }
        };
        if nested_fetch && stage.runs_code {
            f.categories.insert(RiskCategory::PipedInstaller);
            f.piped
                .push(format!("{} runs downloaded code", stage.program));
        }
        pipeline.push(stage);
        if *op != Op::Pipe {
            check_pipeline(&pipeline, f);
            pipeline.clear();
        }
    }
    check_pipeline(&pipeline, f);
}

fn merge(into: &mut Findings, from: Findings) {
    into.categories.extend(from.categories);
    into.network.extend(from.network);
    into.destructive.extend(from.destructive);
    into.piped.extend(from.piped);
    into.outside.extend(from.outside);
    into.notes.extend(from.notes);
}

fn check_pipeline(stages: &[Stage], f: &mut Findings) {
    let Some(fetch) = stages.iter().position(|s| s.fetches) else {
        return;
    };
    if let Some(shell) = stages[fetch + 1..].iter().find(|s| s.interpreter) {
        f.categories.insert(RiskCategory::PipedInstaller);
        f.piped
            .push(format!("{} | {}", stages[fetch].program, shell.program));
    }
}

/// What one simple command is, for pipeline checks.
#[cfg(test)]
mod tests;
