//! Every code block of the README and the tutorial (`docs/tutorial.md`) is compiled by CI. A
//! `rust` block (or `rust,no_run`) is a doctest: each page is the doc of a doctest-only item of
//! the facade (`src/lib.rs`). A `rust,ignore` or `cuda` block is an excerpt of a file that CI
//! builds (under `examples/`, `tests/` or `docs/`, the CLI's too): its lines, indentation aside,
//! appear in that file in order, and a line starting with `// ...` stands for lines left out.
//! This test checks the excerpts, and that no other kind of Rust block slips through.

use std::path::{Path, PathBuf};

/// The README's fenced blocks: (info string, first line number, body).
fn blocks(readme: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in readme.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), i + 1, String::new())),
            (Some(_), Some("")) => out.extend(open.take()),
            (Some((_, _, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The non-empty lines, trimmed.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether `excerpt` appears in `file`: each run of lines between `// ...` lines contiguous, the
/// runs in order.
fn is_excerpt(excerpt: &[&str], file: &[&str]) -> bool {
    let mut from = 0;
    for run in excerpt.split(|l| l.starts_with("// ...")) {
        if run.is_empty() {
            continue;
        }
        let Some(at) = (from..=file.len().saturating_sub(run.len()))
            .find(|&i| file.get(i..i + run.len()) == Some(run))
        else {
            return false;
        };
        from = at + run.len();
    }
    true
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "cu") {
            out.push(path);
        }
    }
}

/// Checks one page's blocks; returns (doctests, excerpts).
fn check_page(root: &Path, page: &str) -> (usize, usize) {
    let readme = std::fs::read_to_string(root.join(page)).expect("the page");
    let mut files = Vec::new();
    for dir in ["examples", "tests", "docs", "cli/examples", "cli/tests"] {
        sources(&root.join(dir), &mut files);
    }
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter_map(|f| Some((f.clone(), std::fs::read_to_string(&f).ok()?)))
        .collect();
    let (mut doctests, mut excerpts) = (0, 0);
    for (info, line, body) in blocks(&readme) {
        match info.as_str() {
            "rust" | "rust,no_run" => doctests += 1,
            "rust,ignore" | "cuda" => {
                let excerpt = lines(&body);
                let found = texts
                    .iter()
                    .find(|(_, text)| is_excerpt(&excerpt, &lines(text)))
                    .map(|(path, _)| path);
                assert!(
                    found.is_some(),
                    "{page}:{line}: this `{info}` block is not an excerpt of any file under examples/, tests/ or docs/; copy it from the file CI builds (`// ...` marks lines left out):\n{body}"
                );
                excerpts += 1;
            }
            other => assert!(
                !other.starts_with("rust") && !other.is_empty(),
                "{page}:{line}: a `{other}` block is neither a doctest (`rust`, `rust,no_run`) nor a checked excerpt (`rust,ignore`)"
            ),
        }
    }
    println!("{page}: {doctests} doctests, {excerpts} checked excerpts");
    (doctests, excerpts)
}

#[test]
fn every_readme_block_is_compiled() {
    let (doctests, excerpts) = check_page(Path::new(env!("CARGO_MANIFEST_DIR")), "README.md");
    assert!(doctests > 0 && excerpts > 0);
}

#[test]
fn every_tutorial_block_is_compiled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (doctests, excerpts) = check_page(root, "docs/tutorial.md");
    // Steps 2 and 5 and the plugin host are doctests; step 4 (examples/tutorial_cuda.rs, which
    // scripts/gpu-check runs on a GPU), the kernel and the plugin are excerpts.
    assert!(
        doctests >= 3 && excerpts >= 3,
        "{doctests} doctests, {excerpts} excerpts"
    );
}

#[test]
fn an_excerpt_keeps_order_and_contiguity() {
    let file = ["a", "b", "c", "d"];
    assert!(is_excerpt(&["b", "c"], &file));
    assert!(is_excerpt(&["a", "// ... b", "d"], &file));
    assert!(!is_excerpt(&["a", "c"], &file), "a gap needs `// ...`");
    assert!(
        !is_excerpt(&["c", "// ...", "b"], &file),
        "runs keep their order"
    );
    assert!(!is_excerpt(&["d", "e"], &file));
}
