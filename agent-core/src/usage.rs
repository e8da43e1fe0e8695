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
    /// Cost in USD, when the model's prices are known. A sum has a cost only when every
    /// call in it had one: an unpriced call makes the total unknown rather than too low.
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

impl Usage {
    /// No call at all (the start of a sum): no tokens and no cost.
    fn is_empty(&self) -> bool {
        self.total_tokens() == 0 && self.reasoning.is_none() && self.cost_usd.is_none()
    }
}

impl AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, rhs: &Usage) {
        self.cost_usd = match (self.is_empty(), rhs.is_empty()) {
            (true, _) => rhs.cost_usd,
            (_, true) => self.cost_usd,
            _ => match (self.cost_usd, rhs.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            },
        };
        self.input += rhs.input;
        self.output += rhs.output;
        self.cache_read += rhs.cache_read;
        self.cache_write += rhs.cache_write;
        self.reasoning = match (self.reasoning, rhs.reasoning) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: u64, cost: Option<f64>) -> Usage {
        Usage {
            input,
            output: 10,
            cost_usd: cost,
            ..Usage::default()
        }
    }

    #[test]
    fn a_sum_is_priced_only_when_every_call_was() {
        let mut sum = Usage::default();
        sum += &call(100, Some(0.5));
        assert_eq!(
            sum.cost_usd,
            Some(0.5),
            "the empty start takes the first cost"
        );
        sum += &call(100, Some(0.25));
        assert_eq!(sum.cost_usd, Some(0.75));
        sum += &Usage::default();
        assert_eq!(sum.cost_usd, Some(0.75), "adding nothing changes nothing");
        sum += &call(100, None);
        assert_eq!(
            sum.cost_usd, None,
            "an unpriced call makes the total unknown"
        );
        sum += &call(100, Some(1.0));
        assert_eq!(sum.cost_usd, None);
        assert_eq!(sum.input, 400);

        let mut unpriced = Usage::default();
        unpriced += &call(5, None);
        unpriced += &call(5, None);
        assert_eq!(unpriced.cost_usd, None);
        assert_eq!(unpriced.total_tokens(), 30);
    }
}
