//! The differential test of the `#[kernel]` DSL: the kernels `build.rs` generates (fixed seed,
//! every operator, cast, literal form and numeric method of the subset, every scalar type, edge
//! inputs) each run on the CPU build; each compiles with NVRTC; on a GPU each runs on CUDA and
//! must give the CPU's bits (NaNs alike; the kernels with a transcendental method, which each
//! side takes from its own math library, within 4 ulps).

#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::process::ExitCode;

use harness::{ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult};
use opbox::Device;
use opbox_dsl_diff::CASES;

const TESTS: &[Test] = &[
    ("cpu_runs_every_generated_kernel", cpu_all),
    ("nvrtc_compiles_every_generated_kernel", nvrtc_all),
    ("gpu_matches_the_cpu_bit_for_bit", gpu_all),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}

fn cpu_all() -> TestResult {
    ensure(CASES.len() >= 500, || {
        format!("only {} generated kernels", CASES.len())
    })?;
    let mut elements = 0;
    for case in CASES {
        let out = (case.run)(Device::Cpu).map_err(|e| format!("{}: {e}", case.name))?;
        elements += out.len();
    }
    let exact = CASES.iter().filter(|c| c.exact).count();
    println!(
        "    {} kernels ({exact} bit-exact), {elements} elements on the CPU",
        CASES.len()
    );
    Ok(Outcome::Pass)
}

fn nvrtc_all() -> TestResult {
    with_nvrtc(|| {
        // Two compile threads: NVRTC is thread-safe, and the cache makes reruns cheap.
        let failures: Vec<String> = std::thread::scope(|scope| {
            let halves = CASES.split_at(CASES.len() / 2);
            let jobs = [halves.0, halves.1].map(|part| {
                scope.spawn(move || {
                    let mut failed = Vec::new();
                    for case in part {
                        match opbox::cuda::compile_for_arch(case.decl, &[], "sm_90") {
                            Ok(_) => {}
                            Err(opbox::Error::NoCuda { reason }) => return Err(reason),
                            Err(e) => failed.push(format!("{}: {e}", case.name)),
                        }
                    }
                    Ok(failed)
                })
            });
            let mut all = Vec::new();
            for job in jobs {
                match job.join() {
                    Ok(Ok(f)) => all.extend(f),
                    Ok(Err(reason)) => all.push(format!("NVRTC: {reason}")),
                    Err(_) => all.push("a compile thread panicked".into()),
                }
            }
            all
        });
        if let Some(reason) = failures.iter().find(|f| f.starts_with("NVRTC: ")) {
            return Ok(Outcome::Skip(format!("NVRTC not usable ({reason})")));
        }
        ensure(failures.is_empty(), || {
            format!(
                "{} kernels failed to compile:\n{}",
                failures.len(),
                failures.join("\n")
            )
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_all() -> TestResult {
    with_gpu(|| {
        let mut bad = Vec::new();
        for case in CASES {
            let cpu = (case.run)(Device::Cpu).map_err(|e| format!("{}: {e}", case.name))?;
            let gpu = (case.run)(Device::Cuda(0)).map_err(|e| format!("{}: {e}", case.name))?;
            for (k, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let same = c.0 == g.0
                    || (!case.exact
                        && matches!((c.1, g.1), (Some(a), Some(b)) if (a - b).abs() <= 4));
                if !same {
                    bad.push(format!(
                        "{} element {k}: CPU bits {:#x}, CUDA bits {:#x}",
                        case.name, c.0, g.0
                    ));
                    break;
                }
            }
        }
        opbox::cuda::synchronize(0).map_err(s)?;
        ensure(bad.is_empty(), || {
            format!("{} kernels differ:\n{}", bad.len(), bad.join("\n"))
        })?;
        println!("    {} kernels: CUDA gives the CPU's bits", CASES.len());
        Ok(Outcome::Pass)
    })
}
