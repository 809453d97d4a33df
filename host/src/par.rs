//! The planners' host parallelism: contiguous ranges of rows, each walked on its own thread
//! (scoped threads of the standard library, no pool). A plan is the same whatever the number
//! of threads: each range's result is made as the one-thread walk makes it, and the results
//! are joined in row order.

use core::ops::Range;

use crate::error::{Error, Result};

/// Below this much work (the planners' units: block pairs, stream positions) a plan is walked
/// on one thread: a thread costs tens of microseconds to start, about what a walk of this
/// size takes.
pub(crate) const MIN_PARALLEL_WORK: u64 = 1 << 16;

/// At most this many threads by default: the walks read and write memory at about one byte
/// per cycle each, and more threads than this bring little on the hosts measured (perf notes
/// v35).
pub(crate) const MAX_DEFAULT_THREADS: usize = 8;

/// At most this many threads when a caller asks for more.
pub(crate) const MAX_THREADS: usize = 64;

/// Threads for a walk of `work` units: `requested` ([`PlanOptions::threads`], from one to
/// [`MAX_THREADS`]), or by default one below [`MIN_PARALLEL_WORK`] and else the host's
/// available parallelism up to [`MAX_DEFAULT_THREADS`].
///
/// [`PlanOptions::threads`]: crate::PlanOptions::threads
pub(crate) fn threads_for(requested: Option<usize>, work: u64) -> usize {
    match requested {
        Some(t) => t.clamp(1, MAX_THREADS),
        None if work < MIN_PARALLEL_WORK => 1,
        None => std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_DEFAULT_THREADS)),
    }
}

/// `0..rows` cut into at most `parts` contiguous ranges of about equal weight (`weight(r)`
/// per row), none empty (one range `0..0` for no rows).
pub(crate) fn balanced_ranges(rows: usize, parts: usize, weight: impl Fn(usize) -> u64) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, rows.max(1));
    if parts == 1 {
        return std::iter::once(0..rows).collect();
    }
    let total: u64 = (0..rows).map(&weight).sum();
    let mut out = Vec::with_capacity(parts);
    let (mut start, mut acc) = (0, 0u64);
    for r in 0..rows {
        acc += weight(r);
        // Close the range at the first row whose running weight reaches its share.
        let share = (total as u128 * (out.len() as u128 + 1)).div_ceil(parts as u128);
        if acc as u128 >= share && out.len() + 1 < parts {
            out.push(start..r + 1);
            start = r + 1;
        }
    }
    if start < rows || out.is_empty() {
        out.push(start..rows);
    }
    out
}

/// `f(i, ranges[i].clone(), &mut items[i])` for every range, each on its own thread (the first
/// on this one), the results in range order. A thread the system cannot start runs its range on
/// this thread after the others are started; the first error (in range order) is returned, and
/// a panic in any range goes on to the caller as it would from this thread.
pub(crate) fn for_ranges<T: Send, R: Send>(
    ranges: &[Range<usize>],
    items: &mut [T],
    f: impl Fn(usize, Range<usize>, &mut T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    debug_assert_eq!(ranges.len(), items.len());
    if ranges.len() <= 1 {
        return ranges.iter().zip(items.iter_mut()).enumerate().map(|(i, (r, t))| f(i, r.clone(), t)).collect();
    }
    std::thread::scope(|s| {
        let f = &f;
        let mut handles = Vec::with_capacity(ranges.len());
        let mut inline = Vec::new();
        let mut jobs = ranges.iter().cloned().zip(items.iter_mut()).enumerate();
        let first = jobs.next();
        for (i, (r, t)) in jobs {
            // The job goes back to this thread if the system cannot start one.
            let job = std::sync::Arc::new(std::sync::Mutex::new(Some((r, t))));
            let mine = job.clone();
            let spawned = std::thread::Builder::new().name("blocksparse-plan".into()).spawn_scoped(s, move || {
                let taken = mine.lock().ok().and_then(|mut g| g.take());
                taken.map(|(r, t)| f(i, r, t))
            });
            match spawned {
                Ok(h) => handles.push((i, h)),
                Err(_) => inline.push((i, job)),
            }
        }
        let mut out: Vec<(usize, Result<R>)> = Vec::with_capacity(ranges.len());
        if let Some((i, (r, t))) = first {
            out.push((i, f(i, r, t)));
        }
        for (i, job) in inline {
            let taken = job.lock().ok().and_then(|mut g| g.take());
            if let Some((r, t)) = taken {
                out.push((i, f(i, r, t)));
            }
        }
        for (i, h) in handles {
            let res = match h.join() {
                Ok(Some(res)) => res,
                Ok(None) => Err(Error::Internal(format!("range {i} of a planner walk was not run"))),
                Err(panic) => std::panic::resume_unwind(panic),
            };
            out.push((i, res));
        }
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, r)| r).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_rows_in_order_and_balance_the_weight() {
        for rows in [0usize, 1, 2, 7, 100, 1000] {
            for parts in [1usize, 2, 3, 8, 2000] {
                for skew in [false, true] {
                    let weight = |r: usize| if skew && r.is_multiple_of(97) { 1000 } else { (r % 5) as u64 + 1 };
                    let ranges = balanced_ranges(rows, parts, weight);
                    assert!(!ranges.is_empty() && ranges.len() <= parts.max(1));
                    assert_eq!(ranges[0].start, 0);
                    assert_eq!(ranges.last().map(|r| r.end), Some(rows));
                    for w in ranges.windows(2) {
                        assert_eq!(w[0].end, w[1].start);
                        assert!(w[0].start < w[0].end, "{rows} rows, {parts} parts: an empty range");
                    }
                    // No range holds more than its share plus one row.
                    let total: u64 = (0..rows).map(weight).sum();
                    let max_row = (0..rows).map(weight).max().unwrap_or(0);
                    for r in &ranges {
                        let w: u64 = r.clone().map(weight).sum();
                        assert!(w <= total.div_ceil(ranges.len() as u64) + max_row, "{rows} rows, {parts} parts, {r:?}: {w} of {total}");
                    }
                }
            }
        }
    }

    #[test]
    fn for_ranges_returns_results_in_order_and_the_first_error() {
        let ranges = balanced_ranges(100, 7, |_| 1);
        let mut items = vec![0usize; ranges.len()];
        let out = for_ranges(&ranges, &mut items, |i, r, t| {
            *t = r.len();
            Ok((i, r.start))
        })
        .unwrap();
        assert_eq!(out, ranges.iter().enumerate().map(|(i, r)| (i, r.start)).collect::<Vec<_>>());
        assert_eq!(items.iter().sum::<usize>(), 100);
        let err = for_ranges(&ranges, &mut items, |i, _, _| if i >= 3 { Err(Error::Internal(format!("range {i}"))) } else { Ok(i) });
        assert!(matches!(err, Err(Error::Internal(m)) if m == "range 3"));
    }
}
