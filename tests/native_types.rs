//! `#[derive(NativeType)]` and `#[builtin]` through the facade: the schemas rustc's layout gives,
//! type codes, nesting, the registries, and the C++ checks emitted from the derived schemas.

use std::mem::{align_of, offset_of, size_of};

use opbox::native::{builtins, native_types, FieldType, Initializer, NativeScalar};
use opbox::NativeField;
use opbox::{builtin, NativeType};

#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C)]
#[native(name = "warp_test::Color", initializer = "aggregate")]
pub struct Color {
    pub r: f32,
    pub g: f32,
    pub b: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C)]
#[native(name = "warp_test::Pixel", initializer = "aggregate")]
pub struct Pixel {
    pub color: Color,
    pub index: i32,
}

/// Padded: a byte, then three of padding, then a u32.
#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C)]
#[native(name = "warp_test::Padded", initializer = "aggregate")]
pub struct Padded {
    pub tag: u8,
    pub value: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C)]
#[native(name = "::warp_test::ImageHandle", opaque)]
pub struct ImageHandle(pub u64);

/// An opaque device pointer: fields of an opaque type are bytes to C++, so any Copy type will do.
#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C)]
#[native(name = "warp_test::DevicePtr", opaque)]
pub struct DevicePtr(pub *mut u8);

/// Fields exposed without an initializer: one may be skipped.
#[derive(Clone, Copy, Debug, PartialEq, NativeType)]
#[repr(C, align(16))]
#[native(name = "warp_test::Image")]
pub struct Image {
    pub handle: ImageHandle,
    pub size: [i32; 2],
    #[native(skip)]
    pub cookie: u32,
    pub tint: [Color; 2],
    pub half: opbox::native::f16,
}

#[builtin(native = "warp_test::scale")]
pub fn scale(c: Color, s: f32) -> Color;

#[builtin(native = "::warp_test::lerp")]
pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

#[builtin(native = "warp_test::touch")]
fn touch(p: Pixel);

#[test]
fn the_schema_is_rustcs_layout() {
    let s = Color::SCHEMA;
    assert_eq!(s.native_name, "warp_test::Color");
    assert_eq!(s.rust_name, "native_types::Color");
    assert_eq!((s.size, s.align), (12, 4));
    assert_eq!(s.initializer, Initializer::Aggregate);
    let fields: Vec<_> = s.fields.iter().map(|f| (f.name, f.offset)).collect();
    assert_eq!(fields, [("r", 0), ("g", 4), ("b", 8)]);

    let p = Padded::SCHEMA;
    assert_eq!(
        (p.size, p.align),
        (size_of::<Padded>(), align_of::<Padded>())
    );
    assert_eq!(p.fields[1].offset, offset_of!(Padded, value));
    assert_eq!(p.fields[1].offset, 4);
    assert_eq!(
        p.contract_text(),
        "warp_test::Padded:8:4:aggregate:tag:u1:0:value:u4:4"
    );
}

#[test]
fn nested_opaque_skipped_and_array_fields() {
    let px = Pixel::SCHEMA;
    assert!(matches!(px.fields[0].ty, FieldType::Native(s) if s.native_name == "warp_test::Color"));
    assert_eq!(px.fields[1].offset, 12);

    let h = ImageHandle::SCHEMA;
    assert_eq!(h.initializer, Initializer::Opaque);
    assert!(h.fields.is_empty());
    assert_eq!((h.size, h.align), (8, 8));

    let p = DevicePtr::SCHEMA;
    assert_eq!(
        (p.size, p.initializer),
        (size_of::<*mut u8>(), Initializer::Opaque)
    );

    let img = Image::SCHEMA;
    assert_eq!(img.initializer, Initializer::None);
    assert_eq!(img.align, 16);
    let names: Vec<_> = img.fields.iter().map(|f| f.name).collect();
    assert_eq!(
        names,
        ["handle", "size", "tint", "half"],
        "cookie is skipped"
    );
    assert_eq!(img.fields[2].offset, offset_of!(Image, tint));
    assert_eq!(img.fields[2].ty.c_type(), "warp_test::Color[2]");
    assert_eq!(img.fields[3].ty.c_type(), "__half");
    assert_eq!(img.size, size_of::<Image>());
}

#[test]
fn type_codes_are_cached_and_nest() {
    let code = Color::type_code();
    assert!(code.starts_with("nt") && code.len() == 18, "{code}");
    assert!(std::ptr::eq(code, Color::type_code()), "computed once");
    assert_eq!(code, opbox::native::type_code(Color::SCHEMA));
    assert!(Pixel::SCHEMA
        .contract_text()
        .contains(&format!(":color:{code}:0")));
    assert_eq!(<Color as NativeField>::FIELD_TYPE.type_code(), code);
    assert_ne!(Pixel::type_code(), code);
}

