//! Ahead of time (what `opbox aot` runs in process):
//! 6. a kernel whose build options initializer panics fails with the panic's message, and the
//!    other kernels are written (the command then exits 1: `summary.failed > 0`);
//! 11. arches are checked against what NVRTC accepts: out-of-range, signed and zero-padded
//!    numbers are refused with a message, NVRTC's `a` and `f` targets are accepted;
//! 13. a 263-character kernel name gets a file name a file system accepts.

use std::sync::Mutex;

use opbox::aot::{plan, run_request, AotEvent, AotKernel, AotRequest, AotTargets};
use opbox::cuda::Target;

use crate::harness::{ensure, expect_err, s, with_nvrtc, Outcome, TestResult};

pub fn panicking_build_options() -> TestResult {
    with_nvrtc(|| {
        let out = tempfile::tempdir().map_err(|e| e.to_string())?;
        let request = AotRequest {
            targets: AotTargets {
                arches: vec!["sm_90".into()],
                out_dir: out.path().to_path_buf(),
                ..AotTargets::default()
            },
            kernels: vec!["axpby_panicky".into(), "axpby_f32".into()],
            jobs: 2,
            list_only: false,
        };
        let failed = Mutex::new(Vec::new());
        let summary = run_request(&request, &|event| {
            if let AotEvent::Failed { message, .. } = event {
                failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(message.to_string());
            }
        })
        .map_err(s)?;
        let failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
        ensure(summary.written == 1 && summary.failed == 1, || {
            format!("{summary:?}: {failed:?}")
        })?;
        ensure(
            failed
                == ["kernel 'axpby_panicky' panicked while compiling for sm_90: these build options cannot be built"],
            || format!("{failed:?}"),
        )?;
        ensure(out.path().join("axpby_f32.sm_90.cubin").is_file(), || {
            "the other kernel is written".into()
        })?;
        Ok(Outcome::Pass)
    })
}

pub fn arch_range() -> TestResult {
    for bad in [
        "sm_0",
        "sm_4294967295",
        "sm_+90",
        "sm_090",
        "compute_9x",
        "sm_90b",
    ] {
        expect_err(Target::parse(bad), bad, &["unknown GPU arch", bad])?;
    }
    with_nvrtc(|| {
        for unsupported in ["compute_1000", "sm_10", "sm_75a", "sm_90f"] {
            let target = Target::parse(unsupported).map_err(s)?;
            expect_err(
                target.check_supported(),
                unsupported,
                &[unsupported, "is not supported by NVRTC"],
            )?;
        }
        for supported in ["sm_90", "compute_90", "sm_90a", "compute_90a", "sm_100f"] {
            let target = Target::parse(supported).map_err(s)?;
            target
                .check_supported()
                .map_err(|e| format!("{supported}: {e}"))?;
        }
        // Refused once, when the run is planned, not once per kernel.
        let out = tempfile::tempdir().map_err(|e| e.to_string())?;
        let kernels: [AotKernel<'_>; 1] = [(&crate::axpby_f32::DECL).into()];
        let targets = AotTargets {
            arches: vec!["compute_1000".into()],
            out_dir: out.path().to_path_buf(),
            ..AotTargets::default()
        };
        expect_err(
            plan(&kernels, &targets),
            "compute_1000 was planned",
            &["compute_1000"],
        )?;
        Ok(Outcome::Pass)
    })
}

pub fn long_names() -> TestResult {
    with_nvrtc(|| {
        let mut long = crate::axpby_f32::DECL.clone();
        long.rust_name = "k".repeat(263).into();
        let mut other = long.clone();
        other.rust_name = format!("{}x", "k".repeat(262)).into();
        let out = tempfile::tempdir().map_err(|e| e.to_string())?;
        let targets = AotTargets {
            arches: vec!["sm_90".into()],
            out_dir: out.path().to_path_buf(),
            ..AotTargets::default()
        };
        let paths = opbox::aot::compile(&[(&long).into(), (&other).into()], &targets).map_err(s)?;
        let names: Vec<String> = paths
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        ensure(
            names.len() == 2
                && names[0] != names[1]
                && names.iter().all(|n| {
                    n.len() <= 255 && n.starts_with("kkkkkkkk") && n.ends_with(".sm_90.cubin")
                })
                && paths.iter().all(|p| p.is_file()),
            || format!("{names:?}"),
        )?;
        Ok(Outcome::Pass)
    })
}
