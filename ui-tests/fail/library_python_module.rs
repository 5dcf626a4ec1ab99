use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.set_python_module("my-pkg/ops");
    m.def("relu(Tensor x) -> Tensor");
}

#[stable_fragment(uilib)]
fn more(m: &mut Library) {
    m.set_python_module("pkg.ops");
    m.set_python_module("pkg.other");
    m.def("gelu(Tensor x) -> Tensor");
}

fn main() {}
