//! How the interleaved measurements (the `fanout`, `encode`, `apply`, `ab` and
//! `mmo` bins) take their rounds, and what they print of them: medians, and how
//! far the rounds spread.

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

/// Measures the two sides of round `round` in turn, `false` then `true`
/// on even rounds and the other way on odd ones, so that neither always
/// runs right after the other (in its cache's wake, or in the machine's
/// drift); returns `(false's, true's)`.
pub fn in_turn<T>(round: usize, mut measure: impl FnMut(bool) -> T) -> (T, T) {
    if round % 2 == 0 {
        let first = measure(false);
        (first, measure(true))
    } else {
        let first = measure(true);
        (measure(false), first)
    }
}

#[cfg(test)]
mod tests {
    use super::{Summary, in_turn, summary};

    #[test]
    fn rounds_alternate_which_side_goes_first_and_return_each_in_its_place() {
        let mut order = Vec::new();
        for round in 0..3 {
            let sides = in_turn(round, |side| {
                order.push(side);
                side
            });
            assert_eq!(sides, (false, true));
        }
        assert_eq!(order, [false, true, true, false, false, true]);
    }

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
