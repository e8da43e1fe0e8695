//! Token usage and cost.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Token counts and cost of one model call, or a sum of several.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens (including reasoning tokens).
    pub output: u64,
    /// Reasoning tokens, when the provider reports them.
    pub reasoning: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Cost in USD, when the model's prices are known.
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Input tokens of every kind (uncached + cache read + cache write).
    pub fn prompt_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// Prompt plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens() + self.output
    }
}

impl AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, rhs: &Usage) {
        self.input += rhs.input;
        self.output += rhs.output;
        self.cache_read += rhs.cache_read;
        self.cache_write += rhs.cache_write;
        self.reasoning = match (self.reasoning, rhs.reasoning) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.cost_usd = match (self.cost_usd, rhs.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}
