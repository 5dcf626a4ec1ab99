//! `#[stable_library]`, `#[stable_fragment]` and `#[stable_impl]`.

use proc_macro2::TokenStream;
use quote::quote;

use opbox_codegen::rust_forms::{form_code, wrapped_form_code, Wrapper};

use super::{assert_has, assert_has_all, compile_errors, pretty};
use crate::library::{self, Kind};
use crate::stable_impl;

/// `#[stable_library(mylib)] fn mylib(m: &mut Library) { defs }`.
fn mylib(defs: TokenStream) -> String {
    pretty(library::expand(
        quote!(mylib),
        quote!(fn mylib(m: &mut Library) { #defs }),
        Kind::Library,
    ))
}

#[test]
fn a_library_emits_one_module_per_op_with_its_marker_and_checks() {
    let out = mylib(quote! {
        m.def("axpby(Tensor x, Tensor y, float a=1.0) -> Tensor");
        m.def("add.Scalar(Tensor(a!) x, float s) -> ()");
    });
    assert_has_all(
        &out,
        &[
            "mod mylib {",
            "pub mod axpby {",
            "pub mod add_Scalar {",
            "pub struct Op;",
            "impl ::opbox::__private::OpSpec for Op {",
            "const NAME: &'static str = \"mylib::axpby\";",
            "const NAME: &'static str = \"mylib::add.Scalar\";",
            "pub const SIGNATURE: ::opbox::__private::Signature = ::opbox::__private::Signature {",
            // add.Scalar returns nothing.
            "returns: &[],",
            "kind: ::opbox::__private::LibraryKind::Def",
            "namespace: \"mylib\"",
            // The op's static data, in the library's one table: the schema as text, with its
            // name's length and its counts, and a zeroed cell it is parsed into on first use.
            "pub static __OPBOX_OPS: [::opbox::__private::OpDef; 2usize] = [",
            "static __OPBOX_SCHEMAS: [::opbox::__private::SchemaCell; 2usize] = [__OPBOX_EMPTY; 2usize];",
            "op: ::opbox::__private::BoxedOp {",
            "text: \"mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\",",
            "text: \"mylib::add.Scalar(Tensor(a!) x, float s) -> ()\",",
            "name_len: 12u32,",
            "name_len: 17u32,",
            "num_args: 3u32,",
            "num_outputs: 0u32,",
            "parsed: &__OPBOX_SCHEMAS[0usize]",
            "parsed: &__OPBOX_SCHEMAS[1usize]",
            "pub const BOXED: &'static ::opbox::__private::BoxedOp = &super::__OPBOX_OPS[0usize].op;",
            "const BOXED: &'static ::opbox::__private::BoxedOp = BOXED;",
            "ops: &mylib::__OPBOX_OPS",
            // Bit i for tensor argument i: x and y, then x; neither op has extras.
            "tensor_args: 3u64,",
            "tensor_args: 1u64,",
            "extras: ::core::option::Option::None,",
        ],
    );
    // Per argument, the codes of the forms that fit; per return too.
    let code = |marker: &str| format!("{}u64", form_code(marker));
    assert_has_all(
        &out,
        &[
            &format!("fits: &[{}, {}]", code("TensorRef"), code("TensorVal")),
            &format!("fits: &[{}]", code("Float")),
            &format!("returns: &[&[{}]],", code("TensorVal")),
            "error: \"`mylib::axpby` expects argument #2 (a) to be `float`, taken as `f64`\\nschema: mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\"",
            "arity_error: \"`mylib::axpby` takes 3 arguments, so its kernel must take 3 parameters\\nschema: mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\"",
        ],
    );
    // Each name's hash, computed here so that registration reads no name.
    for name in ["mylib::axpby", "mylib::add.Scalar"] {
        let hash = opbox_codegen::op_name_hash::op_name_hash(name);
        assert_has(&out, &format!("name_hash: {hash}u32,"));
    }
    // `Tensor(a!)` may only be borrowed: no by-value form for add.Scalar's argument 0.
    let add = &out[out.find("pub mod add_Scalar").unwrap_or(0)..];
    assert_has(add, &format!("fits: &[{}]", code("TensorRef")));
}

#[test]
fn the_stored_text_is_the_schema_printed_with_its_namespace() {
    // Written with an explicit namespace, odd spacing and a default that is not exact in
    // binary: the runtime parses the stored text back to exactly the schema checked here.
    let out = mylib(quote! {
        m.def("mylib::scale( Tensor x , float  s=0.1, int[2] k=[1,2], *, str? mode=None) -> Tensor");
    });
    assert_has(
        &out,
        "text: \"mylib::scale(Tensor x, float s=0.1, int[2] k=[1, 2], *, str? mode=None) -> Tensor\",",
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
    assert_has_all(
        &out,
        &[
            "use super::mylib::axpby as __opbox_op;",
            // One const of checks, the arity first, each failing with the op's message for it.
            "const _: () = {\n            __opbox_op::SIGNATURE.check_arity(3usize);",
            ".check_param(2usize, <f64 as ::opbox::__private::RustParam>::FORM);",
            ".check_returns(\n                    <Result<Tensor> as ::opbox::__private::KernelReturn>::FORMS,\n                );\n        };",
            "unsafe extern \"C\" fn __opbox_boxed(",
            // The shim calls the one non-generic entry with the op's static data.
            "::opbox::__private::boxed_entry_fn(",
            "__opbox_op::BOXED,",
            // The body is a fn item, not a closure: no closure type and vtable per op.
            "fn __opbox_body(",
            "const __opbox_kernel_axpby_CPU: ::opbox::__private::KernelRegistration = {",
            // Inside `submit!`, which prettyplease leaves as tokens.
            "::opbox::__private::KernelGroup { file : :: core :: file! (), origin : :: core :: module_path! (), kernels : & [__opbox_kernel_axpby_CPU], }",
            // Each kernel's line; its file and origin are its group's.
            "line: ::core::line!()",
            "key: ::opbox::__private::DispatchKey::CPU,",
            "op: __opbox_op::BOXED,",
        ],
    );
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

#[test]
fn a_library_reports_every_error_at_once_and_keeps_its_fn() {
    let out = library::expand(
        quote!(my lib),
        quote! {
            fn mylib(m: &mut Library) {
                m.def("f(Tensor x) -> Tensor");
                m.def("f(Tensor x) -> Tensor");
                m.def("g(Tensr x) -> Tensor");
                m.register("h");
            }
        },
        Kind::Library,
    );
    let errors = compile_errors(out.clone());
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].contains("takes the namespace"), "{errors:#?}");
    assert!(
        errors[1].contains("unknown library method `register`"),
        "{errors:#?}"
    );
    assert!(errors[2].contains("`f` is already defined"), "{errors:#?}");
    let out = out.to_string();
    assert_has(&out, "fn mylib(m: &mut Library)");
    // The body goes, so rustc adds no errors of its own about the calls in it.
    assert!(!out.contains("m . register"), "{out}");
}

#[test]
fn keyword_ops_get_raw_or_underscored_modules_and_tags_are_registered() {
    let out = mylib(quote! {
        m.def("where(Tensor c, Tensor x) -> Tensor");
        m.def("self(Tensor x) -> Tensor");
        m.def_with_tags("t(Tensor x) -> Tensor", &[OpTag::Pt2Compliant, OpTag::Core]);
    });
    assert_has_all(
        &out,
        &[
            "pub mod r#where {",
            "pub mod self_ {",
            "pub const BOXED: &'static ::opbox::__private::BoxedOp = &super::__OPBOX_OPS[0usize].op;",
            "tags: &[::opbox::__private::OpTag::Pt2Compliant, ::opbox::__private::OpTag::Core],",
            "extras: ::core::option::Option::None,",
        ],
    );
}

#[test]
fn a_kernel_named_r_where_finds_the_where_module() {
    let out = pretty(stable_impl::expand(
        quote!(mylib, CPU),
        quote! {
            mod cpu {
                pub fn r#where(c: &Tensor, x: &Tensor) -> Tensor { todo!() }
            }
        },
    ));
    assert_has(&out, "use super::mylib::r#where as __opbox_op;");
}

#[test]
fn an_impl_reports_its_key_and_every_bad_kernel_together_and_keeps_the_module() {
    let out = stable_impl::expand(
        quote!(mylib, Cuda),
        quote! {
            mod cuda {
                pub async fn relu<T>(x: &Tensor) -> Tensor { todo!() }
                pub fn add(&self, x: &Tensor) -> Tensor { todo!() }
            }
        },
    );
    let errors = compile_errors(out.clone());
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].starts_with("unknown dispatch key `Cuda`: the keys are CPU, CUDA, Meta and CompositeExplicit; did you mean `CUDA`?"), "{errors:#?}");
    assert!(errors[1].contains("no async"), "{errors:#?}");
    assert!(errors[2].contains("no async"), "{errors:#?}");
    assert!(errors[3].contains("cannot take `self`"), "{errors:#?}");
    // The module as written: no registration, no renamed kernels.
    let out = out.to_string();
    assert_has(&out, "mod cuda");
    assert!(!out.contains("__opbox_boxed"), "{out}");
}

