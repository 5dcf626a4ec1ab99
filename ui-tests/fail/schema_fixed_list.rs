use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("outer(int[][2] x) -> ()");
    m.def("empty(int[0] x) -> ()");
    m.def("lone(int[] x=1) -> ()");
}

fn main() {}
