use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("relu(Tensor x) -> Tensor");
    m.def("relu(Tensor x, float slope) -> Tensor");
}

fn main() {}
