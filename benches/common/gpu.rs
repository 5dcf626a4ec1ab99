//! What the GPU benches share (each includes this file with `#[path]`): why one cannot run
//! here, and the median they report.

/// Why a GPU bench cannot run on this machine (no device, or no NVRTC to compile its kernels),
/// or None when it can.
pub fn skip_reason() -> Option<String> {
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => return Some("no GPU (the CUDA driver reports 0 devices)".into()),
        Err(e) => return Some(format!("no GPU ({e})")),
    }
    opbox::cuda::nvrtc::version()
        .err()
        .map(|e| format!("no NVRTC ({e})"))
}

/// The median of `samples` (the upper one of an even count); `samples` is never empty here.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Median seconds of one call of `f`, over `rounds` synchronized rounds of `per` calls (after
/// one unmeasured round).
#[allow(dead_code)]
pub fn time(
    rounds: usize,
    per: usize,
    mut f: impl FnMut() -> opbox::Result<()>,
) -> opbox::Result<f64> {
    for _ in 0..per {
        f()?;
    }
    opbox::cuda::synchronize(0)?;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        for _ in 0..per {
            f()?;
        }
        opbox::cuda::synchronize(0)?;
        samples.push(t.elapsed().as_secs_f64() / per as f64);
    }
    Ok(median(samples))
}
