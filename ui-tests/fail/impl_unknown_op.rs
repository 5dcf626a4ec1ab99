use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y) -> Tensor");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpbz(x: &Tensor, _y: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

fn main() {}
