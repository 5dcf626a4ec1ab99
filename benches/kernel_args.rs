//! In-process figures of the kernel argument protocol, no GPU needed (criterion):
//! - specialization lookup for a kernel with 2 `#[constexpr]` params (an int and a
//!   `#[derive(ConstexprEnum)]` enum) among 8 loaded specializations, against the no-constexpr
//!   lookup of a plain kernel (a `OnceLock` read) — the goal is ≤ 100 ns;
//! - lowering arguments from a StableValue stack against the typed lowering, for the
//!   scalars-and-struct part of a launch (tensors need a GPU: benches/launch.rs measures the
//!   whole launch on the H200).
//!
//! `cargo bench --bench kernel_args -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::{Arc, OnceLock};

use criterion::{criterion_group, criterion_main, Criterion};
use opbox::cuda::codegen::ConstValue;
use opbox::kernel::{ConstexprArg, LaunchArg, SpecTable};
use opbox::prelude::*;
use opbox::{ConstexprEnum, KernelArg};

#[derive(Clone, Copy, Debug, KernelArg)]
#[repr(C)]
pub struct Params {
    pub alpha: f32,
    pub scale: f32,
    pub n: i64,
}

#[derive(Clone, Copy, Debug, ConstexprEnum)]
pub enum Epi {
    #[cpp = "ep::Identity"]
    Identity,
    #[cpp = "ep::Relu"]
    Relu,
    #[cpp = "ep::Scale"]
    Scale,
    #[cpp = "ep::Gelu"]
    Gelu,
}

#[extern_kernel(source = "../tests/kernels/axpy.cu")]
fn axpy(a: f32, n: i64, y: InOut<[f32]>, x: In<[f32]>);

fn lookup(c: &mut Criterion) {
    let table: SpecTable<u64> = SpecTable::new();
    for block in [128, 256] {
        for epi in [Epi::Identity, Epi::Relu, Epi::Scale, Epi::Gelu] {
            table.insert(
                0,
                &[ConstValue::I32(block), epi.const_value()],
                Arc::new(block as u64),
            );
        }
    }
    let plain: OnceLock<u64> = OnceLock::new();
    let _ = plain.set(1);
    let mut g = c.benchmark_group("specialization lookup");
    g.bench_function("no constexpr (OnceLock read)", |b| {
        b.iter(|| black_box(plain.get()))
    });
    g.bench_function(
        "2 constexprs, 8 specializations, values built per call",
        |b| {
            b.iter(|| {
                let values = [
                    black_box(256i32).const_value(),
                    black_box(Epi::Scale).const_value(),
                ];
                black_box(table.find(0, &values))
            })
        },
    );
    g.finish();
}

fn lowering(c: &mut Criterion) {
    // The declaration's scalar params only (the tensors need a GPU): a, n, plus a struct.
    let mut decl = axpy::DECL.clone();
    decl.params.to_mut().truncate(2);
    decl.params.to_mut().push(opbox::cuda::codegen::Param::new(
        "p",
        <Params as KernelArg>::KIND,
    ));
    let p = Params {
        alpha: 1.0,
        scale: 0.5,
        n: 1024,
    };
    let mut g = c.benchmark_group("argument lowering (a: f32, n: i64, p: Params)");
    g.bench_function("typed", |b| {
        b.iter(|| {
            let args: [LaunchArg<'_>; 3] = [
                LaunchArg::F32(black_box(2.0)),
                LaunchArg::I64(black_box(1024)),
                <Params as KernelArg>::lower(black_box(&p)),
            ];
            black_box(args.len())
        })
    });
    let stack = [
        StableValue::float(2.0),
        StableValue::int(1024),
        StableValue::list(opbox::value::List::Values(vec![
            StableValue::float(1.0),
            StableValue::float(0.5),
            StableValue::int(1024),
        ])),
    ];
    g.bench_function("from a StableValue stack", |b| {
        b.iter(|| {
            let structs = opbox::kernel::struct_bytes(&decl, black_box(&stack)).ok();
            let structs = structs.unwrap_or_default();
            let lowered = opbox::kernel::lower_stack(&decl, &stack, &structs).ok();
            black_box(lowered.map(|(a, _)| a.len()))
        })
    });
    g.finish();
}

criterion_group!(benches, lookup, lowering);
criterion_main!(benches);
