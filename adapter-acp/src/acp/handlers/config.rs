//! Session config options (`configOptions` of `session/new`, `load` and `resume`,
//! `session/set_config_option`, `config_option_update`):
//!
//! - `mode` (category `mode`): the session's mode, one of [`MODES`](super::MODES), the same
//!   value `session/set_mode` sets (each keeps the other in step);
//! - `model` (category `model`): the models the provider lists (`GET /models`, once per
//!   connection, bounded), the configured model when the list cannot be had; the session's
//!   own model is always among them;
//! - `thought_level` (category `thought_level`): the reasoning level, offered for a model
//!   the catalogue knows to reason.
//!
//! A change applies from the session's next model call. An unknown option or value is
//! `invalid_params`.

use std::str::FromStr;

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionId, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use agent_core::ReasoningLevel;
use agent_host::session::Session;

use super::sessions::{active, parse_mode, MODES};
use super::{internal, invalid_params, notify, Shared};

/// The id of the mode option.
pub const MODE: &str = "mode";
/// The id of the model option.
pub const MODEL: &str = "model";
/// The id of the reasoning-level option.
pub const THOUGHT_LEVEL: &str = "thought_level";

/// The model ids offered to `session`
/// ([`ModelList::offered`](agent_host::session::ModelList::offered)): the models listed so
/// far, with the session's own first when they do not have it.
fn model_ids(s: &Shared, session: &Session) -> Vec<String> {
    s.models.offered(&session.meta().model)
}

/// Whether `session`'s model takes a reasoning level.
fn reasons(session: &Session, model: &str) -> bool {
    (session.agent().provider().model_info(model)).is_some_and(|m| m.reasoning)
}

/// The config options of `session`, as they are now (the provider's models listed first,
/// once per connection).
pub(crate) async fn options(s: &Shared, session: &Session) -> Vec<SessionConfigOption> {
    list_models(s).await;
    options_now(s, session)
}

/// Starts listing the provider's models (once per connection, `GET /models`) on a task of
/// its own; [`options`] waits for it.
pub(crate) fn prefetch_models(s: &Shared) {
    s.models.prefetch(s.manager.factory());
}

/// Lists the provider's models, once per connection: [`options_now`] offers them from then on.
async fn list_models(s: &Shared) {
    s.models.get(s.manager.factory()).await;
}

/// [`options`] with the models listed so far (none yet: the session's own).
pub(crate) fn options_now(s: &Shared, session: &Session) -> Vec<SessionConfigOption> {
    let meta = session.meta();
    let modes: Vec<SessionConfigSelectOption> = MODES
        .iter()
        .map(|(mode, name, description)| {
            SessionConfigSelectOption::new(mode.as_str(), *name)
                .description(description.to_string())
        })
        .collect();
    let mut options = vec![
        SessionConfigOption::select(MODE, "Mode", meta.mode.as_str(), modes)
            .category(SessionConfigOptionCategory::Mode)
            .description("When the agent asks before it acts".to_string()),
    ];
    let models: Vec<SessionConfigSelectOption> = model_ids(s, session)
        .into_iter()
        .map(|id| SessionConfigSelectOption::new(id.clone(), id))
        .collect();
    options.push(
        SessionConfigOption::select(MODEL, "Model", meta.model.clone(), models)
            .category(SessionConfigOptionCategory::Model),
    );
    if reasons(session, &meta.model) {
        let levels: Vec<SessionConfigSelectOption> = ReasoningLevel::ALL
            .iter()
            .map(|level| SessionConfigSelectOption::new(level.as_str(), level.as_str()))
            .collect();
        options.push(
            SessionConfigOption::select(
                THOUGHT_LEVEL,
                "Thinking",
                meta.thought_level.as_str(),
                levels,
            )
            .category(SessionConfigOptionCategory::ThoughtLevel),
        );
    }
    options
}

/// `session/set_config_option`: changes one option of an active session and answers the
/// whole set.
pub(super) async fn set_config_option(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let id = req.session_id.0.to_string();
    let session = active(s, &id)?;
    let option = &*req.config_id.0;
    let value = req
        .value
        .as_value_id()
        .map(|v| v.0.to_string())
        .ok_or_else(|| {
            invalid_params(format!(
                "config option {option:?} takes one of its value ids"
            ))
        })?;
    let unknown = |expected: &[String]| {
        invalid_params(format!(
            "unknown value {value:?} for config option {option:?}; expected one of {}",
            expected.join(", ")
        ))
    };
    match option {
        MODE => {
            let mode = parse_mode(&value).ok_or_else(|| {
                unknown(
                    &MODES
                        .iter()
                        .map(|(m, _, _)| m.as_str().to_string())
                        .collect::<Vec<_>>(),
                )
            })?;
            session.set_mode(mode).await.map_err(internal)?;
            // Clients that follow the legacy modes see it too.
            let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str()));
            notify(s, cx, &req.session_id, update);
        }
        MODEL => {
            list_models(s).await;
            let ids = model_ids(s, &session);
            if !ids.contains(&value) {
                return Err(unknown(&ids));
            }
            session.set_model(value).await.map_err(internal)?;
        }
        THOUGHT_LEVEL => {
            let levels: Vec<String> = (ReasoningLevel::ALL.iter())
                .map(|l| l.as_str().to_string())
                .collect();
            if !reasons(&session, &session.meta().model) {
                return Err(invalid_params(format!(
                    "the model {} takes no reasoning level",
                    session.meta().model
                )));
            }
            let level = ReasoningLevel::from_str(&value).map_err(|_| unknown(&levels))?;
            session.set_thought_level(level).await.map_err(internal)?;
        }
        other => {
            return Err(invalid_params(format!(
                "unknown config option {other:?}; expected one of {MODE}, {MODEL}, {THOUGHT_LEVEL}"
            )))
        }
    }
    Ok(SetSessionConfigOptionResponse::new(
        options(s, &session).await,
    ))
}

/// A `config_option_update` with `session`'s whole set, for a change made otherwise than
/// by `session/set_config_option` (`session/set_mode`, plan approval).
pub(crate) fn changed(s: &Shared, session: &Session) -> SessionUpdate {
    SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options_now(s, session)))
}

/// Sends [`changed`] for `session`.
pub(super) fn announce(s: &Shared, cx: &ConnectionTo<Client>, session: &Session) {
    notify(s, cx, &SessionId::new(session.id()), changed(s, session));
}
