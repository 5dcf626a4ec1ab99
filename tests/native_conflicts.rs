//! Conflicting registrations in one binary: the registries are process-global, so these live in
//! a test binary of their own. Warp's cases: an equivalent redefinition under another Rust type
//! is accepted, a different layout under the same C++ name is refused, and builtin overloads with
//! the same inputs must agree on the result and the native function.

use opbox::native::{builtins, native_types};
use opbox::{builtin, Error, NativeType};

mod first {
    #[derive(Clone, Copy, opbox::NativeType)]
    #[repr(C)]
    #[native(name = "conflict::Color", initializer = "aggregate")]
    pub struct Color {
        pub r: f32,
        pub g: f32,
        pub b: f32,
    }

    /// Equivalent to `second::Vec2`: the same contract under another Rust type.
    #[derive(Clone, Copy, opbox::NativeType)]
    #[repr(C)]
    #[native(name = "conflict::Vec2")]
    pub struct Vec2 {
        pub x: f32,
        pub y: f32,
    }
}

mod second {
    /// Same C++ name as `first::Color`, with an alpha channel.
    #[derive(Clone, Copy, opbox::NativeType)]
    #[repr(C)]
    #[native(name = "conflict::Color", initializer = "aggregate")]
    pub struct Color {
        pub r: f32,
        pub g: f32,
        pub b: f32,
        pub a: f32,
    }

    #[derive(Clone, Copy, opbox::NativeType)]
    #[repr(C)]
    #[native(name = "conflict::Vec2")]
    pub struct Vec2 {
        pub x: f32,
        pub y: f32,
    }
}

#[builtin(native = "conflict::scale")]
fn scale(x: f32, s: f32) -> f32;

mod again {
    // Identical: accepted.
    #[opbox::builtin(native = "conflict::scale")]
    pub fn scale(x: f32, s: f32) -> f32 {
        x * s
    }
}

mod other_result {
    // The same inputs, another return type: refused.
    #[opbox::builtin(native = "conflict::scale")]
    fn scale(x: f32, s: f32) -> f64;
}

mod overload {
    // Other inputs: an overload.
    #[opbox::builtin(native = "conflict::scale")]
    fn scale(x: f64, s: f64) -> f64;
}

#[test]
fn a_different_layout_under_one_native_name_is_an_error_naming_both_rust_types() {
    let Err(e) = native_types() else {
        panic!("the conflict was not found")
    };
    let Error::NativeTypeConflict {
        native_name,
        first,
        second,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(native_name, "conflict::Color");
    let both = format!("{first} | {second}");
    assert!(both.contains("'native_conflicts::first::Color'"), "{both}");
    assert!(both.contains("'native_conflicts::second::Color'"), "{both}");
    assert!(both.contains("tests/native_conflicts.rs:"), "{both}");
    // Reported on every call, not only the first.
    assert_eq!(native_types().err(), Some(e.clone()));
    // One error: the equivalent Vec2 pair is not one.
    let text = e.to_string();
    assert!(!text.contains("Vec2"), "{text}");
    assert_eq!(
        <first::Vec2 as NativeType>::type_code(),
        <second::Vec2 as NativeType>::type_code()
    );
}

#[test]
fn a_builtin_with_the_same_inputs_and_another_result_names_both_sites() {
    let Err(e) = builtins() else {
        panic!("the conflict was not found")
    };
    let Error::BuiltinConflict {
        name,
        inputs,
        first,
        second,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(name, "scale");
    assert_eq!(again::scale(2.0, 3.0), 6.0, "the body is the CPU build");
    assert_eq!(inputs, "(x: f4, s: f4)");
    let both = format!("{first} | {second}");
    assert!(
        both.contains(
            "'scale(x: f32, s: f32) -> f32' -> conflict::scale at tests/native_conflicts.rs:"
        ),
        "{both}"
    );
    assert!(
        both.contains(
            "'scale(x: f32, s: f32) -> f64' -> conflict::scale at tests/native_conflicts.rs:"
        ),
        "{both}"
    );
    assert!(
        e.to_string().starts_with("cannot register conflicting builtin overload 'scale' with input types (x: f4, s: f4): first "),
        "{e}"
    );
}
