use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a=True) -> Tensor");
}

fn main() {}
