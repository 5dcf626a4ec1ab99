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
