use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("run_graph(GraphModule body, Tensor[] operands) -> Tensor[]");
}

#[stable_impl(uilib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn run_graph(_body: i64, operands: &[Tensor]) -> Vec<Tensor> {
        operands.to_vec()
    }
}

fn main() {}
