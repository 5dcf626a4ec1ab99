use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a, float b) -> Tensor");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, _y: &Tensor, _a: f32, _b: f64) -> Result<Tensor> {
        Ok(x.clone())
    }
}

fn main() {}
