use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("storage(Tensor self) -> Storage");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn storage(x: &Tensor) -> Tensor {
        x.clone()
    }
}

fn main() {}
