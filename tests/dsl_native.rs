//! `#[kernel]` bodies over slices of 16-byte native types (issue 13 §5): `x.load4(i)` and
//! `y.store4(i, v)` move element `i` as one 16-byte access (`ld.global.v4` in the PTX), where
//! `x[i]` of a 4-byte-aligned struct is four loads. On the CPU against plain Rust, compiled
//! with NVRTC (CI has it), and on a GPU against the CPU bit for bit.
//!
//! A custom harness (harness = false), like tests/dsl: each test passes, fails or skips with a
//! printed reason; OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.

mod harness;

use std::process::ExitCode;
use std::sync::LazyLock;

use harness::{ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult};
use opbox::prelude::*;
use opbox::{BuildOptions, Error};

/// A particle: 16 bytes, 4-byte aligned, of mixed field types.
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "sim::Particle", initializer = "aggregate")]
pub struct Particle {
    x: f32,
    y: f32,
    id: u32,
    mass: f32,
}

static SIM_CPP: LazyLock<BuildOptions> = LazyLock::new(|| BuildOptions {
    preamble:
        "namespace sim { struct Particle { float x; float y; unsigned int id; float mass; }; }\n"
            .into(),
    ..BuildOptions::default()
});

/// Each particle moved by its mass and renumbered, read and written as one 16-byte access.
#[kernel(build = SIM_CPP)]
fn drift(p: In<[Particle]>, out: Out<[Particle]>, dt: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        let a = p.load4(i);
        let b = Particle {
            x: a.x + dt * a.mass,
            y: a.y - dt,
            id: a.id + 1000,
            mass: a.mass,
        };
        out.store4(i, b);
    }
}

/// The same through element indexing, for the PTX comparison.
#[kernel(build = SIM_CPP)]
fn drift_indexed(p: In<[Particle]>, out: Out<[Particle]>, dt: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        let a = p[i];
        out[i] = Particle {
            x: a.x + dt * a.mass,
            y: a.y - dt,
            id: a.id + 1000,
            mass: a.mass,
        };
    }
}

/// In place through an InOut slice: a load4 and a store4 of one element.
#[kernel(build = SIM_CPP)]
fn heavier(p: InOut<[Particle]>, n: u32) {
    let i = global_id_x();
    if i < n {
        let mut a = p.load4(i);
        a.mass *= 2.0;
        p.store4(i, a);
    }
}

fn particles(n: usize) -> Vec<Particle> {
    (0..n)
        .map(|k| Particle {
            x: k as f32 * 0.5,
            y: 100.0 - k as f32,
            id: k as u32,
            mass: 1.0 + (k % 7) as f32 * 0.25,
        })
        .collect()
}

/// What `drift` computes, in plain Rust.
fn drift_reference(ps: &[Particle], dt: f32) -> Vec<Particle> {
    ps.iter()
        .map(|a| Particle {
            x: a.x + dt * a.mass,
            y: a.y - dt,
            id: a.id + 1000,
            mass: a.mass,
        })
        .collect()
}

const N: usize = 300;
const DT: f32 = 0.125;

/// `drift`, `drift_indexed` and `heavier` on `device`, over particles `from..N` of one storage
/// (a view of whole elements keeps the 16-byte alignment of its storage).
fn run(device: Device, from: usize) -> opbox::Result<[Vec<Particle>; 3]> {
    let all = Tensor::from_native_vec(particles(N), &[N])?.to(device)?;
    let p = all.narrow(0, from, N - from)?;
    let n = N - from;
    let cfg = LaunchConfig::for_elems(n);
    let out = Tensor::from_native_vec(vec![particles(1)[0]; n], &[n])?.to(device)?;
    drift::launch(cfg.clone(), &p, &out, DT, n as u32)?;
    let out2 = Tensor::from_native_vec(vec![particles(1)[0]; n], &[n])?.to(device)?;
    drift_indexed::launch(cfg.clone(), &p, &out2, DT, n as u32)?;
    heavier::launch(cfg, &p, n as u32)?;
    Ok([
        out.to_native_vec()?,
        out2.to_native_vec()?,
        p.to_native_vec()?,
    ])
}

