use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("relu(Tensr x) -> Tensor");
}

fn main() {}
