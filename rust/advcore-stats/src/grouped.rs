//! Grouped moments: per group count, mean, variance (`ddof`), min and max.
//!
//! Each group is summarised two-pass by [`Moments::from_slice`] (contiguous layout) or by
//! gathering its members through a [`GroupIndex`] (id layout). The per-group states are
//! [`Moments`] values, so partial results over shards of a batch combine exactly.

use crate::error::{Result, check_non_empty};
use crate::groups::{GroupIndex, Groups};
use crate::moments::Moments;
use crate::sample::{NanPolicy, Sample, raise_on_nan};

/// Per-group moments, one entry per group (groups in order for a contiguous layout, in
/// ascending id order for ids).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedMoments {
    /// The id of each group (`None` for a contiguous layout, where group `g` is samples `g*G..(g+1)*G`).
    pub labels: Option<Vec<i64>>,
    /// Per-group state.
    pub moments: Vec<Moments>,
}

/// Compute per-group moments.
///
/// # Errors
/// Empty `values`, a bad layout (see [`Groups::check`]), or NaN under [`NanPolicy::Raise`].
pub fn grouped_moments<T: Sample>(values: &[T], groups: Groups<'_>, nan_policy: NanPolicy) -> Result<GroupedMoments> {
    check_non_empty("values", values.len())?;
    groups.check("values", values.len())?;
    raise_on_nan(nan_policy, "values", values)?;
    let omit = nan_policy == NanPolicy::Omit;
    match groups {
        Groups::Contiguous { size } => {
            let moments = values
                .chunks_exact(size)
                .map(|g| if omit { gather(g.iter().copied(), true) } else { Moments::from_slice(g) })
                .collect();
            Ok(GroupedMoments { labels: None, moments })
        }
        Groups::Ids(ids) => {
            let index = GroupIndex::new(ids)?;
            let moments = (0..index.n_groups())
                .map(|g| gather(index.members(g).iter().map(|&i| values[i as usize]), omit))
                .collect();
            Ok(GroupedMoments { labels: Some(index.labels), moments })
        }
    }
}

fn gather<T: Sample>(xs: impl Iterator<Item = T>, omit: bool) -> Moments {
    let buf: Vec<T> = xs.filter(|x| !(omit && x.is_nan())).collect();
    Moments::from_slice(&buf)
}
