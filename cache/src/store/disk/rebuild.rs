//! The rebuild at start: the directory read back into the index.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use ringside_runtime::fs::{self, File};

use super::format::{Bad, Header, HEADER_LEN};
use super::index::charge_of;
use super::{Disk, Rebuild, RebuildReport, REBUILD_BATCH};

impl Disk {
    /// Reads the directory into the index: spawn it on the core at start;
    /// lookups of what it finds miss until it ends. Checks each object's
    /// header (checksum, version, generation, hash) and its file's length;
    /// removes temp files of earlier runs and files that fail. Objects
    /// join the eviction order oldest first (by the time they were written),
    /// behind none written since the start. Runs once; a second call
    /// returns an empty report.
    pub async fn rebuild(&self) -> io::Result<RebuildReport> {
        {
            let mut st = self.state.borrow_mut();
            if st.rebuild != Rebuild::NotYet {
                return Ok(RebuildReport::default());
            }
            st.rebuild = Rebuild::Running;
        }
        let mut guard = Rebuilding {
            disk: self,
            done: false,
        };
        let mut report = RebuildReport::default();
        let mut found: Vec<(u64, u64, u64)> = Vec::new(); // (written_at, hash, charge)
        let mut since_turn = 0;
        for one in hex_dirs(&self.dir, 1, &mut report)? {
            let Ok(twos) = hex_dirs(&one, 2, &mut report) else {
                report.errors += 1;
                continue;
            };
            for two in twos {
                let entries = match std::fs::read_dir(&two) {
                    Ok(rd) => rd.filter_map(Result::ok).collect::<Vec<_>>(),
                    Err(_) => {
                        report.errors += 1;
                        continue;
                    }
                };
                for e in entries {
                    self.rebuild_one(&e.path(), &mut report, &mut found).await;
                    since_turn += 1;
                    if since_turn >= REBUILD_BATCH {
                        since_turn = 0;
                        ringside_runtime::task::yield_now().await;
                    }
                }
                ringside_runtime::task::yield_now().await;
            }
        }
        // Newest first, each put at the head: the oldest ends up first.
        found.sort_unstable_by(|a, b| b.cmp(a));
        let mut st = self.state.borrow_mut();
        for (_, hash, charge) in found {
            if st.touched.contains(&hash) {
                continue;
            }
            if st.index.insert_oldest(hash, charge) {
                report.objects += 1;
                report.bytes += charge;
            }
        }
        st.rebuild = Rebuild::Done;
        st.touched = HashSet::new();
        report.evicted = self.evict_to_bound(&mut st);
        guard.done = true;
        Ok(report)
    }

    /// Checks one directory entry for the rebuild.
    async fn rebuild_one(
        &self,
        path: &Path,
        report: &mut RebuildReport,
        found: &mut Vec<(u64, u64, u64)>,
    ) {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            report.foreign += 1;
            return;
        };
        if let Some(stem) = name.strip_suffix(".tmp") {
            // <hash>.<run>-<seq>
            let run = stem
                .split_once('.')
                .and_then(|(_, r)| r.split_once('-'))
                .and_then(|(r, _)| u64::from_str_radix(r, 16).ok());
            if run != Some(self.run) {
                self.unlink_found(path, report).await;
                report.temp += 1;
            }
            return;
        }
        let Some(hash) = name
            .strip_suffix(".obj")
            .filter(|s| s.len() == 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
        else {
            report.foreign += 1;
            return;
        };
        if self.busy(hash) {
            return;
        }
        let verdict = self.check_header(path, hash).await;
        // The core ran meanwhile: a write, removal or eviction of this hash
        // since is newer than what was read.
        if self.busy(hash) {
            return;
        }
        match verdict {
            Ok(Some(h)) => found.push((h.written_at, hash, charge_of(h.file_len()))),
            Ok(None) => {
                report.corrupt += 1;
                self.unlink_found(path, report).await;
            }
            Err(Stale::Version) => {
                report.other_version += 1;
                self.unlink_found(path, report).await;
            }
            Err(Stale::Generation) => {
                report.other_generation += 1;
                self.unlink_found(path, report).await;
            }
            Err(Stale::Io) => report.errors += 1,
            Err(Stale::Gone) => {}
        }
    }

    /// Whether this run has written, removed or evicted `hash` (or is
    /// writing it): the rebuild leaves its file alone.
    fn busy(&self, hash: u64) -> bool {
        let st = self.state.borrow();
        st.touched.contains(&hash) || st.index.contains(hash) || st.writing.contains_key(&hash)
    }

    /// `Ok(None)`: torn or corrupt.
    async fn check_header(&self, path: &Path, hash: u64) -> Result<Option<Header>, Stale> {
        let file = match File::open(path).await {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Stale::Gone),
            Err(_) => return Err(Stale::Io),
        };
        let (r, buf) = file.read_exact_at(vec![0u8; HEADER_LEN], 0).await;
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(_) => return Err(Stale::Io),
        }
        let h = match Header::decode(&buf) {
            Ok(h) => h,
            Err(Bad::Corrupt) => return Ok(None),
            Err(Bad::Version) => return Err(Stale::Version),
        };
        if h.hash != hash {
            return Ok(None);
        }
        if h.generation != self.generation {
            return Err(Stale::Generation);
        }
        match file.len().await {
            Ok(len) if len == h.file_len() => Ok(Some(h)),
            Ok(_) => Ok(None),
            Err(_) => Err(Stale::Io),
        }
    }

    /// Unlinks a file the rebuild found wanting, awaited (the rebuild is
    /// off the request path).
    async fn unlink_found(&self, path: &Path, report: &mut RebuildReport) {
        match fs::remove_file(path).await {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => report.errors += 1,
        }
    }
}

enum Stale {
    Version,
    Generation,
    /// Removed since the directory was listed.
    Gone,
    Io,
}

/// A rebuild dropped before its end may run again.
struct Rebuilding<'a> {
    disk: &'a Disk,
    done: bool,
}

impl Drop for Rebuilding<'_> {
    fn drop(&mut self) {
        if !self.done {
            // What the core did meanwhile stays noted for the next try.
            self.disk.state.borrow_mut().rebuild = Rebuild::NotYet;
        }
    }
}

/// The subdirectories of `dir` named by `digits` hex digits; anything else
/// is counted foreign.
fn hex_dirs(dir: &Path, digits: usize, report: &mut RebuildReport) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else {
            report.errors += 1;
            continue;
        };
        let name = e.file_name();
        let ok = name.to_str().is_some_and(|n| {
            n.len() == digits && n.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if ok && e.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(e.path());
        } else {
            report.foreign += 1;
        }
    }
    out.sort();
    Ok(out)
}
