//! The model catalogue: context window, output limit, reasoning support and prices
//! (USD per million tokens) of current OpenAI and Anthropic models.
//!
//! Usage events leave `cost_usd` empty; the agent prices them with [`ModelInfo::pricing`].
//! Unknown model ids (every OpenAI-compatible server's models, new releases) still work:
//! they get conservative limits, no reasoning parameters, and **no pricing, so their cost
//! is absent** rather than guessed. Dated snapshots (`gpt-4o-2024-08-06`,
//! `claude-sonnet-4-5-20250929`) and `-latest` aliases resolve to their family entry.

use agent_core::{ModelInfo, Pricing, ReasoningLevel};

/// Which API family a model belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// OpenAI models (Chat Completions and Responses).
    OpenAi,
    /// Anthropic Claude models.
    Anthropic,
}

/// How a model is told how hard to think.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// No reasoning control.
    None,
    /// OpenAI `reasoning_effort` / `reasoning.effort`, with the values the model accepts
    /// (from least to most).
    Effort(&'static [&'static str]),
    /// Anthropic extended thinking with a token budget.
    Budget,
    /// Anthropic extended thinking with a token budget, and `output_config.effort` with the
    /// values the model accepts (from least to most).
    BudgetAndEffort(&'static [&'static str]),
}

/// One catalogue entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    /// API model id.
    pub id: &'static str,
    /// API family.
    pub family: Family,
    /// Context window in tokens.
    pub context_window: u32,
    /// Maximum output tokens.
    pub max_output: u32,
    /// Reasoning control.
    pub reasoning: Reasoning,
    /// Prices per million tokens.
    pub pricing: Pricing,
}

