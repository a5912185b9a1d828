//! Time series of one measure (connect, waiting, total, latency...), in
//! microseconds: an HdrHistogram for the quantiles, and exact count, sum,
//! sum of squares, min and max for ab's mean, standard deviation and range.
//!
//! Each core records into its own series with no sharing; at the end the
//! series are merged (HdrHistogram adds bucket counts exactly, so merged
//! quantiles are those of the whole run). The histogram keeps 3
//! significant digits from 1 µs to one hour, so a quantile is within 0.1%
//! of the recorded value; recording is a bucket increment, no allocation.

use hdrhistogram::Histogram;

/// One hour in microseconds: the histogram's ceiling (larger values clamp).
const MAX_US: u64 = 3_600_000_000;

#[derive(Clone, Debug)]
pub struct Series {
    hist: Histogram<u64>,
    count: u64,
    sum: f64,
    sumsq: f64,
    min: u64,
    max: u64,
}

impl Default for Series {
    fn default() -> Self {
        Series::new()
    }
}

impl Series {
    pub fn new() -> Series {
        Series {
            hist: Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds"),
            count: 0,
            sum: 0.0,
            sumsq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, us: u64) {
        self.hist.saturating_record(us.clamp(1, MAX_US));
        self.count += 1;
        let v = us as f64;
        self.sum += v;
        self.sumsq += v * v;
        self.min = self.min.min(us);
        self.max = self.max.max(us);
    }

    pub fn merge(&mut self, other: &Series) {
        self.hist.add(&other.hist).expect("same bounds");
        self.count += other.count;
        self.sum += other.sum;
        self.sumsq += other.sumsq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min_us(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn max_us(&self) -> u64 {
        self.max
    }

    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Sample standard deviation (n - 1), as ab computes it.
    pub fn sd_us(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum / n;
        ((self.sumsq - n * mean * mean) / (n - 1.0)).max(0.0).sqrt()
    }

    pub fn sum_us(&self) -> f64 {
        self.sum
    }

    /// The value at quantile `q` (0.0..=1.0); the exact max for 1.0 and the
    /// exact min for 0.0.
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        if q <= 0.0 {
            return self.min;
        }
        if q >= 1.0 {
            return self.max;
        }
        self.hist.value_at_quantile(q).clamp(self.min, self.max)
    }
}

/// Rounds microseconds to whole milliseconds, half up, as ab's
/// `ap_round_ms` does.
pub fn round_ms(us: f64) -> u64 {
    ((us + 500.0) / 1000.0).floor().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_close_quantiles() {
        let mut s = Series::new();
        for v in 1..=1000u64 {
            s.record(v * 10);
        }
        assert_eq!(s.count(), 1000);
        assert_eq!((s.min_us(), s.max_us()), (10, 10_000));
        assert!((s.mean_us() - 5005.0).abs() < 1e-9);
        // Sample sd of 10, 20, ..., 10000: 10 * sqrt(n (n + 1) / 12).
        let sd = 10.0 * (1000.0f64 * 1001.0 / 12.0).sqrt();
        assert!((s.sd_us() - sd).abs() < 1e-6, "{} vs {sd}", s.sd_us());
        let p50 = s.quantile_us(0.5) as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.002, "{p50}");
        let p99 = s.quantile_us(0.99) as f64;
        assert!((p99 - 9900.0).abs() / 9900.0 < 0.002, "{p99}");
        assert_eq!(s.quantile_us(1.0), 10_000);
        assert_eq!(s.quantile_us(0.0), 10);
    }

    #[test]
    fn merge_is_the_union() {
        let (mut a, mut b, mut all) = (Series::new(), Series::new(), Series::new());
        for v in [5u64, 7, 1_000_000] {
            a.record(v);
            all.record(v);
        }
        for v in [3u64, 500] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!((a.min_us(), a.max_us()), (3, 1_000_000));
        assert_eq!(a.quantile_us(0.5), all.quantile_us(0.5));
        assert!((a.sd_us() - all.sd_us()).abs() < 1e-6);
    }

    #[test]
    fn empty_and_rounding() {
        let s = Series::new();
        assert_eq!((s.min_us(), s.max_us(), s.quantile_us(0.5)), (0, 0, 0));
        assert_eq!(s.mean_us(), 0.0);
        assert_eq!(
            [
                round_ms(0.0),
                round_ms(499.0),
                round_ms(500.0),
                round_ms(1499.9),
                round_ms(2500.0)
            ],
            [0, 0, 1, 1, 3]
        );
    }
}
