//! The counts the READMEs quote are the suite's own: a stale number fails here.

use tessera_conformance::{cases, Group};

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn the_readmes_quote_the_generated_counts() {
    let all = cases(None);
    let protocol = all
        .iter()
        .filter(|c| c.family.group == Group::Protocol)
        .count();
    let api = all.len() - protocol;
    let mut pairs: Vec<(String, String)> = all
        .iter()
        .map(|c| (c.family.op.clone(), c.dtype.name().to_string()))
        .collect();
    pairs.dedup();
    let suite_readme = include_str!("../../README.md");
    let root_readme = include_str!("../../../README.md");
    for (text, what) in [
        (
            format!(
                "**{} cases** ({} protocol, {} API)",
                thousands(all.len()),
                thousands(protocol),
                thousands(api)
            ),
            "conformance-tests/README.md",
        ),
        (
            format!("... {} tests)", thousands(pairs.len())),
            "conformance-tests/README.md",
        ),
        (
            format!("on {} generated cases", thousands(all.len())),
            "README.md",
        ),
    ] {
        let readme = if what == "README.md" {
            root_readme
        } else {
            suite_readme
        };
        assert!(readme.contains(&text), "{what} should say `{text}`");
    }
    assert_eq!(thousands(1260), "1,260");
    assert_eq!(thousands(999), "999");
}

#[test]
fn the_readme_quotes_the_frame_suite_counts() {
    use tessera_conformance::frame::{frame_cases, frame_families, selftest};
    let all = frame_cases(None);
    let tests: usize = frame_families().iter().map(|f| f.types.len()).sum();
    let planted = selftest::expected_failures(&all).len();
    let readme = include_str!("../../README.md");
    for text in [
        format!("{} cases (7 types, 4 variants", thousands(all.len())),
        format!("the macro ({tests} tests)"),
        format!("({planted} of {})", thousands(all.len())),
        format!("runner ({} cases)", thousands(all.len())),
    ] {
        assert!(
            readme.contains(&text),
            "conformance-tests/README.md should say `{text}`"
        );
    }
}
