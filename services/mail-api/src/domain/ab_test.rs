//! The arithmetic of A/B tests: the deterministic split of an audience among variants, Wilson
//! score intervals for each variant's rate, and Pearson's chi-squared test of independence on
//! the 2×k table of successes and failures (its p-value from the chi-squared distribution's
//! survival function, the regularized upper incomplete gamma function).

use uuid::Uuid;

/// The confidence levels a decision rule may use: 0.8..=0.999.
pub const CONFIDENCE_RANGE: std::ops::RangeInclusive<f64> = 0.8..=0.999;

/// The two-sided standard normal quantile z with P(|Z| ≤ z) = `confidence`, for a level in
/// [`CONFIDENCE_RANGE`] (`None` outside it).
pub fn z_of(confidence: f64) -> Option<f64> {
    CONFIDENCE_RANGE
        .contains(&confidence)
        .then(|| normal_quantile(0.5 + confidence / 2.0))
}

/// The standard normal quantile of `p` (0 < p < 1) by Acklam's rational approximation
/// (relative error below 1.15e-9), enough for intervals printed to four places.
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The Wilson score interval of `successes` out of `trials` at normal quantile `z`; (0, 1) when
/// there are no trials.
pub fn wilson(successes: u64, trials: u64, z: f64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Pearson's chi-squared test of independence on the table whose columns are the variants
/// (successes, trials): its statistic, degrees of freedom (columns − 1) and p-value. `None`
/// while it is undefined: fewer than two variants with trials, or no success or no failure at
/// all (an expected count of zero). No continuity correction.
pub fn chi_squared(variants: &[(u64, u64)]) -> Option<ChiSquared> {
    let columns: Vec<(f64, f64)> = variants
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(x, n)| (*x as f64, (*n - (*x).min(*n)) as f64))
        .collect();
    if columns.len() < 2 {
        return None;
    }
    let successes: f64 = columns.iter().map(|c| c.0).sum();
    let failures: f64 = columns.iter().map(|c| c.1).sum();
    let total = successes + failures;
    if successes == 0.0 || failures == 0.0 {
        return None;
    }
    let mut statistic = 0.0;
    for (x, f) in &columns {
        let n = x + f;
        for (observed, row_total) in [(x, successes), (f, failures)] {
            let expected = n * row_total / total;
            statistic += (observed - expected).powi(2) / expected;
        }
    }
    let dof = columns.len() - 1;
    Some(ChiSquared {
        statistic,
        degrees_of_freedom: dof as u32,
        p_value: chi_squared_survival(statistic, dof as f64),
    })
}

/// The result of [`chi_squared`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChiSquared {
    pub statistic: f64,
    pub degrees_of_freedom: u32,
    pub p_value: f64,
}

/// P(X ≥ x) for X chi-squared with `k` degrees of freedom: Q(k/2, x/2).
pub fn chi_squared_survival(x: f64, k: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    gamma_q(k / 2.0, x / 2.0)
}