fn check(got: &[Vec<Particle>; 3], from: usize, on: &str) -> Result<(), String> {
    let input = &particles(N)[from..];
    let want = drift_reference(input, DT);
    ensure(got[0] == want, || {
        format!("{on}: drift from {from}: {:?}", &got[0][..3])
    })?;
    ensure(got[1] == want, || {
        format!("{on}: drift_indexed from {from}")
    })?;
    let doubled: Vec<Particle> = input
        .iter()
        .map(|a| Particle {
            mass: a.mass * 2.0,
            ..*a
        })
        .collect();
    ensure(got[2] == doubled, || format!("{on}: heavier from {from}"))
}

fn cpu_matches_plain_rust() -> TestResult {
    for from in [0, 1, 7] {
        check(&run(Device::Cpu, from).map_err(s)?, from, "cpu")?;
    }
    Ok(Outcome::Pass)
}

/// A vector past the end stops the launch naming the element, as an index does.
fn cpu_past_the_end_is_an_error() -> TestResult {
    let p = Tensor::from_native_vec(particles(4), &[4]).map_err(s)?;
    let out = Tensor::from_native_vec(particles(4), &[4]).map_err(s)?;
    match drift::launch(LaunchConfig::for_elems(6), &p, &out, DT, 6) {
        Err(Error::IndexOutOfBounds {
            param, index, len, ..
        }) => ensure(param == "p" && index == 4 && len == 4, || {
            format!("out of bounds report: {param} {index} {len}")
        })?,
        other => return Err(format!("drift past the end: {other:?}")),
    }
    Ok(Outcome::Pass)
}

/// The PTX moves each particle of `drift` as one 16-byte load and one 16-byte store; the
/// indexed twin, whose struct is only 4-byte aligned, cannot.
fn nvrtc_one_vector_access_an_element() -> TestResult {
    with_nvrtc(|| {
        let ptx = |decl| -> Result<String, String> {
            let image = opbox::cuda::compile_for_arch(decl, &[], "compute_90").map_err(s)?;
            Ok(String::from_utf8_lossy(&image.image).into_owned())
        };
        let (vector, indexed) = (ptx(&drift::DECL)?, ptx(&drift_indexed::DECL)?);
        let count = |text: &str, what: &str| text.lines().filter(|l| l.contains(what)).count();
        for (what, want) in [("ld.global.v4", 1), ("st.global.v4", 1)] {
            ensure(count(&vector, what) == want, || {
                format!(
                    "drift: {} `{what}` lines, want {want}:\n{vector}",
                    count(&vector, what)
                )
            })?;
            ensure(count(&indexed, what) == 0, || {
                format!("drift_indexed has `{what}`:\n{indexed}")
            })?;
        }
        let heavier = ptx(&heavier::DECL)?;
        ensure(count(&heavier, "ld.global.v4") == 1, || {
            format!("heavier:\n{heavier}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_matches_cpu() -> TestResult {
    with_gpu(|| {
        for from in [0, 1, 7] {
            let got = run(Device::Cuda(0), from).map_err(s)?;
            check(&got, from, "cuda")?;
            let cpu = run(Device::Cpu, from).map_err(s)?;
            let bits = |v: &[Vec<Particle>; 3]| -> Vec<[u32; 4]> {
                v.iter()
                    .flatten()
                    .map(|p| [p.x.to_bits(), p.y.to_bits(), p.id, p.mass.to_bits()])
                    .collect()
            };
            ensure(bits(&got) == bits(&cpu), || {
                format!("cuda and cpu differ from {from}")
            })?;
        }
        Ok(Outcome::Pass)
    })
}

const TESTS: &[Test] = &[
    (
        "cpu_native_load4_store4_match_plain_rust",
        cpu_matches_plain_rust,
    ),
    (
        "cpu_native_load4_past_the_end_is_an_error",
        cpu_past_the_end_is_an_error,
    ),
    (
        "nvrtc_native_load4_is_one_16_byte_access",
        nvrtc_one_vector_access_an_element,
    ),
    ("gpu_native_load4_store4_match_the_cpu", gpu_matches_cpu),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}
