use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::unix::{input, is_nonblocking, output};
use super::{Input, InputKind, Output, OutputKind};

fn held_in((kind, restore): (InputKind, super::unix::Restore)) -> Input {
    Input {
        kind,
        _restore: Some(restore),
    }
}

fn held_out((kind, restore): (OutputKind, super::unix::Restore)) -> Output {
    Output {
        kind,
        _restore: Some(restore),
    }
}

#[tokio::test]
async fn a_pipe_is_read_through_the_reactor_and_given_back_in_blocking_mode() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    let mut stdin = held_in(input(reader.as_fd(), &[]).expect("a pipe goes through the reactor"));
    assert!(matches!(stdin.kind, InputKind::Pipe(..)));
    assert!(stdin.is_nonblocking());
    assert!(
        is_nonblocking(reader.as_fd()),
        "the pipe is in non-blocking mode while held"
    );

    writer.write_all(b"{\"id\":1}\n").unwrap();
    drop(writer);
    let mut read = String::new();
    stdin.read_to_string(&mut read).await.unwrap();
    assert_eq!(read, "{\"id\":1}\n", "read up to the end of input");

    drop(stdin);
    assert!(
        !is_nonblocking(reader.as_fd()),
        "given back as it was found"
    );
}

#[tokio::test]
async fn a_full_pipe_makes_a_write_wait_without_blocking_the_thread() {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut stdout =
        held_out(output(writer.as_fd(), &[]).expect("a pipe goes through the reactor"));
    assert!(matches!(stdout.kind, OutputKind::Pipe(..)));
    assert!(
        is_nonblocking(writer.as_fd()),
        "so no write can block the thread"
    );

    // More than a pipe holds: the write waits (pending) until the other end reads.
    let message = vec![b'x'; 1 << 20];
    let mut write = Box::pin(async {
        stdout.write_all(&message).await?;
        stdout.flush().await
    });
    assert!(futures::poll!(write.as_mut()).is_pending());
    let drain = std::thread::spawn(move || {
        let mut all = vec![0; 1 << 20];
        reader.read_exact(&mut all).map(|()| all.len())
    });
    tokio::time::timeout(std::time::Duration::from_secs(10), write)
        .await
        .expect("the write ends once the pipe is read")
        .unwrap();
    assert_eq!(drain.join().unwrap().unwrap(), 1 << 20);

    drop(stdout);
    assert!(!is_nonblocking(writer.as_fd()));
}

#[tokio::test]
async fn a_unix_socket_is_read_and_written_through_the_reactor() {
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    let ours_out = ours.try_clone().unwrap();
    // Two descriptors of one socket are one file: as stdin and stdout of one process,
    // neither goes through the reactor.
    assert!(input(ours.as_fd(), &[ours_out.as_fd()]).is_none());

    let mut stdin =
        held_in(input(ours.as_fd(), &[]).expect("a Unix socket goes through the reactor"));
    assert!(matches!(stdin.kind, InputKind::Socket(..)));
    theirs.write_all(b"ping\n").unwrap();
    let mut line = [0; 5];
    stdin.read_exact(&mut line).await.unwrap();
    assert_eq!(&line, b"ping\n");

    let mut stdout = held_out(output(ours_out.as_fd(), &[]).unwrap());
    stdout.write_all(b"pong\n").await.unwrap();
    stdout.shutdown().await.unwrap();
    let mut reply = [0; 5];
    theirs.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"pong\n");
    // Shutting stdout down flushed it and left the socket open for writing.
    stdout.write_all(b"more\n").await.unwrap();
    theirs.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"more\n");

    drop((stdin, stdout));
    assert!(!is_nonblocking(ours.as_fd()));
}

#[tokio::test]
async fn a_socket_found_in_non_blocking_mode_is_left_so() {
    let (ours, _theirs) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    drop(input(ours.as_fd(), &[]).expect("a Unix socket goes through the reactor"));
    assert!(is_nonblocking(ours.as_fd()));
}

#[tokio::test]
async fn files_and_a_stdout_shared_with_stderr_stay_on_the_blocking_pool() {
    let file = tempfile::tempfile().unwrap();
    assert!(input(file.as_fd(), &[]).is_none(), "a file");
    assert!(output(file.as_fd(), &[]).is_none(), "a file");
    assert!(!is_nonblocking(file.as_fd()));

    // `2>&1`: stdout and stderr are one pipe.
    let (_reader, writer) = std::io::pipe().unwrap();
    let stderr = writer.try_clone().unwrap();
    assert!(output(writer.as_fd(), &[stderr.as_fd()]).is_none());
    assert!(
        !is_nonblocking(writer.as_fd()),
        "left in blocking mode for stderr's writes"
    );
}

#[test]
fn outside_a_runtime_nothing_is_registered() {
    let (reader, _writer) = std::io::pipe().unwrap();
    assert!(input(reader.as_fd(), &[]).is_none());
    assert!(!is_nonblocking(reader.as_fd()));
}
