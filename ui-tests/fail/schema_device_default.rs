use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("to(Tensor x, Device d=\"gpu\") -> Tensor");
}

fn main() {}
