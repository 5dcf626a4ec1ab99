//! Every declaration opbox rejects at compile time, with the message a user sees
//! (`ui-tests/fail/*.stderr`), and declarations it accepts (`ui-tests/pass`).
//! Refresh snapshots with `TRYBUILD=overwrite cargo test --test ui`, then read them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui-tests/pass/*.rs");
    t.compile_fail("ui-tests/fail/*.rs");
}
