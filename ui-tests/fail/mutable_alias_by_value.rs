use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("scale_(Tensor(a!) x, float s) -> ()");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn scale_(_x: Tensor, _s: f64) -> Result<()> {
        Ok(())
    }
}

fn main() {}
