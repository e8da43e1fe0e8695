//! The model catalogue: context window, output limit, reasoning support and prices
//! (USD per million tokens) of current OpenAI, Anthropic and Google Gemini models.
//!
//! Every entry names its [`Source`]: the vendor pages its prices and limits come from, and
//! the day they were last compared ([`CHECKED`]). Update the figures and that date together.
//!
//! Usage events leave `cost_usd` empty; the agent prices them with [`ModelInfo::pricing`].
//! Unknown model ids (every OpenAI-compatible server's models, new releases) still work:
//! they get conservative limits, no reasoning parameters, and **no pricing, so their cost
//! is absent** (`null`) rather than guessed. A model's listed snapshots
//! (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) and `-latest` aliases share its
//! entry; other dated ids of a known model get its limits but no pricing.

use agent_core::{
    provider::{ModelInfo, Pricing},
    ReasoningLevel,
};

/// Which API family a model belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// OpenAI models (Chat Completions and Responses).
    OpenAi,
    /// Anthropic Claude models.
    Anthropic,
    /// Google Gemini models (the Gemini API and Vertex AI).
    Gemini,
    /// Amazon's own models on Bedrock (Claude on Bedrock is [`Family::Anthropic`]).
    Bedrock,
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
    /// Gemini 2.5 `thinkingConfig.thinkingBudget`, between the model's least and most
    /// (a least of 0 lets thinking be turned off).
    ThinkingBudget {
        /// The smallest budget the model takes.
        min: u32,
        /// The largest budget the model takes.
        max: u32,
    },
    /// Gemini 3 `thinkingConfig.thinkingLevel`, with the levels the model accepts (from
    /// least to most).
    ThinkingLevel(&'static [&'static str]),
}

/// Where an entry's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// The vendor page giving the prices.
    pub prices: &'static str,
    /// The vendor page giving the context window and output limit.
    pub limits: &'static str,
    /// The day (YYYY-MM-DD) the figures were last compared with those pages.
    pub checked: &'static str,
}

/// One catalogue entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    /// API model id.
    pub id: &'static str,
    /// API family.
    pub family: Family,
    /// Dated snapshot ids the vendor lists for this model at the same prices.
    pub snapshots: &'static [&'static str],
    /// Context window in tokens.
    pub context_window: u32,
    /// Maximum output tokens.
    pub max_output: u32,
    /// Reasoning control.
    pub reasoning: Reasoning,
    /// Prices per million tokens.
    pub pricing: Pricing,
    /// Where the figures come from, and when they were checked.
    pub source: Source,
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

/// The day every entry's figures were last compared with its [`Source`].
pub const CHECKED: &str = "2026-12-01";

/// Anthropic's price list (base input, 5-minute cache writes, cache hits, output).
pub const CLAUDE_PRICES: &str = "https://platform.claude.com/docs/en/about-claude/pricing";
/// Anthropic's model overview (context windows, output limits, snapshot ids).
pub const CLAUDE_MODELS: &str = "https://platform.claude.com/docs/en/about-claude/models/overview";

/// Google's Gemini API price list (paid tier, prompts up to 200 000 tokens; context-cache
/// reads, no storage).
pub const GEMINI_PRICES: &str = "https://ai.google.dev/gemini-api/docs/pricing";
/// Google's Gemini model overview (input and output token limits).
pub const GEMINI_MODELS: &str = "https://ai.google.dev/gemini-api/docs/models";

/// Gemini 3 Pro's thinking levels.
const GEMINI3_PRO_LEVELS: &[&str] = &["low", "high"];
/// Gemini 3 Flash's thinking levels.
const GEMINI3_FLASH_LEVELS: &[&str] = &["minimal", "low", "medium", "high"];

const fn gemini(
    id: &'static str,
    context_window: u32,
    max_output: u32,
    reasoning: Reasoning,
    pricing: Pricing,
) -> ModelSpec {
    ModelSpec {
        family: Family::Gemini,
        source: source(GEMINI_PRICES, GEMINI_MODELS),
        ..openai(id, "", &[], context_window, max_output, reasoning, pricing)
    }
}

