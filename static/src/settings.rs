//! Validated static-serving settings, built by the binary's config layer.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticConfig {
    /// The docroot of every route that names none.
    pub root: PathBuf,
    /// Tried in order for a directory request.
    pub index: Vec<String>,
    /// Directory listings (off by default, as in nginx).
    pub listing: bool,
    /// Serve `.br`, `.zst`, `.gz` siblings by Accept-Encoding.
    pub precompressed: bool,
    /// Cache-Control for routes that set none.
    pub cache_control: Option<String>,
    /// Extension → Content-Type, before the built-in table.
    pub mime: Vec<(String, String)>,
    pub cache: CacheConfig,
    /// Longest prefix wins; a request matching none uses the defaults above.
    pub routes: Vec<RouteConfig>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Per core.
    pub max_bytes: u64,
    /// Files up to this size are cached and sent from memory with the head
    /// in one write; larger ones go from the file without a copy.
    pub max_file: u64,
    /// Per core: larger files kept open (with their metadata and which
    /// precompressed siblings exist), so a hit opens and stats nothing; 0
    /// opens them per request.
    pub max_open: usize,
    /// How old an entry may be before a stat checks it against the disk.
    pub revalidate: Duration,
}

/// A URL prefix served from a docroot. By default nginx's `root`: the whole
/// request path is looked up beneath the root, so `/assets/a.css` under root
/// `/srv` is `/srv/assets/a.css`. With `alias`, nginx's `alias`: the prefix
/// is replaced by the root, so `/assets/a.css` under `/srv/assets` is
/// `/srv/assets/a.css`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteConfig {
    pub prefix: String,
    pub root: Option<PathBuf>,
    /// The prefix is replaced by `root` (else the server's root) instead of
    /// being looked up beneath it.
    pub alias: bool,
    pub cache_control: Option<String>,
    pub listing: Option<bool>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            max_bytes: 64 << 20,
            max_file: 64 << 10,
            max_open: 256,
            revalidate: Duration::from_secs(1),
        }
    }
}

impl StaticConfig {
    pub fn new(root: PathBuf) -> StaticConfig {
        StaticConfig {
            root,
            index: vec!["index.html".into()],
            listing: false,
            precompressed: true,
            cache_control: None,
            mime: Vec::new(),
            cache: CacheConfig::default(),
            routes: Vec::new(),
        }
    }
}
