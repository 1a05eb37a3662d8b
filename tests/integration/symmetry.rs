//! Reductions over an array that equals its transpose (`x + x.T`, `v[:, None] + v[None,
//! :]`, slices taking the same elements along both axes) compute only the blocks on and
//! above the diagonal, and give the values a dense computation gives. Whatever the
//! optimizer cannot prove symmetric, or whose result depends on element order, computes
//! every block.

use tessera::{Array, DType, Index, RandomState};

/// How many block reductions the plan gives their mirror block's task (from `explain`).
fn mirrored(a: &Array) -> usize {
    let text = a.explain().unwrap();
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("mirror symmetry: ")?;
            let n = rest.split(", so ").nth(1)?.split(' ').next()?;
            n.parse().ok()
        })
        .unwrap_or(0)
}

fn x(n: usize, chunk: usize, seed: u64) -> Array {
    RandomState::new(seed)
        .normal(0.0, 1.0, &[n, n], chunk, None)
        .unwrap()
}

/// The elements of `a`, computed without any reduction.
fn dense(a: &Array) -> Vec<f64> {
    a.compute().unwrap().to_f64_vec()
}

fn sum(v: &[f64]) -> f64 {
    v.iter().sum()
}

fn std(v: &[f64], ddof: usize) -> f64 {
    let m = sum(v) / v.len() as f64;
    let ss: f64 = v.iter().map(|e| (e - m) * (e - m)).sum();
    (ss / (v.len() - ddof) as f64).sqrt()
}

fn close(a: f64, b: f64) {
    assert!(
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0),
        "{a} vs {b}"
    );
}

#[test]
fn symmetric_reductions_compute_half_the_blocks_and_the_dense_values() {
    // A 6 × 6 grid: 21 blocks on or above the diagonal, 15 below reuse their mirror.
    let a = x(60, 10, 5);
    let s = (&a + &a.T().unwrap()).unwrap();
    let v = dense(&s);
    let total = s.sum(None, false).unwrap();
    assert_eq!(mirrored(&total), 15);
    close(total.compute_f64().unwrap(), sum(&v));
    let mean = s.mean(None, false).unwrap();
    assert_eq!(mirrored(&mean), 15);
    close(mean.compute_f64().unwrap(), sum(&v) / v.len() as f64);
    let sd = s.std(None, 1, false).unwrap();
    assert_eq!(mirrored(&sd), 15);
    close(sd.compute_f64().unwrap(), std(&v, 1));
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    assert_eq!(s.max(None, false).unwrap().compute_f64().unwrap(), max);
    assert_eq!(s.min(None, false).unwrap().compute_f64().unwrap(), min);
    let positive = s
        .gt_scalar(0.0)
        .unwrap()
        .count_nonzero(None, false)
        .unwrap();
    assert_eq!(mirrored(&positive), 15);
    assert_eq!(
        positive.compute_f64().unwrap(),
        v.iter().filter(|&&e| e > 0.0).count() as f64
    );

    // The seed's transposed std: the slice takes the same rows and columns.
    let y = (&a + &a.T().unwrap())
        .unwrap()
        .slice(&[Index::step(2), Index::step(2)])
        .unwrap();
    let sd = y.std(None, 0, false).unwrap();
    assert_eq!(mirrored(&sd), 15);
    close(sd.compute_f64().unwrap(), std(&dense(&y), 0));

    // The plan has 15 fewer block tasks than the same plan on x - x.T.
    let anti = (&a - &a.T().unwrap()).unwrap().std(None, 0, false).unwrap();
    assert_eq!(mirrored(&anti), 0);
    let s_std = s.std(None, 0, false).unwrap();
    assert_eq!(
        anti.num_tasks().unwrap(),
        s_std.num_tasks().unwrap() + 15,
        "{}",
        s_std.explain().unwrap()
    );
}

