//! Order-preserving unsigned keys for floats, the basis of the radix sorts and selections.
//!
//! Flipping the sign bit of non-negative floats and all bits of negative ones maps IEEE-754
//! total order onto unsigned integer order (Herf, "Radix tricks", 2001). `-0.0` is mapped to
//! `+0.0` first so that the two zeros tie, as they do under `==`. NaN keys sort past `+inf`
//! (or before `-inf` for negative NaN); callers remove NaN before ranking or selecting.

/// A float with an order-preserving unsigned key.
pub trait SortKey: Copy {
    /// The unsigned key type (`u32` for `f32`, `u64` for `f64`).
    type Key: Copy + Ord + Send + Sync + std::fmt::Debug;
    /// The key; `a < b` implies `key(a) < key(b)`, and `-0.0` and `+0.0` share a key.
    fn sort_key(self) -> Self::Key;
    /// Inverse of [`SortKey::sort_key`] (returns `+0.0` for either zero).
    fn from_key(key: Self::Key) -> Self;
}

impl SortKey for f32 {
    type Key = u32;
    #[inline(always)]
    fn sort_key(self) -> u32 {
        let bits = (self + 0.0).to_bits();
        let mask = ((bits as i32 >> 31) as u32) | 0x8000_0000;
        bits ^ mask
    }
    #[inline(always)]
    fn from_key(key: u32) -> f32 {
        let mask = if key & 0x8000_0000 == 0 { u32::MAX } else { 0x8000_0000 };
        f32::from_bits(key ^ mask)
    }
}

impl SortKey for f64 {
    type Key = u64;
    #[inline(always)]
    fn sort_key(self) -> u64 {
        let bits = (self + 0.0).to_bits();
        let mask = ((bits as i64 >> 63) as u64) | 0x8000_0000_0000_0000;
        bits ^ mask
    }
    #[inline(always)]
    fn from_key(key: u64) -> f64 {
        let mask = if key & 0x8000_0000_0000_0000 == 0 { u64::MAX } else { 0x8000_0000_0000_0000 };
        f64::from_bits(key ^ mask)
    }
}

#[cfg(test)]
mod tests {
    use super::SortKey;
    use proptest::prelude::*;

    #[test]
    fn zeros_tie_and_order_holds_at_the_edges() {
        assert_eq!((-0.0f32).sort_key(), 0.0f32.sort_key());
        assert!(f32::NEG_INFINITY.sort_key() < f32::MIN.sort_key());
        assert!(f32::MAX.sort_key() < f32::INFINITY.sort_key());
        assert!((-f32::MIN_POSITIVE).sort_key() < 0.0f32.sort_key());
        assert_eq!(f64::from_key((-2.5f64).sort_key()), -2.5);
    }

    proptest! {
        #[test]
        fn key_order_is_float_order_f32(a in any::<f32>().prop_filter("finite", |x| !x.is_nan()),
                                        b in any::<f32>().prop_filter("finite", |x| !x.is_nan())) {
            prop_assert_eq!(a.partial_cmp(&b).unwrap(), a.sort_key().cmp(&b.sort_key()));
        }
        #[test]
        fn key_order_is_float_order_f64(a in any::<f64>().prop_filter("finite", |x| !x.is_nan()),
                                        b in any::<f64>().prop_filter("finite", |x| !x.is_nan())) {
            prop_assert_eq!(a.partial_cmp(&b).unwrap(), a.sort_key().cmp(&b.sort_key()));
        }
    }
}