/// Amazon Bedrock's price list (on-demand, per model).
pub const BEDROCK_PRICES: &str = "https://aws.amazon.com/bedrock/pricing/";
/// Amazon Nova's model page (context windows and output limits).
pub const NOVA_MODELS: &str = "https://docs.aws.amazon.com/nova/latest/userguide/what-is-nova.html";

const fn nova(id: &'static str, context_window: u32, pricing: Pricing) -> ModelSpec {
    ModelSpec {
        family: Family::Bedrock,
        source: source(BEDROCK_PRICES, NOVA_MODELS),
        ..openai(
            id,
            "",
            &[],
            context_window,
            10_000,
            Reasoning::None,
            pricing,
        )
    }
}

/// Where the figures of an entry whose prices are on `prices` and limits on `limits` come
/// from.
const fn source(prices: &'static str, limits: &'static str) -> Source {
    Source {
        prices,
        limits,
        checked: CHECKED,
    }
}

const fn openai(
    id: &'static str,
    page: &'static str,
    snapshots: &'static [&'static str],
    context_window: u32,
    max_output: u32,
    reasoning: Reasoning,
    pricing: Pricing,
) -> ModelSpec {
    ModelSpec {
        id,
        family: Family::OpenAi,
        snapshots,
        context_window,
        max_output,
        reasoning,
        pricing,
        source: source(page, page),
    }
}

const fn claude(
    id: &'static str,
    snapshots: &'static [&'static str],
    max_output: u32,
    reasoning: Reasoning,
    pricing: Pricing,
) -> ModelSpec {
    ModelSpec {
        family: Family::Anthropic,
        context_window: 200_000,
        source: source(CLAUDE_PRICES, CLAUDE_MODELS),
        // The rest as an OpenAI entry has it.
        ..openai(id, "", snapshots, 0, max_output, reasoning, pricing)
    }
}

/// An OpenAI entry (`openai`) whose prices and limits are on the model's own page,
/// `developers.openai.com/api/docs/models/<id>`.
macro_rules! openai {
    ($id:literal, $($rest:expr),+ $(,)?) => {
        openai($id, concat!("https://developers.openai.com/api/docs/models/", $id), $($rest),+)
    };
}

