//! Diagnostics as text: Zero's `path:line:col: severity: message` lines
//! (`internal/lsp/diagnostics.go`) and zut's deduplicated, grouped summary
//! (`packages/agent/lsp/diagnostics.go`).

use std::collections::{BTreeSet, HashMap, HashSet};

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};

/// A diagnostic of a file, for the summaries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileDiagnostic {
    /// The file, as shown (relative to the workspace when inside it).
    pub(crate) path: String,
    /// The diagnostic.
    pub(crate) diagnostic: Diagnostic,
}

/// Zero's severity label: an unset severity counts as an error.
pub(crate) fn severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

/// Whether `d` is an error (or has no severity).
pub(crate) fn is_error(d: &Diagnostic) -> bool {
    matches!(d.severity, None | Some(DiagnosticSeverity::ERROR))
}

fn collapse(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One diagnostic as Zero prints it: `path:line:col: severity: message` (1-based).
pub(crate) fn zero_line(path: &str, d: &Diagnostic) -> String {
    format!(
        "{path}:{}:{}: {}: {}",
        d.range.start.line + 1,
        d.range.start.character + 1,
        severity(d),
        collapse(&d.message)
    )
}

/// Zero's block after a change to `path` (empty when there are no errors): at most `max`
/// error lines (the rest counted).
pub(crate) fn zero_after_edit(path: &str, diagnostics: &[Diagnostic], max: usize) -> String {
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| is_error(d)).collect();
    if errors.is_empty() {
        return String::new();
    }
    let mut lines: Vec<String> = errors
        .iter()
        .take(max)
        .map(|d| zero_line(path, d))
        .collect();
    if errors.len() > max {
        lines.push(format!("… and {} more", errors.len() - max));
    }
    format!(
        "\n\nDiagnostics in {path} after this change (fix any errors you introduced):\n{}",
        lines.join("\n")
    )
}

// zut's summary.

/// zut's hard cap of diagnostics in a summary.
pub(crate) const ZUT_CAP: usize = 50;
/// zut's cap after a write or an edit.
pub(crate) const ZUT_WRITE_CAP: usize = 8;

fn zut_severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Some(DiagnosticSeverity::ERROR) => "error",
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "info",
    }
}

fn zut_rank(d: &Diagnostic) -> u8 {
    match zut_severity(d) {
        "error" => 0,
        "warning" => 1,
        "info" => 2,
        _ => 3,
    }
}

fn code(d: &Diagnostic) -> String {
    match &d.code {
        Some(NumberOrString::String(s)) => s.clone(),
        Some(NumberOrString::Number(n)) => n.to_string(),
        None => String::new(),
    }
}

/// zut's key of one report: path, severity, code, start and message.
fn report_key(d: &FileDiagnostic) -> String {
    let start = d.diagnostic.range.start;
    format!(
        "{}\0{}\0{}\0{}:{}\0{}",
        d.path,
        zut_severity(&d.diagnostic),
        code(&d.diagnostic),
        start.line,
        start.character,
        collapse(&d.diagnostic.message)
    )
}

/// zut's key of an issue wherever it is: severity, code and message.
pub(crate) fn issue_key(d: &Diagnostic) -> String {
    format!("{}\0{}\0{}", zut_severity(d), code(d), collapse(&d.message))
}

/// Deduplicated, errors first, then by path, position, message and code.
fn deduplicate(input: &[FileDiagnostic]) -> Vec<FileDiagnostic> {
    let mut seen = HashSet::new();
    let mut out: Vec<FileDiagnostic> = input
        .iter()
        .filter(|d| seen.insert(report_key(d)))
        .cloned()
        .collect();
    out.sort_by(|a, b| {
        let (x, y) = (&a.diagnostic, &b.diagnostic);
        zut_rank(x)
            .cmp(&zut_rank(y))
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| x.range.start.line.cmp(&y.range.start.line))
            .then_with(|| x.range.start.character.cmp(&y.range.start.character))
            .then_with(|| x.message.cmp(&y.message))
            .then_with(|| code(x).cmp(&code(y)))
    });
    out
}

