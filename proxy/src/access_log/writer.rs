//! The log file's one writer: a thread that owns the file, takes full
//! buffers from the cores over a channel, and reopens the file on SIGUSR1.
//!
//! The cores never write the file themselves, so a slow disk delays this
//! thread, not a request. A core hands over its buffer when it is full or
//! old (see [`super::CoreLog`]): one channel message per buffer, not per
//! line.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::OnceLock;

pub enum Msg {
    Lines(Vec<u8>),
    /// Open the file again by its path: logrotate moved the old one away.
    Reopen,
    /// A reload named another file.
    Path(PathBuf),
    /// Answer once everything sent before is written.
    Sync(Sender<()>),
}

static SENDER: OnceLock<Sender<Msg>> = OnceLock::new();

/// The channel to the writer, once started.
pub fn sender() -> Option<Sender<Msg>> {
    SENDER.get().cloned()
}

/// Through the keeper when privileges were dropped, so that SIGUSR1 can
/// reopen a log in a directory only root may write.
fn open(path: &Path) -> std::io::Result<File> {
    crate::privileges::keeper::open_log(path)
}

/// Opens `path` (an error here stops the start, as nginx does for a log it
/// cannot open) and starts the writer thread.
pub fn start(path: &Path) -> std::io::Result<()> {
    let file = open(path)?;
    let (tx, rx) = mpsc::channel();
    if SENDER.set(tx).is_err() {
        return Err(std::io::Error::other("the access log writer runs already"));
    }
    let path = path.to_path_buf();
    std::thread::Builder::new()
        .name("ringside-log".into())
        .spawn(move || run(file, path, rx))?;
    Ok(())
}

fn run(mut file: File, mut path: PathBuf, rx: Receiver<Msg>) {
    for msg in rx {
        match msg {
            Msg::Lines(buf) => {
                if let Err(e) = file.write_all(&buf) {
                    tracing::error!(file = %path.display(), error = %e, "cannot write the access log");
                }
            }
            Msg::Reopen => match open(&path) {
                Ok(f) => {
                    file = f;
                    tracing::info!(file = %path.display(), "access log reopened");
                }
                Err(e) => {
                    tracing::error!(file = %path.display(), error = %e, "cannot reopen the access log; writing to the old file")
                }
            },
            Msg::Path(p) if p != path => match open(&p) {
                Ok(f) => {
                    file = f;
                    path = p;
                    tracing::info!(file = %path.display(), "access log moved");
                }
                Err(e) => {
                    tracing::error!(file = %p.display(), error = %e, "cannot open the new access log; keeping the old")
                }
            },
            Msg::Path(_) => {}
            Msg::Sync(done) => {
                let _ = file.flush();
                let _ = done.send(());
            }
        }
    }
}

/// Asks the writer to reopen its file.
pub fn reopen() {
    if let Some(tx) = SENDER.get() {
        let _ = tx.send(Msg::Reopen);
    }
}

/// Points the writer at another file.
pub fn set_path(path: &Path) {
    if let Some(tx) = SENDER.get() {
        let _ = tx.send(Msg::Path(path.to_path_buf()));
    }
}

/// Waits until everything sent so far is written.
pub fn sync() {
    if let Some(tx) = SENDER.get() {
        let (done, wait) = mpsc::channel();
        if tx.send(Msg::Sync(done)).is_ok() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(5));
        }
    }
}
