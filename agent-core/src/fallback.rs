//! The fallback model ([`crate::AgentBuilder::fallback_model`]): a model call that failed
//! before producing anything, because the model was overloaded, rate-limited after the
//! provider's retries, or the server failed (5xx), is made once more with the fallback
//! model, after an [`AgentEvent::ModelFallback`]. The next call of the run asks the primary
//! model again.

use crate::emit::Emitter;
use crate::event::AgentEvent;
use crate::inner::Inner;
use crate::model_call::{stream_call, CallEnd, CallOutcome};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

/// Whether a call that failed with `err` falls back.
fn falls_back(err: &ProviderError) -> bool {
    matches!(
        err.kind,
        ProviderErrorKind::Overloaded | ProviderErrorKind::RateLimited | ProviderErrorKind::Server
    ) || err.status.is_some_and(|s| (500..600).contains(&s))
}

/// One model call of the loop (with tools), made once more with the fallback model when it
/// fails as described in the module docs. Nothing is copied unless a fallback is set.
pub(crate) async fn call(inner: &Inner, em: &Emitter, request: ProviderRequest) -> CallOutcome {
    let Some(fallback) = inner
        .guard
        .fallback_model
        .as_deref()
        .filter(|m| *m != request.model)
    else {
        return stream_call(inner, em, request, true).await;
    };
    let mut retry = request.clone();
    let call = stream_call(inner, em, request, true).await;
    let CallEnd::Failed(err) = &call.end else {
        return call;
    };
    if !falls_back(err) || !call.message.content.is_empty() || em.cancel.is_cancelled() {
        return call;
    }
    em.emit(AgentEvent::ModelFallback {
        from: retry.model.clone(),
        to: fallback.to_string(),
        reason: err.message.clone(),
    })
    .await;
    retry.model = fallback.to_string();
    stream_call(inner, em, retry, true).await
}
