//! [`IntoArc`]: one argument type for "a trait object, owned or already shared".
//!
//! Builder methods that keep a provider, tool, tool source, approver, hooks or session store
//! take `impl IntoArc<dyn Trait>`, so the same method accepts a value (`ScriptedProvider`),
//! an `Arc` of one (`Arc<ScriptedProvider>`) and a shared trait object
//! (`Arc<dyn Provider>`), and an already shared object is never wrapped twice.
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{Agent, Provider};
//! use agent_providers::scripted::{ScriptedProvider, Turn};
//!
//! let owned = Agent::builder(ScriptedProvider::new([Turn::new().text("hi")])).build();
//! let shared: Arc<dyn Provider> = Arc::new(ScriptedProvider::new([Turn::new().text("hi")]));
//! let from_arc = Agent::builder(shared.clone()).build();
//! assert!(Arc::ptr_eq(from_arc.provider(), &shared));
//! # let _ = owned;
//! ```
//!
//! (`Into<Arc<dyn Trait>>` cannot serve: the orphan rule forbids implementing `From<T>` for
//! `Arc<dyn Trait>` for every implementor `T`.)

use std::sync::Arc;

use crate::hooks::Hooks;
use crate::permission::Approver;
use crate::provider::Provider;
use crate::session::SessionStore;
use crate::tool::Tool;
use crate::tool_source::ToolSource;

/// A value that can become an `Arc<T>` (`T` a trait object such as `dyn Tool`): any
/// implementor of the trait, an `Arc` of one, or an `Arc<dyn Trait>` itself (passed on as
/// is). Every builder method that keeps a trait object takes one.
pub trait IntoArc<T: ?Sized> {
    /// The shared object.
    fn into_arc(self) -> Arc<T>;
}

macro_rules! into_arc {
    ($($trait:ident),* $(,)?) => {$(
        impl<V: $trait> IntoArc<dyn $trait> for V {
            fn into_arc(self) -> Arc<dyn $trait> {
                Arc::new(self)
            }
        }

        impl<V: $trait> IntoArc<dyn $trait> for Arc<V> {
            fn into_arc(self) -> Arc<dyn $trait> {
                self
            }
        }

        impl IntoArc<dyn $trait> for Arc<dyn $trait> {
            fn into_arc(self) -> Arc<dyn $trait> {
                self
            }
        }
    )*};
}

into_arc!(Provider, Tool, ToolSource, Approver, Hooks, SessionStore);
