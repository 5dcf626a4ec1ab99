use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("relu(Tensor x) -> Tensor", "a second argument");
    m.dfe("gelu(Tensor x) -> Tensor");
}

fn main() {}
