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
            // The names the runtime and `#[stable_impl]` read, from `naming`, then per op its
            // doc (the schema), module, place in the table and full name.
            "::opbox::__private::op_markers! { Op, BOXED, SIGNATURE, __OPBOX_OPS;",
            "\"mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\" axpby[0usize] \"mylib::axpby\"",
            "\"mylib::add.Scalar(Tensor(a!) x, float s) -> ()\" add_Scalar[1usize] \"mylib::add.Scalar\"",
            // add.Scalar returns nothing.
            "so its kernel must take 2 parameters\\nschema: mylib::add.Scalar(Tensor(a!) x, float s) -> ()\"[]",
            "kind: ::opbox::__private::LibraryKind::Def",
            "namespace: \"mylib\"",
            // The library's one table of the ops' static data, and its schema cells.
            "::opbox::__private::op_table! { __OPBOX_SCHEMAS, __OPBOX_OPS, 2usize;",
            "ops: &mylib::__OPBOX_OPS",
        ],
    );
    // Per op: its place (and its schema cell's), the schema as text, its name's length and
    // hash (computed here so that registration reads no name), its counts, bit i for tensor
    // argument i (x and y, then x), no extras, and the line of its `m.def`.
    for (index, name, text, counts) in [
        (
            0,
            "mylib::axpby",
            "mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor",
            "3u32 1u32 3u64",
        ),
        (
            1,
            "mylib::add.Scalar",
            "mylib::add.Scalar(Tensor(a!) x, float s) -> ()",
            "2u32 0u32 1u64",
        ),
    ] {
        let hash = opbox_codegen::op_name_hash::op_name_hash(name);
        assert_has(
            &out,
            &format!(
                "({index}usize \"{text}\" {}u32 {hash}u32 {counts} ::core::option::Option::None, ::core::line!())",
                name.len()
            ),
        );
    }
    // Per argument, the codes of the forms that fit and its message; per return, the codes.
    let code = |marker: &str| format!("{}u64", form_code(marker));
    assert_has_all(
        &out,
        &[
            &format!(
                "([{} {}] \"`mylib::axpby` expects argument #0 (x)",
                code("TensorRef"),
                code("TensorVal")
            ),
            &format!(
                "([{}] \"`mylib::axpby` expects argument #2 (a) to be `float`, taken as `f64`\\nschema: mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\")",
                code("Float")
            ),
            &format!(
                "\"`mylib::axpby` takes 3 arguments, so its kernel must take 3 parameters\\nschema: mylib::axpby(Tensor x, Tensor y, float a=1.0) -> Tensor\"[[{}]]",
                code("TensorVal")
            ),
        ],
    );
    // `Tensor(a!)` may only be borrowed: no by-value form for add.Scalar's argument 0.
    assert_has(
        &out,
        &format!(
            "([{}] \"`mylib::add.Scalar` expects argument #0",
            code("TensorRef")
        ),
    );
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
        "(0usize \"mylib::scale(Tensor x, float s=0.1, int[2] k=[1, 2], *, str? mode=None) -> Tensor\"",
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
            // One `kernel_items!` for the module, told the name of each op's static data; per
            // kernel its registration, the op's module, and the checks: the arity first, each
            // failing with the op's message for it.
            "::opbox::__private::kernel_items! { BOXED; __opbox_kernel_axpby_CPU[super::mylib::axpby] {",
            "__opbox_op::SIGNATURE.check_arity(3usize);",
            "__opbox_op::SIGNATURE.check_param(2usize, <f64 as ::opbox::__private::RustParam>::FORM);",
            "__opbox_op::SIGNATURE.check_returns(<Result<Tensor> as ::opbox::__private::KernelReturn>::FORMS); }",
            // Then no items of its own, the key, the line, the return, and the parameter list
            // whose shared shim and typed entry call the fn.
            "} {} CPU(::core::line!()) -> Result<Tensor>,",
            "(<&Tensor as ::opbox::__private::RustParam>::Key, <&Tensor as ::opbox::__private::RustParam>::Key, <f64 as ::opbox::__private::RustParam>::Key,), axpby;",
            // Inside `submit!`, which prettyplease leaves as tokens; each kernel's file and
            // origin are its group's.
            "::opbox::__private::KernelGroup { file : :: core :: file! (), origin : :: core :: module_path! (), kernels : & [__opbox_kernel_axpby_CPU], }",
        ],
    );
}

#[test]
fn a_kernel_too_long_to_share_a_shim_gets_a_body_of_its_own() {
    use opbox_codegen::shared_shim::SHARED_SHIM_MAX_PARAMS;
    // `#[stable_impl]` on a kernel of `n` int parameters.
    let kernel_of = |n: usize| {
        let params = (0..n).map(|i| {
            let name = quote::format_ident!("a{}", i);
            quote!(#name: i64)
        });
        pretty(stable_impl::expand(
            quote!(mylib, CPU),
            quote!(mod cpu { pub fn wide(#(#params),*) -> i64 { 0 } }),
        ))
    };
    assert_has(&kernel_of(SHARED_SHIM_MAX_PARAMS), "::Key,), wide;");
    let own = kernel_of(SHARED_SHIM_MAX_PARAMS + 1);
    let last = SHARED_SHIM_MAX_PARAMS;
    assert_has_all(
        &own,
        &[
            "fn __opbox_body(",
            &format!("__opbox_args.lend::<<i64 as ::opbox::__private::RustParam>::Key>({last}usize, &mut __opbox_s{last})?"),
            "-> i64, ::opbox::__private::UnboxedBody, __opbox_body;",
        ],
    );
}

#[test]
fn library_paths_are_rewritten_for_use_inside_the_impl_module() {
    for (written, inside) in [
        (quote!(mylib, CPU), "__opbox_kernel_f_CPU[super::mylib::f]"),
        (
            quote!(crate::ops::mylib, CPU),
            "__opbox_kernel_f_CPU[crate::ops::mylib::f]",
        ),
        (
            quote!(self::mylib, CPU),
            "__opbox_kernel_f_CPU[super::mylib::f]",
        ),
        (
            quote!(super::mylib, CPU),
            "__opbox_kernel_f_CPU[super::super::mylib::f]",
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
            "r#where[0usize]",
            "self_[1usize]",
            "tags: &[::opbox::__private::OpTag::Pt2Compliant, ::opbox::__private::OpTag::Core],",
            "1u64 ::core::option::Option::None, ::core::line!())",
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
    assert_has(&out, "__opbox_kernel_where_CPU[super::mylib::r#where]");
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
            &format!(
                "([{}] \"`mylib::f` expects argument #0",
                wrapped(Wrapper::List, "Str")
            ),
            &format!(
                "([{}] \"`mylib::f` expects argument #1",
                wrapped(Wrapper::List, "ScalarType")
            ),
            &format!(
                "([{}] \"`mylib::f` expects argument #2",
                wrapped(Wrapper::Optional, "TensorRef")
            ),
            &format!("[[{}]] \"`mylib::f` returns", wrapped(Wrapper::List, "Int")),
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
