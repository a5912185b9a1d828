//! What a handler factory learns about the worker it builds for.

use std::sync::Arc;

use crate::backend::Backend;
use crate::stats::WorkerStats;

#[derive(Clone, Debug)]
pub struct WorkerContext {
    pub index: usize,
    pub workers: usize,
    pub cpu: Option<usize>,
    pub backend: Backend,
    /// This worker's connection counters.
    pub stats: Arc<WorkerStats>,
}
