//! NVRTC compile time of `#[kernel]` DSL kernels against the equivalent hand-written CUDA C++
//! (issue 12's goal: the DSL ≤ 1.1×, with no heavy headers). Each compile is a fresh one (no
//! disk cache), for sm_90; pairs alternate so that drift cannot pass for a difference. Needs
//! NVRTC, not a GPU; prints "skipped: no NVRTC (why)" without it. One table, as the other GPU
//! benches print.

use std::process::ExitCode;
use std::time::Instant;

use opbox::__private::cuda::KernelDecl;
use opbox::cuda::codegen::host_headers::NAMED_HEADERS;
use opbox::cuda::codegen::TranslationUnit;
use opbox::cuda::{compile_cached, nvrtc, ImageKind, Target};

#[path = "common/axpy.rs"]
mod axpy;
#[path = "../examples/dsl.rs"]
#[allow(dead_code)]
mod example;

// For its median; this bench needs no GPU, so its skip check goes unused.
#[allow(dead_code)]
#[path = "common/gpu.rs"]
mod gpu;

fn seconds(decl: &KernelDecl, target: Target) -> opbox::Result<f64> {
    let t = Instant::now();
    compile_cached(decl, &[], target, None)?;
    Ok(t.elapsed().as_secs_f64())
}

/// The hand-written file as plain NVRTC would compile it: its text alone, without the prelude
/// and signature check that opbox adds to every extern kernel's unit, with opbox's options.
fn bare_seconds(decl: &KernelDecl, target: Target) -> opbox::Result<f64> {
    let unit = TranslationUnit {
        source: decl.sources[0].content.to_string(),
        program_name: decl.sources[0].name.to_string(),
        name_expressions: vec![format!("&{}", decl.entry)],
        headers: NAMED_HEADERS,
    };
    let mut options = opbox::cuda::options_for(decl, target);
    options.extend(opbox::cuda::cuda_include_options().iter().cloned());
    let t = Instant::now();
    nvrtc::compile(&unit, &options, ImageKind::Cubin, &decl.rust_name)?;
    Ok(t.elapsed().as_secs_f64())
}

fn bench() -> opbox::Result<()> {
    if let Err(e) = opbox::cuda::nvrtc::version() {
        println!("skipped: no NVRTC ({e})");
        return Ok(());
    }
    let target = Target::parse("sm_90")?;
    if std::env::var_os("OPBOX_PRINT_CPP").is_some() {
        let unit = opbox::cuda::translation_unit(&example::axpy4::DECL, &[])?;
        println!("{}", unit.source);
    }
    let rounds: usize = std::env::var("OPBOX_COMPILE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    println!(
        "dsl compile bench, NVRTC {:?}, sm_90, {rounds} rounds",
        opbox::cuda::nvrtc::version()?
    );
    println!("| kernel | NVRTC compile (median) | goal | ratio |");
    println!("|---|---|---|---|");
    let pairs: [(&str, &KernelDecl, &KernelDecl); 2] = [
        (
            "axpy, one f32 a thread",
            &axpy::axpy_dsl::DECL,
            &axpy::axpby_f32::DECL,
        ),
        (
            "axpy, load4/store4",
            &example::axpy4::DECL,
            &axpy::axpby4_f32::DECL,
        ),
    ];
    for (name, dsl, hand) in pairs {
        let (mut d, mut h, mut b) = (Vec::new(), Vec::new(), Vec::new());
        // One untimed round each: NVRTC's own start-up is not either kernel's.
        seconds(dsl, target)?;
        seconds(hand, target)?;
        bare_seconds(hand, target)?;
        for _ in 0..rounds {
            d.push(seconds(dsl, target)?);
            h.push(seconds(hand, target)?);
            b.push(bare_seconds(hand, target)?);
        }
        let (d, h, b) = (gpu::median(d), gpu::median(h), gpu::median(b));
        println!("| {name}: hand-written .cu | {:.1} ms | | 1.00 |", h * 1e3);
        println!(
            "| {name}: hand-written .cu, its text alone (no opbox prelude or check) | {:.1} ms | | {:.3} |",
            b * 1e3,
            b / h
        );
        println!(
            "| {name}: #[kernel] DSL | {:.1} ms | ≤ 1.1× the .cu | {:.3} (against the text alone: {:.3}) |",
            d * 1e3,
            d / h,
            d / b
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dsl compile bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}
