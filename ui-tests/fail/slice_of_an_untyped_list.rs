// A `ScalarType[]` taken as `&[DType]`: the schema allows it, but the stack keeps a list of
// dtypes as boxed values, so there is no `[DType]` to borrow; `Vec<DType>` is the form to take.
use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("cast_all(Tensor x, ScalarType[] dtypes) -> Tensor");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn cast_all(x: &Tensor, _dtypes: &[DType]) -> Result<Tensor> {
        Ok(x.clone())
    }
}

fn main() {}
