use opbox::prelude::*;

// Ops named after Rust keywords: raw marker modules (`r#where`), and a trailing underscore for
// the keywords that cannot be raw (`self` → `self_`).
#[stable_library(kwlib)]
fn kwlib(m: &mut Library) {
    m.def("where(Tensor condition, Tensor x) -> Tensor");
    m.def("match(int a) -> int");
    m.def("loop(int a) -> int");
    m.def("type(int a) -> int");
    m.def("super(int a) -> int");
    m.def("crate(int a) -> int");
    m.def("Self(int a) -> int");
}

#[stable_impl(kwlib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn r#where(_c: &Tensor, x: &Tensor) -> Tensor {
        x.clone()
    }
    pub fn r#match(a: i64) -> i64 {
        a
    }
    pub fn r#loop(a: i64) -> i64 {
        a
    }
    pub fn super_(a: i64) -> i64 {
        a
    }
    pub fn crate_(a: i64) -> i64 {
        a
    }
    #[allow(non_snake_case)]
    pub fn Self_(a: i64) -> i64 {
        a
    }
}

#[stable_impl(kwlib::r#type, CPU)]
fn type_kernel(a: i64) -> i64 {
    a + 1
}

fn main() {
    let t: i64 = opbox::op("kwlib::type").unwrap().call((1i64,)).unwrap();
    assert_eq!(t, 2);
    let s: i64 = opbox::op("kwlib::Self").unwrap().call((3i64,)).unwrap();
    assert_eq!(s, 3);
}
