//! Tool names: `mcp_<server>_<tool>`, the way Zero builds them, capped and unique.

/// Longest tool name offered to a model (OpenAI's and Anthropic's limit).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Zero's sanitiser for one part: lower-cased, trimmed, `-` and every run of other
/// characters outside `[a-z0-9_]` turned into `_`, leading and trailing `_` removed.
fn sanitize_part(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_run = false;
    for c in value.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
            in_run = false;
        } else if c == '-' {
            out.push('_');
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out.trim_matches('_').to_string()
}

/// The name Zero gives tool `tool` of server `server` (before capping):
/// `mcp_<server>_<tool>`, with `server` and `tool` standing in for empty parts.
pub fn zero_tool_name(server: &str, tool: &str) -> String {
    let server = match sanitize_part(server) {
        s if s.is_empty() => "server".to_string(),
        s => s,
    };
    let tool = match sanitize_part(tool) {
        t if t.is_empty() => "tool".to_string(),
        t => t,
    };
    format!("mcp_{server}_{tool}")
}

/// FNV-1a, for short stable suffixes.
fn fnv1a(text: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Cuts `name` (ASCII) so that `suffix` fits within [`MAX_TOOL_NAME_LEN`].
fn with_suffix(name: &str, suffix: &str) -> String {
    let keep = MAX_TOOL_NAME_LEN
        .saturating_sub(suffix.len())
        .min(name.len());
    format!("{}{suffix}", name[..keep].trim_end_matches('_'))
}

/// The model-facing name of `tool` of `server`: Zero's `mcp_<server>_<tool>`; when longer
/// than 64 characters, cut and ended with a hash of the full name; when `taken` already
/// holds it (two tools that sanitise alike), ended with `_2`, `_3`, ….
pub fn tool_name(server: &str, tool: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let full = zero_tool_name(server, tool);
    let base = if full.len() > MAX_TOOL_NAME_LEN {
        let hash = fnv1a(&format!("{server}\u{0}{tool}"));
        with_suffix(&full, &format!("_{hash:08x}"))
    } else {
        full
    };
    if !taken(&base) {
        return base;
    }
    (2u32..)
        .map(|n| with_suffix(&base, &format!("_{n}")))
        .find(|candidate| !taken(candidate))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(_: &str) -> bool {
        false
    }

    #[test]
    fn names_follow_zero() {
        assert_eq!(
            zero_tool_name("GitHub", "create-issue"),
            "mcp_github_create_issue"
        );
        assert_eq!(zero_tool_name("my server", "a.b/c"), "mcp_my_server_a_b_c");
        assert_eq!(zero_tool_name("--", "__"), "mcp_server_tool");
        assert_eq!(zero_tool_name("ünï", "x"), "mcp_n_x");
    }

    #[test]
    fn long_names_are_capped_with_a_stable_hash() {
        let long = "t".repeat(100);
        let a = tool_name("srv", &long, &free);
        let b = tool_name("srv", &format!("{long}x"), &free);
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert!(a.starts_with("mcp_srv_ttt"));
        assert_ne!(a, b, "different tools keep different names");
        assert_eq!(a, tool_name("srv", &long, &free), "stable");
    }

    #[test]
    fn collisions_get_a_counter() {
        let first = tool_name("s", "a-b", &free);
        let second = tool_name("s", "a_b", &|n| n == first);
        assert_eq!(first, "mcp_s_a_b");
        assert_eq!(second, "mcp_s_a_b_2");
        let long = "x".repeat(80);
        let capped = tool_name("s", &long, &free);
        let again = tool_name("s", &long, &|n| n == capped);
        assert!(again.len() <= MAX_TOOL_NAME_LEN && again.ends_with("_2"));
    }

    #[test]
    fn names_use_only_safe_characters() {
        for (server, tool) in [("a b", "c\u{0}d"), ("é", "🙂"), ("x", &"y".repeat(200))] {
            let name = tool_name(server, tool, &free);
            assert!(name.len() <= MAX_TOOL_NAME_LEN);
            assert!(name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }
    }
}
