//! A TCP server on 127.0.0.1, port 0, running on its own thread and runtime, so that it
//! serves synchronous and asynchronous tests alike and stops when dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// The running server; dropping it closes the listener and every open connection.
pub(crate) struct Background {
    pub(crate) addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Binds 127.0.0.1:0 and serves each accepted connection with `serve`.
    ///
    /// # Panics
    ///
    /// When no port can be bound or no runtime can be built: a test cannot go on without
    /// its server.
    pub(crate) fn spawn<F, Fut>(name: &str, serve: F) -> Self
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("{name}: cannot bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("{name}: no local address: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("{name}: cannot make the listener non-blocking: {e}"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{name}: cannot build a runtime: {e}"));
        let (shutdown, mut stop) = oneshot::channel::<()>();
        let label = name.to_string();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => return eprintln!("{label}: cannot listen: {e}"),
                    };
                    loop {
                        tokio::select! {
                            _ = &mut stop => break,
                            accepted = listener.accept() => match accepted {
                                Ok((stream, _)) => {
                                    let _ = stream.set_nodelay(true);
                                    tokio::spawn(serve(stream));
                                }
                                Err(e) => eprintln!("{label}: accept failed: {e}"),
                            },
                        }
                    }
                });
                // Dropping the runtime drops every connection task, closing its socket.
                drop(runtime);
            })
            .unwrap_or_else(|e| panic!("{name}: cannot spawn its thread: {e}"));
        Self {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A base URL where nothing listens: connecting is refused.
pub fn refused_url() -> String {
    match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(addr) => format!("http://{addr}"),
        // Port 9 (discard) is not served on test machines.
        Err(_) => "http://127.0.0.1:9".to_string(),
    }
}
