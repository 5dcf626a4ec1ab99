//! `#[kernel_group]` in process: what it adds to the module, and the errors it collects (the
//! user-facing messages are in `ui-tests/fail/group_*`).

use proc_macro2::TokenStream;
use quote::quote;

use super::{assert_has_all, compile_errors, pretty};
use crate::kernel_group::expand;

#[test]
fn adds_the_group_and_its_launches() {
    let out = pretty(expand(
        TokenStream::new(),
        quote! {
            mod step {
                use super::*;
                #[kernel]
                fn times(x: InOut<[f32]>, s: f32, #[constexpr] K: u32) {}
                #[kernel]
                fn plus(x: InOut<[f32]>, s: f32, #[constexpr] K: u32) {}
            }
        },
    ));
    assert_has_all(
        &out,
        &[
            "#[kernel] fn times(",
            "pub static GROUP: ::opbox::__private::cuda::KernelGroupDecl",
            "name: \"step\", members: &[&times::HANDLE, &plus::HANDLE]",
            "pub fn launch(cfg: ::opbox::__private::cuda::LaunchConfig, x: &::opbox::__private::Tensor, s: f32, K: u32)",
            "::opbox::__private::cuda::launch_group(&GROUP, &cfg, &[::opbox::__private::cuda::LaunchArg::Tensor(x), ::opbox::__private::cuda::LaunchArg::F32(s)], &[::opbox::__private::cuda::ConstValue::U32(K)])",
            "pub fn launch_in(r: &mut ::opbox::__private::cuda::Recorder",
            "r.launch_group(&GROUP",
        ],
    );
}

#[test]
fn bodiless_extern_members_count() {
    // prettyplease cannot print the body-less fns (syn keeps them verbatim): compare tokens.
    let out = expand(
        TokenStream::new(),
        quote! {
            mod attn {
                #[opbox::extern_kernel(source = "a.cu")]
                fn qk(x: In<[f32]>, n: i64);
                #[extern_kernel(source = "a.cu")]
                fn sm(x: In<[f32]>, n: i64);
            }
        },
    )
    .to_string();
    assert_has_all(&out, &["members: &[&qk::HANDLE, &sm::HANDLE]"]);
}

#[test]
fn collects_every_error() {
    let errors = compile_errors(expand(
        quote!(fast),
        quote! {
            mod g {
                #[extern_kernel(source = "a.cu")]
                fn launch(x: In<[f32]>);
                #[kernel]
                fn b(y: In<[f32]>) {}
            }
        },
    ));
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("takes no arguments"), "{errors:?}");
    assert!(errors[1].contains("defines `launch` itself"), "{errors:?}");
    assert!(errors[2].contains("mixes kinds"), "{errors:?}");
    assert!(
        errors[3].contains("member `b` takes `y: In<[f32]>` where `launch` takes `x: In<[f32]>`"),
        "{errors:?}"
    );
    let none = compile_errors(expand(
        TokenStream::new(),
        quote!(
            mod empty {}
        ),
    ));
    assert!(none[0].contains("has no members"), "{none:?}");
    let not_mod = compile_errors(expand(
        TokenStream::new(),
        quote!(
            fn f() {}
        ),
    ));
    assert!(
        not_mod[0].contains("goes on an inline module"),
        "{not_mod:?}"
    );
}
