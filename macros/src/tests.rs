//! Expansion tests, in-process: the macros' output pretty-printed and checked for the pieces
//! the runtime and the signature checks rely on. User-facing messages live in the ui-tests.

use proc_macro2::TokenStream;
use quote::quote;

use crate::library::{self, Kind};
use crate::stable_impl;

/// Whitespace does not matter to these checks: macro bodies (`inventory::submit!`) print as
/// token streams.
fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn assert_has(out: &str, expected: &str) {
    assert!(
        squash(out).contains(&squash(expected)),
        "missing `{expected}` in:\n{out}"
    );
}

fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("expansion is not valid Rust ({e}):\n{tokens}"),
    }
}

#[test]
fn a_library_emits_one_module_per_op_with_its_marker_and_checks() {
    let out = pretty(library::expand(
        quote!(mylib),
        quote! {
            fn mylib(m: &mut Library) {
                m.def("axpby(Tensor x, Tensor y, float a=1.0) -> Tensor");
                m.def("add.Scalar(Tensor(a!) x, float s) -> ()");
            }
        },
        Kind::Library,
    ));
    for expected in [
        "mod mylib {",
        "pub mod axpby {",
        "pub mod add_Scalar {",
        "pub struct Op;",
        "impl ::opbox::__private::OpSpec for Op {",
        "const NAME: &'static str = \"mylib::axpby\";",
        "const NAME: &'static str = \"mylib::add.Scalar\";",
        "impl Arity<3usize> for Op {}",
        "impl Arg0<::opbox::__private::ty::TensorRef> for Op {}",
        "impl Arg0<::opbox::__private::ty::TensorVal> for Op {}",
        "impl Arg2<::opbox::__private::ty::Float> for Op {}",
        "impl Returns<(::opbox::__private::ty::TensorVal,)> for Op {}",
        "impl Returns<()> for Op {}",
        "kind: ::opbox::__private::LibraryKind::Def",
        "namespace: \"mylib\"",
    ] {
        assert_has(&out, expected);
    }
    // `Tensor(a!)` may only be borrowed: no by-value marker for add.Scalar's argument 0.
    let add = &out[out.find("pub mod add_Scalar").unwrap_or(0)..];
    assert!(
        !add.contains("impl Arg0<::opbox::__private::ty::TensorVal>"),
        "{add}"
    );
    // The default survives as exact f64 bits.
    assert!(
        out.contains(&format!("f64::from_bits({}u64)", 1.0f64.to_bits())),
        "{out}"
    );
}

#[test]
fn a_fragment_registers_as_a_fragment_under_its_own_module() {
    let out = pretty(library::expand(
        quote!(mylib),
        quote!(
            fn more(m: &mut Library) {
                m.def("count(Tensor x) -> int");
            }
        ),
        Kind::Fragment,
    ));
    assert!(out.contains("mod more {"), "{out}");
    assert_has(&out, "kind: ::opbox::__private::LibraryKind::Fragment");
}

#[test]
fn an_impl_module_checks_each_kernel_and_registers_a_boxed_shim() {
    let out = pretty(stable_impl::expand(
        quote!(mylib, CPU),
        quote! {
            mod cpu {
                pub fn axpby(x: &Tensor, y: &Tensor, a: f64) -> Result<Tensor> { todo!() }
            }
        },
    ));
    for expected in [
        "use super::mylib::axpby as __opbox_op;",
        "fn arity<M: __opbox_op::Arity<3usize>>() {}",
        "arg2::<__opbox_op::Op, <f64 as ::opbox::__private::RustParam>::Schema>();",
        "<Result<Tensor> as ::opbox::__private::KernelReturn>::Schema",
        "unsafe extern \"C\" fn __opbox_boxed(",
        "key: ::opbox::DispatchKey::CPU,",
        "op: <__opbox_op::Op as ::opbox::__private::OpSpec>::NAME,",
    ] {
        assert_has(&out, expected);
    }
}

#[test]
fn library_paths_are_rewritten_for_use_inside_the_impl_module() {
    for (written, inside) in [
        (quote!(mylib, CPU), "use super::mylib::f as __opbox_op;"),
        (
            quote!(crate::ops::mylib, CPU),
            "use crate::ops::mylib::f as __opbox_op;",
        ),
        (
            quote!(self::mylib, CPU),
            "use super::mylib::f as __opbox_op;",
        ),
        (
            quote!(super::mylib, CPU),
            "use super::super::mylib::f as __opbox_op;",
        ),
    ] {
        let out = pretty(stable_impl::expand(
            written,
            quote!(
                mod k {
                    pub fn f(a: i64) -> i64 {
                        a
                    }
                }
            ),
        ));
        assert_has(&out, inside);
    }
}