#[test]
fn list_and_optional_forms_wrap_the_element_markers() {
    let out = mylib(quote! {
        m.def("f(str[] names, ScalarType[] dtypes, Tensor(a!)? out) -> int[]");
    });
    assert_has_all(
        &out,
        &[
            &format!("fits: &[{}]", wrapped(Wrapper::List, "Str")),
            &format!("fits: &[{}]", wrapped(Wrapper::List, "ScalarType")),
            &format!("fits: &[{}]", wrapped(Wrapper::Optional, "TensorRef")),
            &format!("returns: &[&[{}]],", wrapped(Wrapper::List, "Int")),
            // A typed list can be borrowed; a list of dtypes only comes as a Vec.
            "taken as `&[&str]` or `Vec<&str>` or `&[String]` or `Vec<String>`",
            "taken as `Vec<DType>`",
            "taken as `Option<&Tensor>`",
        ],
    );
    // No by-value tensor: the optional tensor is written in place.
    assert!(
        !out.contains(&format!(
            "{}u64",
            wrapped_form_code(Wrapper::Optional, form_code("TensorVal"))
        )),
        "{out}"
    );
}

/// The code of `wrapper` around the base marker `element`, as the expansion prints it.
fn wrapped(wrapper: Wrapper, element: &str) -> String {
    format!("{}u64", wrapped_form_code(wrapper, form_code(element)))
}
