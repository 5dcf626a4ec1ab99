//! An op plugin: a cdylib that defines ops with the usual macros and exports them with one line.
//! A host loads it with `opbox::plugin::load("libplugin.so")` and calls `opbox::op("myplug::add")`.

use opbox::prelude::*;

#[stable_library(myplug)]
fn myplug(m: &mut Library) {
    m.def("add(int a, int b=1) -> int");
}

#[stable_impl(myplug, CPU)]
mod cpu {
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
}

opbox::export_plugin!();
