//! Group layouts: a contiguous group size G (GRPO's usual layout, sample `i` in group `i / G`)
//! or an integer id per sample in any order with any group sizes.
//!
//! [`GroupIndex`] maps arbitrary `i64` ids to dense indices `0..n_groups` in ascending id order
//! (as `numpy.unique` would list them) and lays the samples out group by group (CSR), by a
//! counting sort when the ids span a modest range and by sorting otherwise.

use crate::error::{Result, StatsError};

/// How samples are assigned to groups.
#[derive(Debug, Clone, Copy)]
pub enum Groups<'a> {
    /// Consecutive blocks of `size` samples; the length must be a multiple of `size`.
    Contiguous {
        /// Group size G.
        size: usize,
    },
    /// One id per sample, any order, any sizes.
    Ids(&'a [i64]),
}

impl Groups<'_> {
    /// Validate the layout against `n` samples of `values_arg`.
    ///
    /// # Errors
    /// `group_size` zero or not dividing `n`; `group_ids` of the wrong length.
    pub fn check(&self, values_arg: &'static str, n: usize) -> Result<()> {
        match *self {
            Groups::Contiguous { size } => {
                if size == 0 {
                    return Err(StatsError::invalid("group_size", "must be at least 1"));
                }
                if !n.is_multiple_of(size) {
                    return Err(StatsError::invalid(
                        "group_size",
                        format!(
                            "{values_arg} has {n} samples, not a multiple of group_size={size}, so the layout is not contiguous groups of {size}; pass group_ids instead"
                        ),
                    ));
                }
                Ok(())
            }
            Groups::Ids(ids) => crate::error::check_same_len(values_arg, n, "group_ids", ids.len()),
        }
    }

    /// The same grouping as [`Groups::Contiguous`] when the ids are ascending runs of one length
    /// (`[0, 0, 1, 1, 2, 2]`, how trainers number GRPO groups), else `self`: the contiguous kernels
    /// skip mapping the ids to dense indices, and the dense order (ascending id) is the run order, so
    /// every grouped statistic is the same. One pass over the ids, stopped at the first mismatch.
    #[must_use]
    pub fn simplified(self) -> Self {
        let Groups::Ids(ids) = self else { return self };
        let Some(&first) = ids.first() else { return self };
        let size = ids.iter().position(|&id| id != first).unwrap_or(ids.len());
        if !ids.len().is_multiple_of(size) {
            return self;
        }
        let mut previous: Option<i64> = None;
        for run in ids.chunks_exact(size) {
            let id = run[0];
            if previous.is_some_and(|p| p >= id) || run.iter().any(|&x| x != id) {
                return self;
            }
            previous = Some(id);
        }
        Groups::Contiguous { size }
    }
}

/// Dense group index of a set of `i64` ids.
#[derive(Debug, Clone)]
pub struct GroupIndex {
    /// The distinct ids, ascending; `labels[g]` is the id of dense group `g`.
    pub labels: Vec<i64>,
    /// Dense group of each sample, in sample order.
    pub dense: Vec<u32>,
    /// `order[offsets[g]..offsets[g + 1]]` are the samples of group `g`, in sample order.
    pub offsets: Vec<usize>,
    /// Sample indices laid out group by group.
    pub order: Vec<u32>,
}

/// Ids spanning at most this many times the sample count (or 65,536) use a direct table.
const DIRECT_SPAN_FACTOR: u64 = 4;

impl GroupIndex {
    /// Build the index.
    ///
    /// # Errors
    /// More than `u32::MAX` samples.
    pub fn new(ids: &[i64]) -> Result<Self> {
        if ids.len() >= u32::MAX as usize {
            return Err(StatsError::invalid("group_ids", "more than 2^32 - 1 samples are not supported"));
        }
        let (labels, dense) = dense_ids(ids);
        let n_groups = labels.len();
        let mut offsets = vec![0usize; n_groups + 1];
        for &g in &dense {
            offsets[g as usize + 1] += 1;
        }
        for g in 0..n_groups {
            offsets[g + 1] += offsets[g];
        }
        let mut cursor = offsets.clone();
        let mut order = vec![0u32; ids.len()];
        for (i, &g) in dense.iter().enumerate() {
            let slot = &mut cursor[g as usize];
            order[*slot] = i as u32;
            *slot += 1;
        }
        Ok(Self { labels, dense, offsets, order })
    }

