// A kernel's body passes through #[stable_impl] unparsed: a syntax error in it is rustc's own
// error, at the token, and nothing else is reported.
use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("relu(Tensor x) -> Tensor");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn relu(x: &Tensor) -> Result<Tensor> {
        let y = x.clone() +;
        Ok(y)
    }
}

fn main() {}
