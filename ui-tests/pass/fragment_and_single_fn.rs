use opbox::prelude::*;

#[stable_library(fraglib)]
fn fraglib(m: &mut Library) {
    m.def("double_it(int a) -> int");
}

mod more {
    use opbox::prelude::*;

    #[stable_fragment(fraglib)]
    pub fn more(m: &mut Library) {
        m.def("triple_it(int a) -> int");
    }
}

#[stable_impl(fraglib::double_it, CPU)]
fn double_cpu(a: i64) -> i64 {
    a * 2
}

#[stable_impl(more::more, CPU)]
mod cpu {
    pub fn triple_it(a: i64) -> i64 {
        a * 3
    }
}

fn main() {
    let six: i64 = opbox::op("fraglib::double_it").unwrap().call((3i64,)).unwrap();
    let nine: i64 = opbox::op("fraglib::triple_it").unwrap().call((3i64,)).unwrap();
    assert_eq!((six, nine), (6, 9));
}
