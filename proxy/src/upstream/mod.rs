//! Upstreams: per-core connection pools and their policies, balancing,
//! health, the one forward loop and the codecs it runs (HTTP/1 here,
//! FastCGI in `crate::fastcgi`), the header policy, and tunnels.

pub mod acquire;
pub mod addr;
pub mod balance;
pub mod client_cert;
pub mod codec;
pub mod failure;
pub mod forward;
pub mod grpc;
pub mod h1;
pub mod h2;
pub mod headers;
pub mod io;
pub mod local;
pub mod outcome;
pub mod policy;
pub mod pool;
pub mod probe_h2;
pub mod settings;
pub mod shared;
pub mod too_early;
pub mod tunnel;
