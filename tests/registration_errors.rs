//! A binary whose registrations conflict: every op lookup must return the problem, naming the
//! file and line of both registrations, instead of silently picking one.

use opbox::prelude::*;

#[stable_library(clash)]
fn clash(m: &mut Library) {
    m.def("twice(int a) -> int");
}

mod elsewhere {
    use opbox::prelude::*;

    #[stable_library(clash)]
    pub fn clash(m: &mut Library) {
        m.def("other(int a) -> int");
    }
}

#[stable_impl(clash::twice, CPU)]
fn twice_one(a: i64) -> i64 {
    a * 2
}

#[stable_impl(clash::twice, CPU)]
fn twice_two(a: i64) -> i64 {
    a + a
}

#[test]
fn registration_errors_are_returned_with_both_sites() {
    let error = opbox::init().expect_err("conflicting registrations must be reported");
    let text = error.to_string();
    assert!(
        matches!(error, Error::Registration(ref all) if all.len() == 2),
        "{text}"
    );
    assert!(
        text.contains("only one #[stable_library] may define the namespace 'clash': first at tests/registration_errors.rs:7, again at tests/registration_errors.rs:15"),
        "{text}"
    );
    assert!(
        text.contains("operator 'clash::twice' has two different CPU kernels: first at tests/registration_errors.rs:21, again at tests/registration_errors.rs:26"),
        "{text}"
    );
    // Every later lookup reports the same problem rather than running a possibly wrong kernel.
    assert_eq!(
        opbox::op("clash::twice").expect_err("still an error"),
        error
    );
    let _ = elsewhere::clash;
}