fn truncate(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let kept: String = text.chars().take(limit - 1).collect();
    format!("{kept}…")
}

/// One diagnostic as zut prints it: `SEVERITY: path:line:col [code] message`.
fn zut_line(d: &FileDiagnostic) -> String {
    let code = code(&d.diagnostic);
    let code = match code.is_empty() {
        true => String::new(),
        false => format!(" [{code}]"),
    };
    format!(
        "{}: {}:{}:{}{code} {}",
        zut_severity(&d.diagnostic).to_ascii_uppercase(),
        d.path,
        d.diagnostic.range.start.line + 1,
        d.diagnostic.range.start.character + 1,
        truncate(&collapse(&d.diagnostic.message), 220)
    )
}

/// The module a missing-module error names (zut's four patterns), for errors only.
fn missing_module(d: &Diagnostic) -> Option<String> {
    if zut_severity(d) != "error" {
        return None;
    }
    let message = &d.message;
    let lower = message.to_ascii_lowercase();
    let quoted_after = |prefix: &str| -> Option<String> {
        let at = lower.find(prefix)? + prefix.len();
        let rest = &message[at..];
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let inner = &rest[1..];
        let end = inner.find(['"', '\''])?;
        (end > 0)
            .then(|| inner[..end].to_string())
            .filter(|_| quote == '"' || quote == '\'')
    };
    if let Some(name) = quoted_after("cannot find module ") {
        return Some(name);
    }
    if let Some(name) = quoted_after("could not find a declaration file for module ")
        .or_else(|| quoted_after("could not find module "))
    {
        return Some(name);
    }
    for verb in ["cannot resolve ", "could not resolve "] {
        for what in ["module ", "import ", "package "] {
            let prefix = format!("{verb}{what}");
            if let Some(at) = lower.find(&prefix) {
                let rest = &message[at + prefix.len()..];
                let rest = rest.trim_start_matches(['"', '\'']);
                let name: String = rest
                    .chars()
                    .take_while(|c| !matches!(c, '"' | '\'' | ' '))
                    .collect();
                if !name.is_empty() {
                    return Some(name);
                }
            }
        }
    }
    // `import .*?(["'][^"']+["']).*could not be resolved`
    let import = lower.find("import ")?;
    let resolved = lower.rfind("could not be resolved")?;
    let between = &message[import + "import ".len()..resolved.max(import + "import ".len())];
    let start = between.find(['"', '\''])?;
    let inner = &between[start + 1..];
    let end = inner.find(['"', '\''])?;
    (end > 0).then(|| inner[..end].to_string())
}