const fn price(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Pricing {
    Pricing {
        input,
        output,
        cache_read,
        cache_write,
    }
}

const GPT5: &[&str] = &["minimal", "low", "medium", "high"];
const GPT51: &[&str] = &["none", "low", "medium", "high"];
const GPT52: &[&str] = &["none", "low", "medium", "high", "xhigh"];
const O_SERIES: &[&str] = &["low", "medium", "high"];
/// `output_config.effort` of Claude Opus 4.5 (the API's default is `high`).
const CLAUDE_EFFORT: &[&str] = &["low", "medium", "high"];

const fn openai(
    id: &'static str,
    context_window: u32,
    max_output: u32,
    reasoning: Reasoning,
    pricing: Pricing,
) -> ModelSpec {
    ModelSpec {
        id,
        family: Family::OpenAi,
        context_window,
        max_output,
        reasoning,
        pricing,
    }
}

const fn claude(
    id: &'static str,
    max_output: u32,
    reasoning: Reasoning,
    pricing: Pricing,
) -> ModelSpec {
    ModelSpec {
        id,
        family: Family::Anthropic,
        context_window: 200_000,
        max_output,
        reasoning,
        pricing,
    }
}

/// Every known model.
pub const MODELS: &[ModelSpec] = &[
    openai(
        "gpt-5.2",
        400_000,
        128_000,
        Reasoning::Effort(GPT52),
        price(1.75, 14.0, 0.175, 0.0),
    ),
    openai(
        "gpt-5.1",
        400_000,
        128_000,
        Reasoning::Effort(GPT51),
        price(1.25, 10.0, 0.125, 0.0),
    ),
    openai(
        "gpt-5.1-codex",
        400_000,
        128_000,
        Reasoning::Effort(O_SERIES),
        price(1.25, 10.0, 0.125, 0.0),
    ),
    openai(
        "gpt-5.1-codex-mini",
        400_000,
        128_000,
        Reasoning::Effort(O_SERIES),
        price(0.25, 2.0, 0.025, 0.0),
    ),
    openai(
        "gpt-5",
        400_000,
        128_000,
        Reasoning::Effort(GPT5),
        price(1.25, 10.0, 0.125, 0.0),
    ),
    openai(
        "gpt-5-codex",
        400_000,
        128_000,
        Reasoning::Effort(O_SERIES),
        price(1.25, 10.0, 0.125, 0.0),
    ),
    openai(
        "gpt-5-mini",
        400_000,
        128_000,
        Reasoning::Effort(GPT5),
        price(0.25, 2.0, 0.025, 0.0),
    ),
    openai(
        "gpt-5-nano",
        400_000,
        128_000,
        Reasoning::Effort(GPT5),
        price(0.05, 0.40, 0.005, 0.0),
    ),
    openai(
        "gpt-4.1",
        1_047_576,
        32_768,
        Reasoning::None,
        price(2.0, 8.0, 0.50, 0.0),
    ),
    openai(
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        Reasoning::None,
        price(0.40, 1.60, 0.10, 0.0),
    ),
    openai(
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        Reasoning::None,
        price(0.10, 0.40, 0.025, 0.0),
    ),
    openai(
        "gpt-4o",
        128_000,
        16_384,
        Reasoning::None,
        price(2.50, 10.0, 1.25, 0.0),
    ),
    openai(
        "gpt-4o-mini",
        128_000,
        16_384,
        Reasoning::None,
        price(0.15, 0.60, 0.075, 0.0),
    ),
    openai(
        "o3",
        200_000,
        100_000,
        Reasoning::Effort(O_SERIES),
        price(2.0, 8.0, 0.50, 0.0),
    ),
    openai(
        "o4-mini",
        200_000,
        100_000,
        Reasoning::Effort(O_SERIES),
        price(1.10, 4.40, 0.275, 0.0),
    ),
    openai(
        "o3-mini",
        200_000,
        100_000,
        Reasoning::Effort(O_SERIES),
        price(1.10, 4.40, 0.55, 0.0),
    ),
    claude(
        "claude-opus-4-5",
        64_000,
        Reasoning::BudgetAndEffort(CLAUDE_EFFORT),
        price(5.0, 25.0, 0.50, 6.25),
    ),
    claude(
        "claude-sonnet-4-5",
        64_000,
        Reasoning::Budget,
        price(3.0, 15.0, 0.30, 3.75),
    ),
    claude(
        "claude-haiku-4-5",
        64_000,
        Reasoning::Budget,
        price(1.0, 5.0, 0.10, 1.25),
    ),
    claude(
        "claude-opus-4-1",
        32_000,
        Reasoning::Budget,
        price(15.0, 75.0, 1.50, 18.75),
    ),
    claude(
        "claude-opus-4-0",
        32_000,
        Reasoning::Budget,
        price(15.0, 75.0, 1.50, 18.75),
    ),
    claude(
        "claude-sonnet-4-0",
        64_000,
        Reasoning::Budget,
        price(3.0, 15.0, 0.30, 3.75),
    ),
    claude(
        "claude-3-7-sonnet",
        64_000,
        Reasoning::Budget,
        price(3.0, 15.0, 0.30, 3.75),
    ),
    claude(
        "claude-3-5-haiku",
        8_192,
        Reasoning::None,
        price(0.80, 4.0, 0.08, 1.0),
    ),
];

/// Ids that name a catalogue entry differently from its dated snapshot.
const ALIASES: &[(&str, &str)] = &[
    ("claude-opus-4", "claude-opus-4-0"),
    ("claude-sonnet-4", "claude-sonnet-4-0"),
];

/// Default model of the OpenAI providers.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5.1";
/// Default model of the Anthropic provider.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Context window assumed for unknown models.
pub const UNKNOWN_CONTEXT_WINDOW: u32 = 128_000;
/// Output limit assumed for unknown models (Anthropic needs one in every request).
pub const UNKNOWN_MAX_OUTPUT: u32 = 8_192;

/// The catalogue entry for `model`: the exact id, an alias, or the id without a date or
/// `-latest` suffix.
pub fn lookup(model: &str) -> Option<&'static ModelSpec> {
    let find = |id: &str| {
        let id = ALIASES
            .iter()
            .find(|(alias, _)| *alias == id)
            .map_or(id, |(_, target)| *target);
        MODELS.iter().find(|m| m.id == id)
    };
    find(model).or_else(|| find(strip_snapshot(model)?))
}

/// `model` without a trailing `-YYYYMMDD`, `-YYYY-MM-DD` or `-latest`.
fn strip_snapshot(model: &str) -> Option<&str> {
    if let Some(base) = model.strip_suffix("-latest") {
        return Some(base);
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (base, last) = model.rsplit_once('-')?;
    if last.len() == 8 && digits(last) {
        return Some(base);
    }
    // -YYYY-MM-DD
    let (rest, month) = base.rsplit_once('-')?;
    let (stem, year) = rest.rsplit_once('-')?;
    (last.len() == 2
        && month.len() == 2
        && year.len() == 4
        && digits(last)
        && digits(month)
        && digits(year))
    .then_some(stem)
}

/// Catalogue entries of one family.
pub fn models(family: Family) -> impl Iterator<Item = &'static ModelSpec> {
    MODELS.iter().filter(move |m| m.family == family)
}

/// The [`ModelInfo`] the provider `provider` reports for `model`; unknown ids get
/// [`UNKNOWN_CONTEXT_WINDOW`], [`UNKNOWN_MAX_OUTPUT`], no reasoning and no pricing.
pub fn model_info(provider: &str, family: Family, model: &str) -> ModelInfo {
    match lookup(model).filter(|m| m.family == family) {
        Some(spec) => ModelInfo {
            id: model.to_string(),
            provider: provider.to_string(),
            context_window: spec.context_window,
            max_output: spec.max_output,
            reasoning: spec.reasoning != Reasoning::None,
            pricing: Some(spec.pricing),
        },
        None => ModelInfo {
            id: model.to_string(),
            provider: provider.to_string(),
            context_window: UNKNOWN_CONTEXT_WINDOW,
            max_output: UNKNOWN_MAX_OUTPUT,
            reasoning: false,
            pricing: None,
        },
    }
}

