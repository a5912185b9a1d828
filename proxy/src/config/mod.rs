//! Configuration, in two layers (DESIGN.md §7).
//!
//! 1. The file layer ([`file`]): serde structs mirroring the TOML file, with
//!    `deny_unknown_fields`, every key optional, and every value wrapped in
//!    `toml::Spanned` so that later errors know where it was written.
//! 2. The validated layer ([`Config`]): the runtime's own structs
//!    (`RuntimeConfig`, `ServerConfig`) with real durations, sizes and socket
//!    addresses, built by `TryFrom<Document>` in [`validate`], which checks
//!    each value against what the runtime can really do.
//!
//! Every error names the file, the line and column, and the key
//! ([`ConfigError`]). [`Config::to_toml`] writes the effective configuration
//! back out, every key included, in a form [`Config::load`] reads.
//!
//! ```toml
//! [runtime]
//! workers = "auto"          # or a positive integer
//! cpu_affinity = true       # true | false | [0, 2, 4]
//! backend = "auto"          # "auto" | "io-uring" | "epoll" | "kqueue" | "devpoll" | "glommio"
//! ring_entries = 1024
//!
//! [server]
//! listen = ["127.0.0.1:8080"]
//! backlog = 4096
//! root = "."                # relative to this file's directory
//!
//! [limits]
//! max_request_line = "8k"   # integer bytes, or k/m/g (powers of 1024)
//! max_head = "16k"
//! max_headers = 64
//! max_body = "1m"
//!
//! [timeouts]
//! header_read = "10s"       # ns/us/ms/s/m/h, or integer seconds
//! keepalive = "75s"
//! body_read = "60s"
//! send = "60s"
//! shutdown_grace = "30s"
//!
//! [static]
//! index = ["index.html"]
//! listing = false
//! precompressed = true      # .br/.zst/.gz siblings by Accept-Encoding
//! cache_control = "max-age=60"
//! mime = { wasm = "application/wasm" }
//! cache_max_bytes = "64m"   # per core
//! cache_max_file = "64k"    # larger files are sent from disk without a copy
//! revalidate = "1s"
//!
//! [[route]]
//! prefix = "/assets/"
//! root = "/srv/assets"      # the whole request path is looked up beneath it
//! cache_control = "public, max-age=31536000, immutable"
//! listing = true
//! ```

mod cpus;
mod emit;
pub mod error;
pub mod file;
pub mod size;
pub mod validate;

use std::fs;
use std::path::{Path, PathBuf};

use ringside_runtime::config::{RuntimeConfig, ServerConfig};
use ringside_static::StaticConfig;

pub use error::ConfigError;
pub use validate::Document;

/// The validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub runtime: RuntimeConfig,
    pub server: ServerConfig,
    /// The directory served as static files: absolute, symlinks resolved.
    pub root: PathBuf,
    /// Static serving; its `root` is kept equal to `root` above.
    pub statics: StaticConfig,
    /// The file this came from; `None` for the built-in default.
    pub source: Option<PathBuf>,
}

impl Default for Config {
    /// The built-in default: serve the current directory on
    /// 127.0.0.1:8080 with one worker per CPU.
    fn default() -> Self {
        let root = fs::canonicalize(".").unwrap_or_else(|_| PathBuf::from("."));
        Config {
            runtime: RuntimeConfig::default(),
            server: ServerConfig::default(),
            root: root.clone(),
            statics: StaticConfig::new(root),
            source: None,
        }
    }
}

impl Config {
    /// Sets the served directory (the `--root` flag).
    pub fn set_root(&mut self, root: PathBuf) {
        self.statics.root = root.clone();
        self.root = root;
    }

    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = fs::read_to_string(path).map_err(|e| ConfigError::read(path, &e))?;
        let config = Config::parse(&text, path)?;
        tracing::debug!(file = %path.display(), "config loaded");
        Ok(config)
    }

    /// Validates `text` as if read from `path`: errors name `path`, and a
    /// relative `root` is taken from `path`'s directory.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let file: file::FileConfig =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
        Config::try_from(Document { file, text, path })
    }
}

#[cfg(test)]
mod tests;
