use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("count(Tensor x, int? dim=None) -> int");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    pub fn count(_x: i64, _dim: i64) -> i64 {
        0
    }
}

fn main() {}