/// The configured model first, then the rest of the family's catalogue.
pub(crate) fn list(provider: &str, family: Family, configured: &str) -> Vec<ModelInfo> {
    let mut out = vec![model_info(provider, family, configured)];
    out.extend(
        models(family)
            .filter(|m| m.id != configured)
            .map(|m| model_info(provider, family, m.id)),
    );
    out
}

/// The OpenAI effort value for `level` among the values a model accepts.
pub(crate) fn effort(level: ReasoningLevel, accepted: &[&'static str]) -> Option<&'static str> {
    const ORDER: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];
    let rank = |e: &str| ORDER.iter().position(|o| *o == e).unwrap_or(0);
    let lowest = accepted.first().copied();
    let lowest_thinking = accepted.iter().copied().find(|e| *e != "none").or(lowest);
    let target = match level {
        ReasoningLevel::Off => return lowest,
        ReasoningLevel::Minimum => return lowest_thinking,
        ReasoningLevel::Low => "low",
        ReasoningLevel::Medium => "medium",
        ReasoningLevel::High => "high",
        ReasoningLevel::Xhigh | ReasoningLevel::Max => "xhigh",
    };
    accepted
        .iter()
        .copied()
        .filter(|e| *e != "none" && rank(e) <= rank(target))
        .max_by_key(|e| rank(e))
        .or(lowest_thinking)
}

/// The Anthropic thinking budget for `level` with `max_tokens` of output, or `None` when
/// thinking is off (or there is no room for it).
pub(crate) fn thinking_budget(level: ReasoningLevel, max_tokens: u32) -> Option<u32> {
    let wanted = match level {
        ReasoningLevel::Off => return None,
        ReasoningLevel::Minimum => 1_024,
        ReasoningLevel::Low => 4_096,
        ReasoningLevel::Medium => 10_000,
        ReasoningLevel::High => 20_000,
        ReasoningLevel::Xhigh => 32_000,
        ReasoningLevel::Max => u32::MAX,
    };
    // The budget must stay below max_tokens and leave room for the answer.
    let room = max_tokens.checked_sub(1_024)?;
    (room >= 1_024).then(|| wanted.min(room))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_and_aliases_resolve() {
        assert_eq!(lookup("gpt-4o-2024-08-06").map(|m| m.id), Some("gpt-4o"));
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").map(|m| m.id),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            lookup("claude-sonnet-4-20250514").map(|m| m.id),
            Some("claude-sonnet-4-0")
        );
        assert_eq!(
            lookup("claude-3-7-sonnet-latest").map(|m| m.id),
            Some("claude-3-7-sonnet")
        );
        assert_eq!(lookup("gpt-5-mini").map(|m| m.id), Some("gpt-5-mini"));
        assert!(lookup("gpt-5.2-pro").is_none(), "no guessing across tiers");
        assert!(lookup("qwen3:8b").is_none());
    }

    #[test]
    fn unknown_models_have_no_pricing() {
        let info = model_info("openai", Family::OpenAi, "llama-3.1-8b");
        assert_eq!(info.pricing, None);
        assert!(!info.reasoning);
        let info = model_info("anthropic", Family::Anthropic, "claude-haiku-4-5");
        assert_eq!(info.pricing.map(|p| p.input), Some(1.0));
        assert_eq!(info.max_output, 64_000);
    }

    #[test]
    fn effort_picks_an_accepted_value() {
        assert_eq!(effort(ReasoningLevel::Off, GPT5), Some("minimal"));
        assert_eq!(effort(ReasoningLevel::Off, GPT51), Some("none"));
        assert_eq!(effort(ReasoningLevel::Minimum, GPT51), Some("low"));
        assert_eq!(effort(ReasoningLevel::Medium, O_SERIES), Some("medium"));
        assert_eq!(effort(ReasoningLevel::Max, GPT5), Some("high"));
        assert_eq!(effort(ReasoningLevel::Xhigh, GPT52), Some("xhigh"));
    }

    #[test]
    fn thinking_budget_fits_under_max_tokens() {
        assert_eq!(thinking_budget(ReasoningLevel::Off, 64_000), None);
        assert_eq!(
            thinking_budget(ReasoningLevel::Medium, 64_000),
            Some(10_000)
        );
        assert_eq!(thinking_budget(ReasoningLevel::Max, 32_000), Some(30_976));
        assert_eq!(thinking_budget(ReasoningLevel::High, 8_192), Some(7_168));
        assert_eq!(thinking_budget(ReasoningLevel::Low, 1_500), None);
    }
}