#[test]
fn what_is_not_provably_symmetric_computes_every_block() {
    let a = x(40, 10, 6);
    let at = a.T().unwrap();
    let cases: Vec<(&str, Array)> = vec![
        ("x - x.T", (&a - &at).unwrap()),
        ("x + x", (&a + &a).unwrap()),
        ("x", a.clone()),
        ("x + y.T", (&a + &x(40, 10, 7).T().unwrap()).unwrap()),
        // maximum picks one of +0 / -0, so its operands are not exchanged.
        ("maximum(x, x.T)", a.maximum(&at).unwrap()),
        (
            "(x + x.T)[::2, 1::2]",
            (&a + &at)
                .unwrap()
                .slice(&[Index::step(2), Index::slice(Some(1), None, 2)])
                .unwrap(),
        ),
    ];
    for (name, e) in cases {
        let total = e.sum(None, false).unwrap();
        assert_eq!(mirrored(&total), 0, "{name}");
        close(total.compute_f64().unwrap(), sum(&dense(&e)));
    }

    // Symmetric values on a grid of 10-row, 8-column blocks (a constant chunked that way
    // refines the grid of x + x.T): block (1, 0) is not the transpose of block (0, 1).
    let s = (&a + &at).unwrap();
    let ones =
        |chunks: [usize; 2]| Array::ones(&[40, 40], DType::F64, chunks.as_slice(), None).unwrap();
    let uneven = (&s + &ones([10, 8])).unwrap();
    let total = uneven.sum(None, false).unwrap();
    assert_eq!(mirrored(&total), 0);
    close(total.compute_f64().unwrap(), sum(&dense(&uneven)));
    // The same constant on the square grid keeps the mirror: 6 of 16 blocks.
    let even = (&s + &ones([10, 10])).unwrap();
    let total = even.sum(None, false).unwrap();
    assert_eq!(mirrored(&total), 6);
    close(total.compute_f64().unwrap(), sum(&dense(&even)));

    // Reducing one axis only: row sums are not column sums block by block.
    let rows = s.sum(Some(&[1]), false).unwrap();
    assert_eq!(mirrored(&rows), 0);
    let v = dense(&s);
    let got = rows.compute().unwrap().to_f64_vec();
    for (i, g) in got.iter().enumerate() {
        close(*g, sum(&v[i * 40..(i + 1) * 40]));
    }

    // argmax depends on where the elements are.
    let arg = s.argmax(None, false).unwrap();
    assert_eq!(mirrored(&arg), 0);
    let best = (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b });
    assert_eq!(arg.compute_f64().unwrap(), best as f64);
}

#[test]
fn outer_sums_and_other_axis_pairs_are_found() {
    let v = RandomState::new(1)
        .normal(0.0, 1.0, &[30], 10, None)
        .unwrap();
    let col = v.expand_dims(1).unwrap().broadcast_to(&[30, 30]).unwrap();
    let row = v.expand_dims(0).unwrap().broadcast_to(&[30, 30]).unwrap();
    // The operands' grids (10 × 30 and 30 × 10) refine to 10 × 10.
    let outer = (&col + &row).unwrap();
    let total = outer.sum(None, false).unwrap();
    assert_eq!(mirrored(&total), 3);
    close(total.compute_f64().unwrap(), sum(&dense(&outer)));

    // A 3-d array symmetric in axes 0 and 2: reducing those two keeps axis 1's blocks.
    let t = RandomState::new(2)
        .normal(0.0, 1.0, &[12, 9, 12], [4usize, 3, 4], None)
        .unwrap();
    let s = (&t + &t.permute_dims(&[2, 1, 0]).unwrap()).unwrap();
    let r = s.sum(Some(&[0, 2]), false).unwrap();
    // 3 × 3 blocks over (0, 2), 3 below the diagonal, for each of 3 blocks of axis 1.
    assert_eq!(mirrored(&r), 9);
    let d = dense(&s);
    let got = r.compute().unwrap().to_f64_vec();
    for (j, g) in got.iter().enumerate() {
        let want: f64 = (0..12)
            .flat_map(|i| (0..12).map(move |k| (i, k)))
            .map(|(i, k)| d[(i * 9 + j) * 12 + k])
            .sum();
        close(*g, want);
    }
    // Axes 0 and 1 are not a mirror pair.
    assert_eq!(mirrored(&s.sum(Some(&[0, 1]), false).unwrap()), 0);
}

#[test]
fn deep_commutative_chains_end_the_proof_quickly() {
    // 40 nested additions: trying both operand orders everywhere would be 2^40 visits.
    // The proof's budget ends it, the plan computes every block, the value is right.
    let a = x(20, 10, 9);
    let at = a.T().unwrap();
    let mut e = (&a + &at).unwrap();
    for _ in 0..40 {
        e = (&(&e + &a).unwrap() + &at).unwrap();
    }
    let total = e.sum(None, false).unwrap();
    assert_eq!(mirrored(&total), 0);
    close(total.compute_f64().unwrap(), sum(&dense(&e)));
}
