//! Splitting a shell command line into simple commands at unquoted control operators
//! (`|`, `||`, `&&`, `;`, `&`, newlines, subshell parentheses), with the bodies of command
//! and process substitutions set aside and here-document bodies skipped.
//!
//! The one parser of command lines in the workspace: agent-tools' risk classifier and the
//! permission rules ([`super::rules`]) both read commands through it, so a rule sees the
//! same simple commands the classifier judged (`git status; rm -rf /` is two commands).

/// A control operator after a simple command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `|` or `|&`: the next command reads this one's output.
    Pipe,
    /// Any other operator, or the end of the line.
    Other,
}

/// The result of splitting a command line.
#[derive(Debug, Default)]
pub struct Split {
    /// Simple commands with the operator that follows each.
    pub segments: Vec<(String, Op)>,
    /// Bodies of `$(…)`, backticks and process substitutions, per segment index.
    pub nested: Vec<(usize, String)>,
    /// Quotes or parentheses were left open.
    pub unparseable: bool,
}

/// Finds the index of the `)` closing the `(` at `open`, honouring quotes and nesting.
pub fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A backtick command substitution starting at `chars[i]` (inside double quotes or not): its
/// body goes to `out.nested` and `cur` gets a placeholder; unclosed, the line is unparseable.
/// Returns the index after it.
fn backtick(chars: &[char], i: usize, out: &mut Split, cur: &mut String) -> usize {
    match chars[i + 1..].iter().position(|&x| x == '`') {
        Some(off) => {
            let body: String = chars[i + 1..i + 1 + off].iter().collect();
            out.nested.push((out.segments.len(), body));
            cur.push_str("SUBST");
            i + off + 2
        }
        None => {
            out.unparseable = true;
            chars.len()
        }
    }
}

