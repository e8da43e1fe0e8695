//! Without an endpoint in the environment, `init` installs nothing.

#[test]
fn without_an_endpoint_init_does_nothing() {
    // This binary holds this one test, so the process environment is ours to set.
    std::env::remove_var(agent_otel::ENDPOINT_ENV);
    std::env::remove_var(agent_otel::TRACES_ENDPOINT_ENV);
    assert!(!agent_otel::enabled());
    let guard = agent_otel::init("disabled").expect("no error");
    assert!(guard.is_none());
    // No global subscriber was installed: the host may still set its own.
    let subscriber = tracing::subscriber::NoSubscriber::default();
    assert!(tracing::subscriber::set_global_default(subscriber).is_ok());
}
