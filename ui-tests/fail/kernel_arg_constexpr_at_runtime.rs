use opbox::prelude::*;
use opbox::ConstexprEnum;

#[derive(Clone, Copy, ConstexprEnum)]
pub enum Epilogue {
    #[cpp = "ep::Identity"]
    Identity,
    #[cpp = "ep::Relu"]
    Relu,
}

#[extern_kernel(source = "kernels/ok.cu", constexpr = "template")]
fn ok(out: Out<[f32]>, #[constexpr] epi: Epilogue);

fn run(out: &Tensor) -> opbox::Result<()> {
    let relu = ok::specialize(Epilogue::Relu);
    // The specialization fixed `epi`: passing it again at launch is a runtime value for a
    // compile-time parameter.
    relu.launch(LaunchConfig::single(), out, Epilogue::Relu)
}

fn main() {
    let _ = run;
}