/// Every known model. OpenAI figures are from each model's page
/// (`developers.openai.com/api/docs/models/<id>`: text-token prices, context window, max
/// output tokens, snapshots); Anthropic's from [`CLAUDE_PRICES`] (cache writes at the
/// 5-minute rate) and [`CLAUDE_MODELS`] (the standard 200 000-token context window; the 1M
/// beta and its long-context prices are not modelled).
#[rustfmt::skip]
pub const MODELS: &[ModelSpec] = &[
    openai!("gpt-5.2", &["gpt-5.2-2025-12-11"], 400_000, 128_000, Reasoning::Effort(GPT52), price(1.75, 14.0, 0.175, 0.0)),
    openai!("gpt-5.1", &["gpt-5.1-2025-11-13"], 400_000, 128_000, Reasoning::Effort(GPT51), price(1.25, 10.0, 0.125, 0.0)),
    openai!("gpt-5.1-codex", &[], 400_000, 128_000, Reasoning::Effort(O_SERIES), price(1.25, 10.0, 0.125, 0.0)),
    openai!("gpt-5.1-codex-mini", &[], 400_000, 128_000, Reasoning::Effort(O_SERIES), price(0.25, 2.0, 0.025, 0.0)),
    openai!("gpt-5", &["gpt-5-2025-08-07"], 400_000, 128_000, Reasoning::Effort(GPT5), price(1.25, 10.0, 0.125, 0.0)),
    openai!("gpt-5-codex", &[], 400_000, 128_000, Reasoning::Effort(O_SERIES), price(1.25, 10.0, 0.125, 0.0)),
    openai!("gpt-5-mini", &["gpt-5-mini-2025-08-07"], 400_000, 128_000, Reasoning::Effort(GPT5), price(0.25, 2.0, 0.025, 0.0)),
    openai!("gpt-5-nano", &["gpt-5-nano-2025-08-07"], 400_000, 128_000, Reasoning::Effort(GPT5), price(0.05, 0.40, 0.005, 0.0)),
    openai!("gpt-4.1", &["gpt-4.1-2025-04-14"], 1_047_576, 32_768, Reasoning::None, price(2.0, 8.0, 0.50, 0.0)),
    openai!("gpt-4.1-mini", &["gpt-4.1-mini-2025-04-14"], 1_047_576, 32_768, Reasoning::None, price(0.40, 1.60, 0.10, 0.0)),
    openai!("gpt-4.1-nano", &["gpt-4.1-nano-2025-04-14"], 1_047_576, 32_768, Reasoning::None, price(0.10, 0.40, 0.025, 0.0)),
    // gpt-4o-2024-05-13 is priced differently ($5 / $15 per million): not listed.
    openai!("gpt-4o", &["gpt-4o-2024-08-06", "gpt-4o-2024-11-20"], 128_000, 16_384, Reasoning::None, price(2.50, 10.0, 1.25, 0.0)),
    openai!("gpt-4o-mini", &["gpt-4o-mini-2024-07-18"], 128_000, 16_384, Reasoning::None, price(0.15, 0.60, 0.075, 0.0)),
    openai!("o3", &["o3-2025-04-16"], 200_000, 100_000, Reasoning::Effort(O_SERIES), price(2.0, 8.0, 0.50, 0.0)),
    openai!("o4-mini", &["o4-mini-2025-04-16"], 200_000, 100_000, Reasoning::Effort(O_SERIES), price(1.10, 4.40, 0.275, 0.0)),
    openai!("o3-mini", &["o3-mini-2025-01-31"], 200_000, 100_000, Reasoning::Effort(O_SERIES), price(1.10, 4.40, 0.55, 0.0)),
    claude("claude-opus-4-5", &["claude-opus-4-5-20251101"], 64_000, Reasoning::BudgetAndEffort(CLAUDE_EFFORT), price(5.0, 25.0, 0.50, 6.25)),
    claude("claude-sonnet-4-5", &["claude-sonnet-4-5-20250929"], 64_000, Reasoning::Budget, price(3.0, 15.0, 0.30, 3.75)),
    claude("claude-haiku-4-5", &["claude-haiku-4-5-20251001"], 64_000, Reasoning::Budget, price(1.0, 5.0, 0.10, 1.25)),
    claude("claude-opus-4-1", &["claude-opus-4-1-20250805"], 32_000, Reasoning::Budget, price(15.0, 75.0, 1.50, 18.75)),
    claude("claude-opus-4-0", &["claude-opus-4-20250514"], 32_000, Reasoning::Budget, price(15.0, 75.0, 1.50, 18.75)),
    claude("claude-sonnet-4-0", &["claude-sonnet-4-20250514"], 64_000, Reasoning::Budget, price(3.0, 15.0, 0.30, 3.75)),
    claude("claude-3-7-sonnet", &["claude-3-7-sonnet-20250219"], 64_000, Reasoning::Budget, price(3.0, 15.0, 0.30, 3.75)),
    claude("claude-3-5-haiku", &["claude-3-5-haiku-20241022"], 8_192, Reasoning::None, price(0.80, 4.0, 0.08, 1.0)),
    // Gemini: prompts over 200 000 tokens cost more on the Pro models; that tier is not
    // modelled (the lower prices are listed).
    gemini("gemini-3-pro-preview", 1_048_576, 65_536, Reasoning::ThinkingLevel(GEMINI3_PRO_LEVELS), price(2.0, 12.0, 0.20, 0.0)),
    gemini("gemini-3-flash-preview", 1_048_576, 65_536, Reasoning::ThinkingLevel(GEMINI3_FLASH_LEVELS), price(0.50, 3.0, 0.05, 0.0)),
    gemini("gemini-2.5-pro", 1_048_576, 65_536, Reasoning::ThinkingBudget { min: 128, max: 32_768 }, price(1.25, 10.0, 0.125, 0.0)),
    gemini("gemini-2.5-flash", 1_048_576, 65_536, Reasoning::ThinkingBudget { min: 0, max: 24_576 }, price(0.30, 2.50, 0.03, 0.0)),
    gemini("gemini-2.5-flash-lite", 1_048_576, 65_536, Reasoning::ThinkingBudget { min: 0, max: 24_576 }, price(0.10, 0.40, 0.01, 0.0)),
    gemini("gemini-2.0-flash", 1_048_576, 8_192, Reasoning::None, price(0.10, 0.40, 0.025, 0.0)),
    gemini("gemini-2.0-flash-lite", 1_048_576, 8_192, Reasoning::None, price(0.075, 0.30, 0.0, 0.0)),
    // Amazon Nova on Bedrock (on-demand; cached input at the listed 75 % discount).
    nova("amazon.nova-premier-v1:0", 1_000_000, price(2.50, 12.50, 0.625, 0.0)),
    nova("amazon.nova-pro-v1:0", 300_000, price(0.80, 3.20, 0.20, 0.0)),
    nova("amazon.nova-lite-v1:0", 300_000, price(0.06, 0.24, 0.015, 0.0)),
    nova("amazon.nova-micro-v1:0", 128_000, price(0.035, 0.14, 0.00875, 0.0)),
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
/// Default model of the Gemini and Vertex AI providers.
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-pro";

/// Context window assumed for unknown models.
pub const UNKNOWN_CONTEXT_WINDOW: u32 = 128_000;
/// Output limit assumed for unknown models (Anthropic needs one in every request).
pub const UNKNOWN_MAX_OUTPUT: u32 = 8_192;

/// The entry whose figures apply to `model` exactly: its id, an alias, its `-latest`
/// alias, or one of the snapshots it lists.
pub fn exact(model: &str) -> Option<&'static ModelSpec> {
    // Vertex AI writes a snapshot as `claude-sonnet-4-5@20250929`.
    if model.contains('@') {
        return exact(&model.replace('@', "-"));
    }
    let base = model.strip_suffix("-latest").unwrap_or(model);
    let id = ALIASES
        .iter()
        .find(|(alias, _)| *alias == base)
        .map_or(base, |(_, target)| *target);
    MODELS
        .iter()
        .find(|m| m.id == id || m.snapshots.contains(&model))
}

