use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y -> Tensor");
}

fn main() {}