/// zut's `SummarizeDiagnostics`: a count line, then each diagnostic (repeated issues
/// grouped, the cascade under a missing-module error folded), at most `cap`.
pub(crate) fn zut_summary(input: &[FileDiagnostic], cap: usize) -> String {
    let cap = if cap == 0 { ZUT_CAP } else { cap };
    let diagnostics = deduplicate(input);
    if diagnostics.is_empty() {
        return "No diagnostics.".into();
    }
    let mut counts = [0usize; 4];
    for d in &diagnostics {
        counts[zut_rank(&d.diagnostic) as usize] += 1;
    }
    let parts: Vec<String> = ["error", "warning", "info", "hint"]
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(label, n)| format!("{n} {label}{}", if n == 1 { "" } else { "s" }))
        .collect();
    let mut lines = vec![format!(
        "Diagnostics: {} (deduplicated {})",
        parts.join(", "),
        diagnostics.len()
    )];
    let secondary = module_secondary(&diagnostics);
    let mut groups: HashMap<String, Vec<&FileDiagnostic>> = HashMap::new();
    for d in &diagnostics {
        if !secondary.contains(&report_key(d)) {
            groups.entry(issue_key(&d.diagnostic)).or_default().push(d);
        }
    }
    let mut emitted = HashSet::new();
    let mut emitted_secondary = HashSet::new();
    let mut displayed = 0usize;
    for d in &diagnostics {
        if displayed >= cap {
            break;
        }
        if secondary.contains(&report_key(d)) {
            continue;
        }
        let key = issue_key(&d.diagnostic);
        let bucket = &groups[&key];
        let paths: BTreeSet<&str> = bucket.iter().map(|d| d.path.as_str()).collect();
        if bucket.len() >= 3 || paths.len() >= 2 {
            if !emitted.insert(key) {
                continue;
            }
            lines.push(repeated(bucket));
            displayed += bucket.len();
        } else {
            lines.push(format!("- {}", zut_line(d)));
            displayed += 1;
        }
        if displayed < cap
            && missing_module(&d.diagnostic).is_some()
            && !emitted_secondary.contains(&d.path)
        {
            if let Some((line, n)) = secondary_line(&d.path, &diagnostics, &secondary) {
                lines.push(format!("- {line}"));
                emitted_secondary.insert(d.path.clone());
                displayed += n;
            }
        }
    }
    let omitted = diagnostics.len() - displayed.min(diagnostics.len());
    if omitted > 0 {
        lines.push(format!(
            "... truncated; {omitted} diagnostics omitted (hard cap {cap})"
        ));
    }
    lines.join("\n")
}

fn repeated(bucket: &[&FileDiagnostic]) -> String {
    let paths: BTreeSet<&str> = bucket.iter().map(|d| d.path.as_str()).collect();
    let lines: BTreeSet<u32> = bucket
        .iter()
        .map(|d| d.diagnostic.range.start.line + 1)
        .collect();
    let mut example: Vec<&str> = Vec::new();
    for d in bucket {
        if !example.contains(&d.path.as_str()) && example.len() < 3 {
            example.push(&d.path);
        }
    }
    let extra = match example.is_empty() {
        true => String::new(),
        false => format!(" (examples: {})", example.join(", ")),
    };
    let first = &bucket[0].diagnostic;
    let code = match code(first) {
        c if c.is_empty() => String::new(),
        c => format!(" [{c}]"),
    };
    let mut place = format!("{} occurrences across {} files", bucket.len(), paths.len());
    if paths.len() == 1 {
        let shown: Vec<String> = lines.iter().take(3).map(u32::to_string).collect();
        place = format!(
            "{} occurrences in {} (lines: {})",
            bucket.len(),
            example.first().copied().unwrap_or_default(),
            shown.join(", ")
        );
    }
    format!(
        "{}: repeated {place}{code} {}{extra}",
        zut_severity(first).to_ascii_uppercase(),
        truncate(&collapse(&first.message), 220)
    )
}

/// The report keys of the diagnostics folded under a missing-module error of their file
/// (files with such an error and at least two others).
fn module_secondary(diagnostics: &[FileDiagnostic]) -> HashSet<String> {
    let mut by_file: HashMap<&str, Vec<&FileDiagnostic>> = HashMap::new();
    for d in diagnostics {
        by_file.entry(&d.path).or_default().push(d);
    }
    let mut out = HashSet::new();
    for file in by_file.values() {
        if !file.iter().any(|d| missing_module(&d.diagnostic).is_some()) {
            continue;
        }
        let others: Vec<&&FileDiagnostic> = file
            .iter()
            .filter(|d| missing_module(&d.diagnostic).is_none())
            .collect();
        if others.len() >= 2 {
            out.extend(others.iter().map(|d| report_key(d)));
        }
    }
    out
}