    /// Number of groups.
    #[must_use]
    pub fn n_groups(&self) -> usize {
        self.labels.len()
    }

    /// Sample indices of dense group `g`.
    #[must_use]
    pub fn members(&self, g: usize) -> &[u32] {
        &self.order[self.offsets[g]..self.offsets[g + 1]]
    }
}

/// Map ids to dense indices in ascending id order. Returns `(labels, dense)`.
#[must_use]
pub fn dense_ids(ids: &[i64]) -> (Vec<i64>, Vec<u32>) {
    let Some((&lo, &hi)) = ids.iter().min().zip(ids.iter().max()) else {
        return (Vec::new(), Vec::new());
    };
    let span = hi.abs_diff(lo);
    let limit = (ids.len() as u64).saturating_mul(DIRECT_SPAN_FACTOR).max(1 << 16);
    if span < limit {
        let mut table = vec![u32::MAX; span as usize + 1];
        for &id in ids {
            table[id.abs_diff(lo) as usize] = 0;
        }
        let mut labels = Vec::new();
        for (offset, slot) in table.iter_mut().enumerate() {
            if *slot == 0 {
                *slot = labels.len() as u32;
                labels.push(lo.wrapping_add(offset as i64));
            }
        }
        let dense = ids.iter().map(|&id| table[id.abs_diff(lo) as usize]).collect();
        (labels, dense)
    } else {
        let mut labels = ids.to_vec();
        labels.sort_unstable();
        labels.dedup();
        let dense = ids.iter().map(|id| labels.binary_search(id).unwrap_or(0) as u32).collect();
        (labels, dense)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_dense_ids_agree() {
        let ids = [7i64, -3, 7, 1 << 40, -3, 0];
        let idx = GroupIndex::new(&ids).unwrap();
        assert_eq!(idx.labels, vec![-3, 0, 7, 1 << 40]);
        assert_eq!(idx.dense, vec![2, 0, 2, 3, 0, 1]);
        assert_eq!(idx.members(0), &[1, 4]);
        assert_eq!(idx.members(2), &[0, 2]);
        let small = [5i64, 3, 5, 4];
        assert_eq!(dense_ids(&small), (vec![3, 4, 5], vec![2, 0, 2, 1]));
    }

    #[test]
    fn sorted_runs_of_one_length_are_contiguous() {
        let simple = |ids: &[i64]| match Groups::Ids(ids).simplified() {
            Groups::Contiguous { size } => Some(size),
            Groups::Ids(_) => None,
        };
        assert_eq!(simple(&[3, 3, 7, 7, 9, 9]), Some(2));
        assert_eq!(simple(&[5, 5, 5]), Some(3));
        assert_eq!(simple(&[0, 1, 2]), Some(1));
        assert_eq!(simple(&[0, 0, 1, 1, 1, 2]), None); // unequal runs
        assert_eq!(simple(&[1, 1, 0, 0]), None); // descending: dense order differs from run order
        assert_eq!(simple(&[0, 0, 1, 1, 0, 0]), None); // a group in two runs
        assert_eq!(simple(&[0, 0, 0, 1, 1]), None); // length not a multiple of the first run
        assert_eq!(simple(&[]), None);
    }

    #[test]
    fn extreme_ids_do_not_overflow() {
        let ids = [i64::MIN, i64::MAX, 0];
        assert_eq!(dense_ids(&ids).1, vec![0, 2, 1]);
    }

    #[test]
    fn layout_errors_name_the_argument() {
        assert_eq!(Groups::Contiguous { size: 3 }.check("values", 10).unwrap_err().arg(), "group_size");
        assert_eq!(Groups::Ids(&[1, 2]).check("values", 3).unwrap_err().arg(), "group_ids");
    }
}