#[test]
fn derived_types_are_registered() {
    let reg = native_types().unwrap();
    for name in [
        "warp_test::Color",
        "warp_test::Pixel",
        "warp_test::Padded",
        "::warp_test::ImageHandle",
        "warp_test::Image",
    ] {
        assert!(reg.get(name).is_some(), "{name} registered");
    }
}

#[test]
fn builtins_are_registered_and_a_body_is_the_cpu_build() {
    assert_eq!(lerp(1.0, 3.0, 0.5), 2.0);
    let reg = builtins().unwrap();
    let s = reg.overloads("scale");
    assert_eq!(s.len(), 1);
    let f = s[0].native_fn().unwrap();
    assert_eq!((f.namespace, f.function), ("warp_test::", "scale"));
    assert_eq!(
        s[0].rust_signature(),
        "scale(c: native_types::Color, s: f32) -> native_types::Color"
    );
    let l = reg.overloads("lerp");
    assert_eq!(l[0].native_fn().unwrap().namespace, "::warp_test::");
    assert!(matches!(
        l[0].ret,
        Some(FieldType::Scalar(NativeScalar::F32))
    ));
    let t = reg.overloads("touch");
    assert!(t[0].ret.is_none());
    assert_eq!(__opbox_builtin_touch.params[0].name, "p");
}

// ---------------------------------------------------------------------------------------------
// The C++ side: the checks emitted from these derived schemas, compiled by NVRTC (CI installs it
// from PyPI; no GPU needed) and by the host's g++, against matching and mismatching C++ structs.

use opbox::cuda::codegen::native_checks::{native_checks, CheckTarget};
use opbox::cuda::codegen::TranslationUnit;
use opbox::cuda::{nvrtc, ImageKind};
use opbox::native::NativeSchema;

/// C++ twins of the types above. Each mismatch test edits one line of it.
const CPP_TYPES: &str = r#"
namespace warp_test {
struct Color { float r; float g; float b; };
struct Pixel { Color color; int index; };
struct Padded { unsigned char tag; unsigned int value; };
struct ImageHandle { unsigned long long bits; };
struct alignas(16) Image {
  ImageHandle handle;
  int size[2];
  unsigned int cookie;
  Color tint[2];
  __half half;
};
}  // namespace warp_test
"#;

/// A storage-only `__half` (the NVRTC wheel has no cuda_fp16.h); opbox's prelude does the same.
const HALF: &str = "struct alignas(2) __half { unsigned short __x; };\n";

fn roots() -> Vec<&'static NativeSchema> {
    vec![
        Pixel::SCHEMA,
        Padded::SCHEMA,
        ImageHandle::SCHEMA,
        Image::SCHEMA,
    ]
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// `Ok(Ok(()))` compiled, `Ok(Err(log))` failed to compile, `Err(reason)` NVRTC is not usable.
fn nvrtc_compile(types: &str) -> Result<Result<(), String>, String> {
    let checks = native_checks(&roots(), CheckTarget::Nvrtc).map_err(|e| e.to_string())?;
    assert!(checks.needs_f16, "Image has a half field");
    let source = format!(
        "{HALF}{types}\n{}\n#line 1 \"<probe>\"\n__global__ void opbox_native_probe() {{}}\n",
        checks.source
    );
    let unit = TranslationUnit {
        source,
        program_name: "opbox/native_abi.cu".into(),
        name_expressions: vec!["&opbox_native_probe".into()],
        headers: opbox::cuda::codegen::host_headers::NAMED_HEADERS,
    };
    let options = [
        "--gpu-architecture=compute_90".to_string(),
        "-std=c++17".into(),
    ];
    match nvrtc::compile(&unit, &options, ImageKind::Ptx, "native_abi") {
        Ok(_) => Ok(Ok(())),
        Err(opbox::Error::Compile { log, .. }) => Ok(Err(log)),
        Err(opbox::Error::NoCuda { reason }) => Err(reason),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// As `nvrtc_compile`, through `g++ -fsyntax-only` with the offsetof checks.
fn gxx_compile(types: &str) -> Result<Result<(), String>, String> {
    let checks = native_checks(&roots(), CheckTarget::HostCxx).map_err(|e| e.to_string())?;
    let file = scratch_file("native_abi.cpp");
    std::fs::write(&file, format!("{HALF}{types}\n{}", checks.source))
        .map_err(|e| e.to_string())?;
    let out = std::process::Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-x", "c++"])
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let out = match out {
        Ok(out) => out,
        Err(e) => return Err(format!("g++ cannot be run ({e})")),
    };
    if out.status.success() {
        Ok(Ok(()))
    } else {
        Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()))
    }
}

/// Prints a skip where it is seen: libtest captures `println!` of passing tests, but not writes
/// to the stderr handle itself.
fn skipped(reason: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

/// A fresh path in the temp dir, one per call.
fn scratch_file(name: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("opbox-{}-{n}-{name}", std::process::id()))
}

type Compiler = fn(&str) -> Result<Result<(), String>, String>;

