use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("relu(Tensor x) -> Tensor");
}

struct MyTensor;

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn relu(_x: super::MyTensor) -> Result<Tensor> {
        Tensor::zeros(&[1], DType::F32, Device::Cpu)
    }
}

fn main() {}