fn secondary_line(
    path: &str,
    diagnostics: &[FileDiagnostic],
    secondary: &HashSet<String>,
) -> Option<(String, usize)> {
    let count = diagnostics
        .iter()
        .filter(|d| d.path == path && secondary.contains(&report_key(d)))
        .count();
    if count == 0 {
        return None;
    }
    let modules: BTreeSet<String> = diagnostics
        .iter()
        .filter(|d| d.path == path)
        .filter_map(|d| missing_module(&d.diagnostic))
        .collect();
    let modules: Vec<String> = modules.into_iter().collect();
    Some((
        format!(
            "SECONDARY: grouped {count} additional diagnostics in {path} under module-resolution error ({}). Fix the root import error first, then re-check.",
            modules.join(", ")
        ),
        count,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn diag(
        line: u32,
        col: u32,
        severity: Option<DiagnosticSeverity>,
        message: &str,
    ) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, col), Position::new(line, col + 1)),
            severity,
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    fn at(path: &str, d: Diagnostic) -> FileDiagnostic {
        FileDiagnostic {
            path: path.into(),
            diagnostic: d,
        }
    }

    #[test]
    fn zero_prints_errors_only_in_its_block() {
        let diagnostics = [
            diag(
                2,
                4,
                Some(DiagnosticSeverity::ERROR),
                "Type \"str\" is not\n  assignable",
            ),
            diag(0, 0, Some(DiagnosticSeverity::WARNING), "unused"),
            diag(5, 0, None, "no severity"),
        ];
        assert_eq!(
            zero_after_edit("src/a.py", &diagnostics, 10),
            "\n\nDiagnostics in src/a.py after this change (fix any errors you introduced):\n\
             src/a.py:3:5: error: Type \"str\" is not assignable\n\
             src/a.py:6:1: error: no severity"
        );
        assert!(zero_after_edit("a.py", &diagnostics[1..2], 10).is_empty());
        let many: Vec<Diagnostic> = (0..5)
            .map(|i| diag(i, 0, Some(DiagnosticSeverity::ERROR), "x"))
            .collect();
        assert!(zero_after_edit("a.py", &many, 2).ends_with("a.py:2:1: error: x\n… and 3 more"));
    }

    #[test]
    fn zut_summarizes_counts_groups_and_caps() {
        let e = Some(DiagnosticSeverity::ERROR);
        let w = Some(DiagnosticSeverity::WARNING);
        let input = vec![
            at("b.ts", diag(1, 0, w, "unused variable")),
            at("a.ts", diag(3, 2, e, "Type 'string' is not assignable")),
            at("a.ts", diag(3, 2, e, "Type 'string' is not assignable")),
            at("c.ts", diag(0, 0, e, "same")),
            at("d.ts", diag(0, 0, e, "same")),
        ];
        assert_eq!(
            zut_summary(&input, ZUT_CAP),
            "Diagnostics: 3 errors, 1 warning (deduplicated 4)\n\
             - ERROR: a.ts:4:3 Type 'string' is not assignable\n\
             ERROR: repeated 2 occurrences across 2 files same (examples: c.ts, d.ts)\n\
             - WARNING: b.ts:2:1 unused variable"
        );
        assert_eq!(zut_summary(&[], ZUT_CAP), "No diagnostics.");
        let capped = zut_summary(&input, 1);
        assert!(
            capped.ends_with("... truncated; 3 diagnostics omitted (hard cap 1)"),
            "{capped}"
        );
    }

    #[test]
    fn zut_folds_the_cascade_under_a_missing_module() {
        let e = Some(DiagnosticSeverity::ERROR);
        let input = vec![
            at(
                "m.py",
                diag(0, 7, e, "Import \"numpy\" could not be resolved"),
            ),
            at("m.py", diag(3, 0, e, "\"np\" is not defined")),
            at("m.py", diag(4, 0, e, "\"arr\" is unknown")),
        ];
        let summary = zut_summary(&input, ZUT_CAP);
        assert!(
            summary.contains("- SECONDARY: grouped 2 additional diagnostics in m.py under module-resolution error (numpy)."),
            "{summary}"
        );
        assert_eq!(
            missing_module(&diag(0, 0, e, "Cannot find module 'react' or its types")),
            Some("react".into())
        );
        assert_eq!(
            missing_module(&diag(0, 0, e, "could not resolve import foo/bar here")),
            Some("foo/bar".into())
        );
    }
}
