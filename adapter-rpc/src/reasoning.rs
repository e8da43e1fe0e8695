//! zut's reasoning-level names: normalisation of `set_reasoning` / `--reasoning` input.

use agent_core::ReasoningLevel;

/// The failure text of `set_reasoning` for a level outside the accepted set.
pub const REASONING_ERROR: &str = "reasoning must be off|minimum|low|medium|high|xhigh|max";

/// Normalises a level the way zut does: trimmed and lower-cased, then `""`, `off`, `none`,
/// `no`, `false`, `disabled` → `""` (off); `min`, `minimal`, `minimum` → `minimum`; `med` →
/// `medium`; `hi` → `high`; `xhigh` and `maximum` → `xhigh`; anything else is returned
/// lower-cased (and fails [`parse`] unless it is a level name). Note that `maximum` is
/// `xhigh`, not `max`.
pub fn normalize(input: &str) -> String {
    let lower = input.trim().to_lowercase();
    match lower.as_str() {
        "" | "off" | "none" | "no" | "false" | "disabled" => String::new(),
        "min" | "minimal" | "minimum" => "minimum".into(),
        "med" | "medium" => "medium".into(),
        "hi" | "high" => "high".into(),
        "xhigh" | "maximum" => "xhigh".into(),
        _ => lower,
    }
}

/// Parses a level (after [`normalize`]); `Err` carries [`REASONING_ERROR`].
pub fn parse(input: &str) -> Result<ReasoningLevel, &'static str> {
    Ok(match normalize(input).as_str() {
        "" => ReasoningLevel::Off,
        "minimum" => ReasoningLevel::Minimum,
        "low" => ReasoningLevel::Low,
        "medium" => ReasoningLevel::Medium,
        "high" => ReasoningLevel::High,
        "xhigh" => ReasoningLevel::Xhigh,
        "max" => ReasoningLevel::Max,
        _ => return Err(REASONING_ERROR),
    })
}

/// The wire name of a level: `""` for off, else the canonical name.
pub fn wire_name(level: ReasoningLevel) -> &'static str {
    match level {
        ReasoningLevel::Off => "",
        other => other.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_follow_zut() {
        for (input, want) in [
            ("off", ""),
            (" None ", ""),
            ("disabled", ""),
            ("minimal", "minimum"),
            ("MIN", "minimum"),
            ("med", "medium"),
            ("hi", "high"),
            ("maximum", "xhigh"),
            ("max", "max"),
            ("low", "low"),
        ] {
            let level = parse(input).expect(input);
            assert_eq!(wire_name(level), want, "{input}");
        }
        assert_eq!(parse("extreme"), Err(REASONING_ERROR));
        assert_eq!(normalize(" Extreme "), "extreme");
    }
}