/// Runs `case` with each compiler there is; a missing NVRTC fails under OPBOX_REQUIRE_NVRTC=1.
fn with_compilers(case: impl Fn(&str, Compiler)) {
    for (name, compile, require) in [
        ("NVRTC", nvrtc_compile as Compiler, "OPBOX_REQUIRE_NVRTC"),
        ("g++", gxx_compile as Compiler, "OPBOX_REQUIRE_GXX"),
    ] {
        match compile("") {
            Err(reason) if required(require) => {
                panic!("{require}=1 but {name} is not usable: {reason}")
            }
            Err(reason) => skipped(&format!("{name} is not usable ({reason})")),
            Ok(_) => case(name, compile),
        }
    }
}

fn expect_failure(compiler: &str, compile: Compiler, types: &str, messages: &[&str]) {
    match compile(types) {
        Ok(Ok(())) => panic!("{compiler} accepted a mismatching type:\n{types}"),
        Ok(Err(log)) => {
            if std::env::var_os("OPBOX_SHOW_LOGS").is_some() {
                println!("--- {compiler} log:\n{log}");
            }
            for m in messages {
                assert!(
                    log.contains(m),
                    "{compiler}: missing\n  {m}\nin the log:\n{log}"
                );
            }
        }
        Err(reason) => panic!("{compiler} stopped working: {reason}"),
    }
}

fn edit(from: &str, to: &str) -> String {
    assert!(CPP_TYPES.contains(from), "{from}");
    CPP_TYPES.replacen(from, to, 1)
}

#[test]
fn matching_cpp_types_compile() {
    with_compilers(|name, compile| {
        if let Ok(Err(log)) = compile(CPP_TYPES) {
            panic!("{name} rejected the matching types:\n{log}");
        }
    });
}

#[test]
fn int64_t_spelled_long_matches_an_i64_field() {
    #[derive(Clone, Copy, NativeType)]
    #[repr(C)]
    #[native(name = "warp_test::Wide")]
    struct Wide {
        a: i64,
        b: [u64; 2],
    }
    let _ = Wide { a: 0, b: [0; 2] };
    let checks = native_checks(&[Wide::SCHEMA], CheckTarget::HostCxx).unwrap();
    let file = scratch_file("wide.cpp");
    std::fs::write(
        &file,
        format!(
            "namespace warp_test {{ struct Wide {{ long a; unsigned long b[2]; }}; }}\n{}",
            checks.source
        ),
    )
    .unwrap();
    match std::process::Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-x", "c++"])
        .arg(&file)
        .output()
    {
        Ok(out) => {
            let _ = std::fs::remove_file(&file);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            )
        }
        Err(e) => skipped(&format!("g++ cannot be run ({e})")),
    }
}

#[test]
fn a_size_mismatch_names_the_type() {
    let types = edit(
        "struct Color { float r; float g; float b; };",
        "struct Color { float r; float g; float b; float a; };",
    );
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &["opbox: native type 'warp_test::Color' (Rust type 'native_types::Color') has an incompatible size: the Rust type is 12 bytes"],
        )
    });
}

#[test]
fn an_alignment_mismatch_names_the_type() {
    let types = edit(
        "struct Padded { unsigned char",
        "struct alignas(8) Padded { unsigned char",
    );
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &["opbox: native type 'warp_test::Padded' (Rust type 'native_types::Padded') has an incompatible alignment: the Rust type is aligned to 4 bytes"],
        )
    });
}

#[test]
fn a_field_type_mismatch_names_the_field() {
    let types = edit("float g;", "int g;");
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &["opbox: native field 'warp_test::Color::g' (Rust field 'native_types::Color::g': f32) has an incompatible type: expected float"],
        )
    });
    let types = edit("int size[2];", "int size[3];");
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &["opbox: native field 'warp_test::Image::size' (Rust field 'native_types::Image::size': [i32; 2]) has an incompatible type: expected int[2]"],
        )
    });
}

#[test]
fn a_field_order_mismatch_names_the_fields() {
    let types = edit(
        "struct Pixel { Color color; int index; };",
        "struct Pixel { int index; Color color; };",
    );
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &[
                "opbox: native field 'warp_test::Pixel::color' (Rust field 'native_types::Pixel::color': native_types::Color) has an incompatible offset: the Rust field is at byte 0",
                "opbox: native field 'warp_test::Pixel::index' (Rust field 'native_types::Pixel::index': i32) has an incompatible offset: the Rust field is at byte 12",
            ],
        )
    });
}

#[test]
fn a_non_trivially_copyable_type_is_refused() {
    let types = edit(
        "struct ImageHandle { unsigned long long bits; };",
        "struct ImageHandle { unsigned long long bits; ImageHandle(const ImageHandle&) {} ImageHandle() {} };",
    );
    with_compilers(|name, compile| {
        expect_failure(
            name,
            compile,
            &types,
            &["opbox: native type '::warp_test::ImageHandle' (Rust type 'native_types::ImageHandle') must be trivially copyable"],
        )
    });
}