/// The catalogue entry for `model`: [`exact`], else the entry of the id without a date
/// suffix (a snapshot the catalogue does not list, whose limits and request parameters are
/// taken to be its family's; its prices are not, see [`model_info`]).
pub fn lookup(model: &str) -> Option<&'static ModelSpec> {
    if model.contains('@') {
        return lookup(&model.replace('@', "-"));
    }
    exact(model).or_else(|| exact(strip_snapshot(model)?))
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

/// The [`ModelInfo`] the provider `provider` reports for `model`. Unknown ids get
/// [`UNKNOWN_CONTEXT_WINDOW`], [`UNKNOWN_MAX_OUTPUT`], no reasoning and no pricing; a dated
/// snapshot the catalogue does not list gets its family's limits but no pricing either
/// (snapshots of one model have had different prices). Without pricing the agent reports
/// no cost.
pub fn model_info(provider: &str, family: Family, model: &str) -> ModelInfo {
    let pricing = exact(model)
        .filter(|m| m.family == family)
        .map(|m| m.pricing);
    match lookup(model).filter(|m| m.family == family) {
        Some(spec) => ModelInfo {
            id: model.to_string(),
            provider: provider.to_string(),
            context_window: spec.context_window,
            max_output: spec.max_output,
            reasoning: spec.reasoning != Reasoning::None,
            pricing,
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

/// Claude models whose regional (non-`global`) endpoints on Vertex AI and Amazon Bedrock
/// cost 10 % more than the global ones (the vendors' price pages).
const REGIONAL_PREMIUM: &[&str] = &["claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"];

/// `pricing` of Anthropic model `id` with the regional premium applied when `regional`.
pub(crate) fn regional_pricing(
    pricing: Option<Pricing>,
    id: &str,
    regional: bool,
) -> Option<Pricing> {
    self::regional(pricing, lookup(id), regional)
}

/// `pricing` with the regional premium of `spec` applied when `regional`.
fn regional(pricing: Option<Pricing>, spec: Option<&ModelSpec>, regional: bool) -> Option<Pricing> {
    let premium = regional && spec.is_some_and(|s| REGIONAL_PREMIUM.contains(&s.id));
    pricing.map(|p| match premium {
        true => price(
            p.input * 1.1,
            p.output * 1.1,
            p.cache_read * 1.1,
            p.cache_write * 1.1,
        ),
        false => p,
    })
}

/// The [`ModelInfo`] of a Claude model on Vertex AI (`claude-sonnet-4-5@20250929`, the
/// `@` form of Anthropic's snapshot id) in `location`: Anthropic's limits and prices, with
/// the regional premium outside `global`.
pub fn vertex_claude_info(model: &str, location: &str) -> ModelInfo {
    let mut info = model_info("vertex", Family::Anthropic, model);
    info.pricing = regional(info.pricing, lookup(model), location != "global");
    info
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

/// The Gemini 2.5 thinking budget for `level` within `min..=max` (0 turns thinking off
/// where the model allows it).
pub(crate) fn gemini_budget(level: ReasoningLevel, min: u32, max: u32) -> u32 {
    let wanted = match level {
        ReasoningLevel::Off => 0,
        ReasoningLevel::Minimum => 512,
        ReasoningLevel::Low => 2_048,
        ReasoningLevel::Medium => 8_192,
        ReasoningLevel::High => 16_384,
        ReasoningLevel::Xhigh => 24_576,
        ReasoningLevel::Max => u32::MAX,
    };
    wanted.clamp(min, max.max(min))
}

/// The Gemini 3 thinking level for `level` among the levels a model accepts: the highest
/// accepted level at or below the wanted one, else the lowest.
pub(crate) fn gemini_level(
    level: ReasoningLevel,
    accepted: &[&'static str],
) -> Option<&'static str> {
    const ORDER: [&str; 4] = ["minimal", "low", "medium", "high"];
    let rank = |e: &str| ORDER.iter().position(|o| *o == e).unwrap_or(0);
    let target = match level {
        ReasoningLevel::Off | ReasoningLevel::Minimum => "minimal",
        ReasoningLevel::Low => "low",
        ReasoningLevel::Medium => "medium",
        ReasoningLevel::High | ReasoningLevel::Xhigh | ReasoningLevel::Max => "high",
    };
    accepted
        .iter()
        .copied()
        .filter(|e| rank(e) <= rank(target))
        .max_by_key(|e| rank(e))
        .or(accepted.first().copied())
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
    fn unlisted_snapshots_get_limits_but_never_a_guessed_price() {
        // gpt-4o-2024-05-13 cost $5 / $15, not gpt-4o's $2.50 / $10.
        let info = model_info("openai", Family::OpenAi, "gpt-4o-2024-05-13");
        assert_eq!(info.context_window, 128_000);
        assert_eq!(info.pricing, None);
        let info = model_info("openai", Family::OpenAi, "gpt-4o-2024-08-06");
        assert_eq!(info.pricing.map(|p| (p.input, p.output)), Some((2.5, 10.0)));
        let info = model_info("anthropic", Family::Anthropic, "claude-sonnet-4-5-20250929");
        assert_eq!(info.pricing.map(|p| p.cache_write), Some(3.75));
        let info = model_info("anthropic", Family::Anthropic, "claude-3-7-sonnet-latest");
        assert!(info.pricing.is_some(), "-latest is an alias");
        let info = model_info("anthropic", Family::Anthropic, "claude-opus-4");
        assert_eq!(info.pricing.map(|p| p.input), Some(15.0));
        let info = model_info("anthropic", Family::Anthropic, "claude-haiku-4-5-20991231");
        assert_eq!((info.max_output, info.pricing), (64_000, None));
        // A model of the other family is unknown here.
        assert_eq!(
            model_info("openai", Family::OpenAi, "claude-haiku-4-5").pricing,
            None
        );
    }

    #[test]
    fn every_entry_names_its_source_and_its_snapshots_resolve_to_it() {
        let mut seen = std::collections::HashSet::new();
        for spec in MODELS {
            assert!(seen.insert(spec.id), "{} listed twice", spec.id);
            for url in [spec.source.prices, spec.source.limits] {
                assert!(url.starts_with("https://"), "{}: {url}", spec.id);
            }
            let date = spec.source.checked.as_bytes();
            assert!(
                date.len() == 10 && date[4] == b'-' && date[7] == b'-',
                "{}: checked {:?} is not YYYY-MM-DD",
                spec.id,
                spec.source.checked
            );
            assert!(spec.context_window > 0 && spec.max_output > 0);
            assert!(spec.max_output <= spec.context_window, "{}", spec.id);
            for snapshot in spec.snapshots {
                assert!(seen.insert(snapshot), "{snapshot} listed twice");
                assert_eq!(exact(snapshot).map(|m| m.id), Some(spec.id));
            }
        }
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
