use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("set_(Tensor(a!) self, Storage source) -> Tensor(a!)");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn set_(x: &Tensor, _source: &Tensor) -> Tensor {
        x.clone()
    }
}

fn main() {}