/// Splits a command line into simple commands (see the module docs).
pub fn split_line(line: &str) -> Split {
    let chars: Vec<char> = line.chars().collect();
    let n = chars.len();
    let mut out = Split::default();
    let mut cur = String::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    let at_word_start = |cur: &str| cur.is_empty() || cur.ends_with(char::is_whitespace);
    macro_rules! finish {
        ($op:expr) => {{
            let text = std::mem::take(&mut cur);
            if !text.trim().is_empty() {
                out.segments.push((text, $op));
            } else if $op == Op::Pipe {
                // `| |` or a leading pipe: keep the pipeline connected.
                out.segments.push((String::new(), $op));
            }
        }};
    }
    while i < n {
        let c = chars[i];
        match c {
            '\\' => {
                cur.push(c);
                if i + 1 < n {
                    cur.push(chars[i + 1]);
                }
                i += 2;
            }
            '\'' => match chars[i + 1..].iter().position(|&x| x == '\'') {
                Some(off) => {
                    cur.extend(&chars[i..=i + 1 + off]);
                    i += off + 2;
                }
                None => {
                    out.unparseable = true;
                    cur.extend(&chars[i..]);
                    i = n;
                }
            },
            '"' => {
                cur.push('"');
                i += 1;
                let mut closed = false;
                while i < n {
                    match chars[i] {
                        '\\' => {
                            cur.push('\\');
                            if i + 1 < n {
                                cur.push(chars[i + 1]);
                            }
                            i += 2;
                        }
                        '"' => {
                            cur.push('"');
                            i += 1;
                            closed = true;
                            break;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            match matching_paren(&chars, i + 1) {
                                Some(end) => {
                                    let body: String = chars[i + 2..end].iter().collect();
                                    out.nested.push((out.segments.len(), body));
                                    cur.push_str("SUBST");
                                    i = end + 1;
                                }
                                None => {
                                    out.unparseable = true;
                                    i = n;
                                }
                            }
                        }
                        '`' => i = backtick(&chars, i, &mut out, &mut cur),
                        other => {
                            cur.push(other);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    out.unparseable = true;
                }
            }
            '`' => i = backtick(&chars, i, &mut out, &mut cur),
            '$' | '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                if c == '$' && chars.get(i + 2) == Some(&'(') {
                    // Arithmetic expansion: copy it.
                    match matching_paren(&chars, i + 1) {
                        Some(end) => {
                            cur.push('0');
                            i = end + 1;
                        }
                        None => {
                            out.unparseable = true;
                            i = n;
                        }
                    }
                    continue;
                }
                match matching_paren(&chars, i + 1) {
                    Some(end) => {
                        let body: String = chars[i + 2..end].iter().collect();
                        out.nested.push((out.segments.len(), body));
                        cur.push_str(if c == '$' { "SUBST" } else { " PROCSUBST " });
                        i = end + 1;
                    }
                    None => {
                        out.unparseable = true;
                        i = n;
                    }
                }
            }
            '#' if at_word_start(&cur) => {
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
            }
            '|' => {
                if chars.get(i + 1) == Some(&'|') {
                    finish!(Op::Other);
                    i += 2;
                } else {
                    finish!(Op::Pipe);
                    i += if chars.get(i + 1) == Some(&'&') { 2 } else { 1 };
                }
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                let append = chars.get(i + 2) == Some(&'>');
                cur.push_str(if append { " &>> " } else { " &> " });
                i += if append { 3 } else { 2 };
            }
            '&' => {
                finish!(Op::Other);
                i += if chars.get(i + 1) == Some(&'&') { 2 } else { 1 };
            }
            ';' | '(' | ')' => {
                finish!(Op::Other);
                i += 1;
            }
            '\n' => {
                finish!(Op::Other);
                i += 1;
                // Skip here-document bodies.
                for (delim, strip_tabs) in std::mem::take(&mut heredocs) {
                    loop {
                        if i >= n {
                            break;
                        }
                        let end = chars[i..]
                            .iter()
                            .position(|&x| x == '\n')
                            .map_or(n, |p| i + p);
                        let line: String = chars[i..end].iter().collect();
                        i = (end + 1).min(n);
                        let line = if strip_tabs {
                            line.trim_start_matches('\t')
                        } else {
                            &line
                        };
                        if line == delim {
                            break;
                        }
                    }
                }
            }
            '>' | '<' => {
                // Keep a file-descriptor number attached to its operator.
                let mut fd = String::new();
                while cur.ends_with(|ch: char| ch.is_ascii_digit()) {
                    if let Some(d) = cur.pop() {
                        fd.insert(0, d);
                    }
                }
                if !at_word_start(&cur) {
                    cur.push_str(&fd);
                    fd.clear();
                }
                let mut op = String::from(c);
                i += 1;
                while i < n && matches!(chars[i], '>' | '<' | '&' | '|' | '-') && op.len() < 3 {
                    if chars[i] == '-' && op != "<<" {
                        break;
                    }
                    if chars[i] == '|' && op != ">" {
                        break;
                    }
                    if chars[i] == '&'
                        && chars
                            .get(i + 1)
                            .is_some_and(|x| !x.is_ascii_digit() && *x != '-')
                    {
                        break;
                    }
                    op.push(chars[i]);
                    i += 1;
                }
                if op == "<<" || op == "<<-" {
                    // Here-document: read the delimiter word.
                    while i < n && chars[i] == ' ' {
                        i += 1;
                    }
                    let start = i;
                    while i < n
                        && !chars[i].is_whitespace()
                        && !matches!(chars[i], ';' | '|' | '&' | '>' | '<')
                    {
                        i += 1;
                    }
                    let delim: String = chars[start..i]
                        .iter()
                        .filter(|ch| !matches!(ch, '\'' | '"' | '\\'))
                        .collect();
                    heredocs.push((delim, op == "<<-"));
                    continue;
                }
                // `>&2` style duplications keep their target in the operator.
                if op.ends_with('&') {
                    cur.push_str(&format!(" {fd}{op}"));
                } else {
                    cur.push_str(&format!(" {fd}{op} "));
                }
            }
            other => {
                cur.push(other);
                i += 1;
            }
        }
    }
    finish!(Op::Other);
    out
}

/// How deep substitutions may nest before a line counts as unparseable.
const MAX_DEPTH: usize = 8;

/// The simple commands of `line` as word lists (quotes removed, redirections kept as words),
/// in order, the commands of every command or process substitution included; `None` when
/// the line cannot be parsed (open quotes or parentheses, a word the shell-words parser
/// rejects, substitutions nested too deep).
pub fn simple_commands(line: &str) -> Option<Vec<Vec<String>>> {
    let mut out = Vec::new();
    collect(line, 0, &mut out).then_some(out)
}

fn collect(line: &str, depth: usize, out: &mut Vec<Vec<String>>) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let split = split_line(line);
    if split.unparseable {
        return false;
    }
    for (text, _) in &split.segments {
        match shell_words::split(text) {
            Ok(words) if words.is_empty() => {}
            Ok(words) => out.push(words),
            Err(_) => return false,
        }
    }
    split
        .nested
        .iter()
        .all(|(_, body)| collect(body, depth + 1, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_commands_split_at_operators_and_include_substitutions() {
        let words = |line| simple_commands(line).expect("parses");
        assert_eq!(words("git status -s"), vec![vec!["git", "status", "-s"]]);
        assert_eq!(
            words("git status; rm -rf /"),
            vec![vec!["git", "status"], vec!["rm", "-rf", "/"]]
        );
        assert_eq!(
            words("echo \"$(curl x)\" | sh"),
            vec![vec!["echo", "SUBST"], vec!["sh"], vec!["curl", "x"]]
        );
        assert_eq!(simple_commands("echo 'open"), None);
    }
}