/// The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a), by its series for
/// x < a + 1 and its continued fraction (modified Lentz) otherwise.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let log_prefix = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P(a, x) = e^{-x} x^a / Γ(a) · Σ x^n / (a (a+1) … (a+n)).
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (1.0 - sum * log_prefix.exp()).clamp(0.0, 1.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (log_prefix.exp() * h).clamp(0.0, 1.0)
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: about 15 significant digits).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Where a contact falls for a test: a number fixed by the test and the contact (the first
/// eight bytes of SHA-256 over both ids), the order in which the audience is split.
pub fn split_key(test_id: Uuid, contact_id: Uuid) -> u64 {
    let mut both = [0u8; 32];
    both[..16].copy_from_slice(test_id.as_bytes());
    both[16..].copy_from_slice(contact_id.as_bytes());
    let digest = store::sha256(&both);
    u64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// The variants of `new` contacts (each its [`split_key`]) joining a test that has placed
/// `assigned` contacts so far, `in_test` of them in the test group: the test group stays
/// `share` of everyone assigned (rounded), taken in key order, and its members go to the
/// variants in turn, so the variants' sizes differ by at most one. `None`: held back.
/// The answer is in the order of `new`.
pub fn assign(
    new: &[u64],
    assigned: u64,
    in_test: u64,
    share: f64,
    variants: u8,
) -> Vec<Option<u8>> {
    let everyone = assigned + new.len() as u64;
    let target = (share * everyone as f64).round() as u64;
    let take = target.saturating_sub(in_test).min(new.len() as u64) as usize;
    let mut order: Vec<usize> = (0..new.len()).collect();
    order.sort_by_key(|&i| (new[i], i));
    let mut out = vec![None; new.len()];
    for (rank, &i) in order.iter().take(take).enumerate() {
        let turn = (in_test + rank as u64) % u64::from(variants.max(1));
        out[i] = Some(turn as u8);
    }
    out
}

/// The variant with the highest rate (the first of equals); `None` without any trials.
pub fn leader(variants: &[(u64, u64)]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, (x, n)) in variants.iter().enumerate() {
        if *n == 0 {
            continue;
        }
        let rate = *x as f64 / *n as f64;
        if best.is_none_or(|(_, r)| rate > r) {
            best = Some((i, rate));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, places: i32) {
        let tolerance = 0.5 * 10f64.powi(-places);
        assert!(
            (got - want).abs() <= tolerance,
            "got {got}, want {want} to {places} places"
        );
    }

    /// Newcombe, R. G. (1998), "Two-sided confidence intervals for the single proportion:
    /// comparison of seven methods", Statistics in Medicine 17, 857–872, Table I, method 3
    /// (Wilson score, no continuity correction), 95%: 81/263 → 0.2553–0.3662,
    /// 15/148 → 0.0624–0.1605, 0/20 → 0–0.1611, 1/29 → 0.0061–0.1718.
    /// The two-sided quantiles printed in every table of the normal distribution.
    #[test]
    fn normal_quantiles_match_the_tables() {
        for (confidence, z) in [
            (0.8, 1.281_551_565_545),
            (0.9, 1.644_853_626_951),
            (0.95, 1.959_963_984_540),
            (0.99, 2.575_829_303_549),
            (0.999, 3.290_526_731_492),
        ] {
            close(z_of(confidence).unwrap(), z, 7);
        }
        assert_eq!(z_of(0.5), None);
        assert_eq!(z_of(1.0), None);
    }

    #[test]
    fn wilson_intervals_match_newcombe_1998() {
        let z = z_of(0.95).unwrap();
        for (x, n, lo, hi) in [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
        ] {
            let (l, h) = wilson(x, n, z);
            close(l, lo, 4);
            close(h, hi, 4);
        }
    }

    /// The example of SciPy's `scipy.stats.chi2_contingency` documentation: the 2×3 table
    /// [[10, 10, 20], [20, 20, 20]] gives statistic 2.7777… (= 25/9), 2 degrees of freedom and
    /// p = 0.24935220877729619 (with two degrees of freedom the survival function is
    /// exp(−x/2), so this is also checkable by hand).
    #[test]
    fn chi_squared_matches_the_scipy_documentation_example() {
        // Columns (successes, trials): successes are the first row.
        let result = chi_squared(&[(10, 30), (10, 30), (20, 40)]).unwrap();
        close(result.statistic, 25.0 / 9.0, 10);
        assert_eq!(result.degrees_of_freedom, 2);
        close(result.p_value, 0.249_352_208_777_296_2, 10);
    }

    /// A 2×2 worked by hand: [[20, 30], [80, 70]] (20/100 against 30/100). Expected counts
    /// 25, 25, 75, 75: χ² = 2·(25/25) + 2·(25/75) = 2.6667; with one degree of freedom
    /// p = erfc(√(χ²/2)) = 0.1025 (tables of the chi-squared distribution: χ²(1) = 2.706 at
    /// p = 0.10).
    #[test]
    fn chi_squared_of_a_two_by_two_table() {
        let result = chi_squared(&[(20, 100), (30, 100)]).unwrap();
        close(result.statistic, 8.0 / 3.0, 10);
        assert_eq!(result.degrees_of_freedom, 1);
        close(result.p_value, 0.102_470_434_859_749_5, 10);
        // The tabulated critical values: χ²(1) = 3.841 at 0.05, χ²(3) = 7.815 at 0.05,
        // χ²(2) = 9.210 at 0.01.
        close(chi_squared_survival(3.841_458_820_694_124, 1.0), 0.05, 10);
        close(chi_squared_survival(7.814_727_903_251_178, 3.0), 0.05, 10);
        close(chi_squared_survival(9.210_340_371_976_184, 2.0), 0.01, 10);
    }

    #[test]
    fn undefined_tables_give_no_test() {
        assert!(chi_squared(&[(0, 10), (0, 10)]).is_none());
        assert!(chi_squared(&[(10, 10), (5, 5)]).is_none());
        assert!(chi_squared(&[(3, 10), (0, 0)]).is_none());
    }

    #[test]
    fn ln_gamma_of_known_values() {
        close(ln_gamma(1.0), 0.0, 12);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 12);
        close(ln_gamma(10.0), 362_880f64.ln(), 10);
    }

    #[test]
    fn the_split_is_even_exact_and_deterministic() {
        let test = Uuid::now_v7();
        let keys: Vec<u64> = (0..2000).map(|_| split_key(test, Uuid::new_v4())).collect();
        let variants = assign(&keys, 0, 0, 0.2, 2);
        let count = |v: Option<u8>| variants.iter().filter(|x| **x == v).count();
        assert_eq!(
            (count(Some(0)), count(Some(1)), count(None)),
            (200, 200, 1600)
        );
        assert_eq!(assign(&keys, 0, 0, 0.2, 2), variants);
        // Three joining later: the group stays a fifth of everyone (2003 → 401).
        let later = assign(&keys[..3], 2000, 400, 0.2, 2);
        assert_eq!(later.iter().filter(|v| v.is_some()).count(), 1);
        assert_eq!(later.iter().flatten().copied().collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn the_leader_has_the_highest_rate() {
        assert_eq!(leader(&[(10, 100), (30, 100), (30, 100)]), Some(1));
        assert_eq!(leader(&[(0, 0), (0, 0)]), None);
        assert_eq!(leader(&[(0, 0), (1, 50)]), Some(1));
    }
}
