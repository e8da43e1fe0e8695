//! The spend cap ([`crate::AgentBuilder::max_budget_usd`]): before each model call of a
//! prompt run, the run's priced cost so far (its sub-agents' included) is held against the
//! cap. Over it, the run ends with `Error{budget_exceeded}` and `RunFinished{error}`. A cost
//! that cannot be known is not taken as zero: a model without prices in the catalogue (and
//! a run with an unpriced call) ends the run the same way, saying so.

use crate::emit::Emitter;
use crate::event::ErrorCode;
use crate::inner::{error_event, Inner};

/// Why the run may not make a model call with `model`, if it may not.
pub(crate) fn over(inner: &Inner, model: &str) -> Option<String> {
    let cap = inner.guard.max_budget_usd?;
    let spent = inner.state().run_usage;
    if spent.total_tokens() > 0 || spent.cost_usd.is_some() {
        match spent.cost_usd {
            Some(cost) if cost >= cap => {
                return Some(format!(
                    "spend cap of ${cap} reached: this run has cost ${cost:.4}"
                ))
            }
            Some(_) => {}
            None => {
                return Some(format!(
                    "spend cap of ${cap} cannot be enforced: a call of this run has no \
                     price (its model is not priced in the model catalogue)"
                ))
            }
        }
    }
    match inner.provider.model_info(model).and_then(|m| m.pricing) {
        Some(_) => None,
        None => Some(format!(
            "spend cap of ${cap} cannot be enforced: model {model} is not priced in the \
             model catalogue"
        )),
    }
}

/// Checks the cap before a model call; when the run must end, reports it and returns true.
pub(crate) async fn stop(inner: &Inner, em: &Emitter) -> bool {
    if inner.guard.max_budget_usd.is_none() {
        return false;
    }
    let model = inner.state().model.clone();
    match over(inner, &model) {
        None => false,
        Some(message) => {
            em.emit(error_event(ErrorCode::BudgetExceeded, message))
                .await;
            true
        }
    }
}
