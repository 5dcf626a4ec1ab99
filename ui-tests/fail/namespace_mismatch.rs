use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("otherlib::relu(Tensor x) -> Tensor");
}

fn main() {}
