//! The edge server as a library: what the `ringside` binary runs, and what
//! the fuzz targets in `fuzz/` reach (the upstream response parser, the
//! FastCGI record parser, the config loader).

pub mod access_log;
pub mod acme;
pub mod check;
pub mod cli;
pub mod config;
pub mod control;
pub mod edge;
pub mod failpoint;
pub mod fastcgi;
pub mod metrics;
pub mod notify;
pub mod privileges;
pub mod process;
pub mod reload;
pub mod seqpacket;
pub mod signals;
pub mod tls;
pub mod unix_listen;
pub mod upgrade;
pub mod upstream;
