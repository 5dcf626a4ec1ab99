use opbox::prelude::*;

#[stable_library(uilib)]
fn uilib(m: &mut Library) {
    m.def("rand(Generator? g=1) -> ()");
    m.def("fmt(MemoryFormat m=channels_first) -> ()");
    m.def("loss(int reduction=Average) -> ()");
}

fn main() {}
