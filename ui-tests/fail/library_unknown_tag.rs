use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def_with_tags("relu(Tensor x) -> Tensor", &[OpTag::Pt2Compliant, OpTag::Pt2]);
}

fn main() {}
