use opbox::prelude::*;

const SCHEMA: &str = "relu(Tensor x) -> Tensor";

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def(SCHEMA);
}

fn main() {}
