use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("written(Tensor(a|b!) x) -> ()");
    m.def("both_sides(Tensor(a|b -> c|d) x) -> ()");
}

fn main() {}
