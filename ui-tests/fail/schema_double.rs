use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("scale(Tensor x, double a) -> Tensor");
}

fn main() {}
