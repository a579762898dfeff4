//! What the interleaved bins (`fanout`, `apply`, `ab`) print of their
//! rounds: medians, and how far the rounds spread.

/// The median of some measurements, and their spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The middle value (the upper one of an even count).
    pub median: f64,
    /// The first and third quartiles.
    pub quartiles: (f64, f64),
    /// The smallest and the largest.
    pub range: (f64, f64),
}

/// Sorts `values` and summarizes them.
///
/// # Panics
/// On an empty slice: a bin has measured at least one round.
pub fn summary(values: &mut [f64]) -> Summary {
    assert!(!values.is_empty(), "no measurement to summarize");
    values.sort_by(f64::total_cmp);
    let at = |q: usize| values[(values.len() - 1) * q / 4];
    Summary {
        median: values[values.len() / 2],
        quartiles: (at(1), at(3)),
        range: (values[0], values[values.len() - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::{Summary, summary};

    #[test]
    fn summarizes_in_order_whatever_the_order_given() {
        let mut values = [9.0, 1.0, 5.0, 3.0, 7.0];
        let expected = Summary {
            median: 5.0,
            quartiles: (3.0, 7.0),
            range: (1.0, 9.0),
        };
        assert_eq!(summary(&mut values), expected);
        assert_eq!(summary(&mut [2.0]).median, 2.0);
    }
}
