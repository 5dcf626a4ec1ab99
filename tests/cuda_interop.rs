//! CUDA memory another library owns and the stream machinery around it, on a GPU: `from_blob`
//! over `cuMemAlloc`'d memory, DLPack on CUDA (round trip, and the consumer-stream ordering the
//! spec asks of a producer), `with_stream` honoured by launches, the stream pool, the device
//! guard, and cuBLAS handles per stream. The cuBLAS GEMM itself is `examples/cublas_gemm.rs`.
//!
//! Own harness (harness = false): without a GPU each test skips with the reason, counted in the
//! closing line; `scripts/gpu-check run` runs it with OPBOX_REQUIRE_GPU=1.

mod harness;

use std::ffi::c_void;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harness::{compile_sm90, ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult};
use opbox::cuda::cudarc::driver::{result, sys};
use opbox::cuda::{
    current_device, current_stream, stream_from_pool, with_stream, DeviceGuard, POOL_STREAMS,
};
use opbox::prelude::*;
use opbox::tensor::dlpack::ffi::DLDeviceType;
use opbox::tensor::dlpack::{DlpackStream, FromDlpack, ToDlpack};

#[extern_kernel(source = "kernels/slow_fill.cu")]
fn slow_fill(out: Out<[f32]>, v: f32, n: i64, spin: i64);

/// About 25 ms at an H200's clock: long enough that work behind it is still queued.
const SPIN: i64 = 50_000_000;

const TESTS: &[Test] = &[
    ("slow_fill_compiles_with_nvrtc", compiles),
    ("gpu_from_blob_over_cuda_memory", from_blob_cuda),
    ("gpu_dlpack_round_trip_on_cuda", dlpack_round_trip),
    (
        "gpu_dlpack_export_orders_the_consumer_stream",
        dlpack_consumer_stream,
    ),
    (
        "gpu_dlpack_import_waits_for_the_producer_stream",
        dlpack_producer_stream,
    ),
    (
        "gpu_with_stream_is_honoured_by_launches",
        with_stream_launches,
    ),
    ("gpu_stream_pool_round_robin", pool),
    ("gpu_device_guard", device_guard),
    (
        "gpu_launch_while_another_context_is_current",
        launch_under_another_context,
    ),
    ("gpu_cublas_handle_per_stream", cublas_handles),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}

fn drv(e: result::DriverError) -> String {
    e.to_string()
}

/// `cuStreamQuery`: `true` while work is still queued on the stream.
fn pending(stream: sys::CUstream) -> bool {
    // SAFETY: the stream is live (its `Stream` is held by the caller).
    let r = unsafe { sys::cuStreamQuery(stream) };
    r == sys::cudaError_enum::CUDA_ERROR_NOT_READY
}

fn compiles() -> TestResult {
    with_nvrtc(|| {
        compile_sm90(&[&slow_fill::DECL])?;
        Ok(Outcome::Pass)
    })
}

fn from_blob_cuda() -> TestResult {
    with_gpu(|| {
        let dev = opbox::cuda::device(0).map_err(s)?;
        dev.context.bind_to_thread().map_err(drv)?;
        let n = 1024usize;
        let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
        // SAFETY: a fresh allocation of n f32s, filled before use and freed by the deleter only.
        let ptr = unsafe { result::malloc_sync(n * 4) }.map_err(drv)?;
        // SAFETY: `ptr` holds n * 4 bytes.
        unsafe { result::memcpy_htod_sync(ptr, &host) }.map_err(drv)?;
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let deleter = move || {
            let _ = dev.context.bind_to_thread();
            // SAFETY: freed once, here, after the last tensor viewing it is gone.
            let _ = unsafe { result::free_sync(ptr) };
            counter.fetch_add(1, Ordering::SeqCst);
        };
        // SAFETY: the allocation covers every element and lives until the deleter frees it.
        let t = unsafe {
            Tensor::from_blob(
                ptr as usize as *mut c_void,
                &[32, 32],
                None,
                DType::F32,
                Device::Cuda(0),
                deleter,
            )
        }
        .map_err(s)?;
        ensure(t.data_ptr() as usize as u64 == ptr, || {
            "data_ptr is the blob".into()
        })?;
        ensure(t.to_vec::<f32>().map_err(s)? == host, || {
            "reads the blob".into()
        })?;
        let tt = t.transpose(0, 1).map_err(s)?.contiguous().map_err(s)?;
        ensure(tt.to_vec::<f32>().map_err(s)?[1] == 32.0, || {
            "transpose of the blob".into()
        })?;
        t.fill_(2.0).map_err(s)?;
        let mut back = vec![0f32; n];
        // SAFETY: the allocation is alive (t holds it) and fill_ has completed.
        unsafe { result::memcpy_dtoh_sync(&mut back, ptr) }.map_err(drv)?;
        ensure(back.iter().all(|&v| v == 2.0), || {
            "opbox's write reached the blob".into()
        })?;
        ensure(t.with_cuda_slice(|_, _, _| ()).is_err(), || {
            "with_cuda_slice must refuse foreign memory".into()
        })?;
        let view = t.narrow(0, 1, 1).map_err(s)?;
        drop((t, tt));
        ensure(runs.load(Ordering::SeqCst) == 0, || {
            "a view still holds it".into()
        })?;
        drop(view);
        ensure(runs.load(Ordering::SeqCst) == 1, || {
            "the deleter ran once".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn dlpack_round_trip() -> TestResult {
    with_gpu(|| {
        let x = Tensor::from_vec((0..64).map(|i| i as f32).collect(), &[8, 8])
            .and_then(|t| t.to(Device::Cuda(0)))
            .map_err(s)?;
        let m = x.to_dlpack().map_err(s)?;
        // SAFETY: live until its deleter runs (from_dlpack below takes it).
        let dl = unsafe { (*m).dl_tensor };
        ensure(
            dl.device.device_type == DLDeviceType::CUDA && dl.device.device_id == 0,
            || format!("device {:?}", dl.device),
        )?;
        ensure(dl.data.cast_const() == x.data_ptr(), || {
            "zero copy out".into()
        })?;
        // SAFETY: opbox's own export, handed back.
        let back = unsafe { Tensor::from_dlpack(m) }.map_err(s)?;
        ensure(back.device() == Device::Cuda(0), || {
            "imported on cuda:0".into()
        })?;
        ensure(back.data_ptr() == x.data_ptr(), || "zero copy in".into())?;
        ensure(
            back.to_vec::<f32>().map_err(s)? == x.to_vec::<f32>().map_err(s)?,
            || "same elements".into(),
        )?;
        drop(back);
        ensure(x.ref_count() == 1, || {
            "the export's handle was released".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn dlpack_consumer_stream() -> TestResult {
    with_gpu(|| {
        let (ours, theirs) = (
            stream_from_pool(0).map_err(s)?,
            stream_from_pool(0).map_err(s)?,
        );
        let (a, b) = (ours.cu_stream().unwrap(), theirs.cu_stream().unwrap());
        ensure(a != b, || "two pool streams".into())?;
        let n = 4096usize;
        // The producer's work: a slow kernel on opbox's current stream `ours`.
        let (out, m, was_pending) = with_stream(&ours, || -> opbox::Result<_> {
            let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
            slow_fill::launch(LaunchConfig::for_elems(n), &out, 7.0, n as i64, SPIN)?;
            let was_pending = pending(a);
            let opts = ToDlpack {
                copy: None,
                stream: Some(DlpackStream::Handle(b as usize)),
            };
            Ok((out.clone(), out.to_dlpack_with(&opts)?, was_pending))
        })
        .map_err(s)?;
        ensure(was_pending, || {
            "the kernel was still running at export".into()
        })?;
        // The consumer reads on its own stream, right away: the export made it wait.
        let mut host = vec![0f32; n];
        // SAFETY: the export keeps the memory alive; `host` outlives the copy, which is
        // waited for below.
        unsafe {
            result::memcpy_dtoh_async(&mut host, (*m).dl_tensor.data as usize as u64, b)
                .map_err(drv)?;
        }
        theirs.synchronize().map_err(s)?;
        ensure(host.iter().all(|&v| v == 7.0), || {
            format!(
                "the consumer's stream read {} before the producer's kernel finished",
                host[0]
            )
        })?;
        // SAFETY: the consumer is done; its deleter runs once.
        unsafe { ((*m).deleter.unwrap())(m) };
        ensure(out.ref_count() == 1, || "released".into())?;
        Ok(Outcome::Pass)
    })
}

fn dlpack_producer_stream() -> TestResult {
    with_gpu(|| {
        let producer = stream_from_pool(0).map_err(s)?;
        let raw = producer.cu_stream().unwrap();
        let n = 4096usize;
        // A "producer" whose kernel is still running on its own stream when it hands the tensor
        // over with no synchronization (stream -1).
        let (m, was_pending) = with_stream(&producer, || -> opbox::Result<_> {
            let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
            slow_fill::launch(LaunchConfig::for_elems(n), &out, 5.0, n as i64, SPIN)?;
            let opts = ToDlpack {
                copy: None,
                stream: Some(DlpackStream::NoSync),
            };
            Ok((out.to_dlpack_with(&opts)?, pending(raw)))
        })
        .map_err(s)?;
        ensure(was_pending, || {
            "the producer's kernel was still running".into()
        })?;
        // The consumer, on the default stream, names the producer's stream: opbox's stream waits
        // for it before the download below.
        let opts = FromDlpack {
            copy: None,
            producer_stream: Some(DlpackStream::Handle(raw as usize)),
        };
        // SAFETY: a live managed tensor, handed over; the producer stream is alive (held).
        let t = unsafe { Tensor::from_dlpack_with(m, &opts) }.map_err(s)?;
        let got = t.to_vec::<f32>().map_err(s)?;
        ensure(got.iter().all(|&v| v == 5.0), || {
            format!(
                "opbox read {} before the producer's kernel finished",
                got[0]
            )
        })?;
        Ok(Outcome::Pass)
    })
}

fn with_stream_launches() -> TestResult {
    with_gpu(|| {
        let stream = stream_from_pool(0).map_err(s)?;
        let raw = stream.cu_stream().unwrap();
        let default = current_stream(0).map_err(s)?.cu_stream();
        let n = 256usize;
        let (out, inside, was_pending) = with_stream(&stream, || -> opbox::Result<_> {
            let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
            slow_fill::launch(LaunchConfig::for_elems(n), &out, 3.0, n as i64, SPIN)?;
            Ok((out, current_stream(0)?.cu_stream(), pending(raw)))
        })
        .map_err(s)?;
        ensure(inside == Some(raw), || {
            "current_stream is the scoped one".into()
        })?;
        ensure(was_pending, || {
            "the launch went to the scoped stream".into()
        })?;
        ensure(current_stream(0).map_err(s)?.cu_stream() == default, || {
            "the scope ended".into()
        })?;
        stream.synchronize().map_err(s)?;
        ensure(!pending(raw), || "synchronize waited".into())?;
        ensure(
            out.to_vec::<f32>().map_err(s)?.iter().all(|&v| v == 3.0),
            || "the kernel's result".into(),
        )?;
        Ok(Outcome::Pass)
    })
}

fn pool() -> TestResult {
    with_gpu(|| {
        let handles: Vec<usize> = (0..POOL_STREAMS + 1)
            .map(|_| stream_from_pool(0).map(|st| st.cu_stream().unwrap() as usize))
            .collect::<opbox::Result<_>>()
            .map_err(s)?;
        let mut distinct = handles[..POOL_STREAMS].to_vec();
        distinct.sort();
        distinct.dedup();
        ensure(distinct.len() == POOL_STREAMS, || format!("{handles:x?}"))?;
        ensure(handles[POOL_STREAMS] == handles[0], || "round robin".into())?;
        Ok(Outcome::Pass)
    })
}

fn device_guard() -> TestResult {
    with_gpu(|| {
        let ctx = opbox::cuda::device(0).map_err(s)?.context.cu_ctx();
        {
            let _outer = DeviceGuard::new(0).map_err(s)?;
            let _inner = DeviceGuard::new(0).map_err(s)?;
            ensure(current_device() == 0, || "current device".into())?;
            let mut current = std::ptr::null_mut();
            // SAFETY: writes one context handle.
            unsafe { sys::cuCtxGetCurrent(&mut current) };
            ensure(current == ctx, || "the guard bound cuda:0's context".into())?;
        }
        let err = match DeviceGuard::new(99) {
            Ok(_) => return Err("cuda:99 must be refused".into()),
            Err(e) => e.to_string(),
        };
        ensure(err.contains("cuda:99"), || err.clone())?;
        Ok(Outcome::Pass)
    })
}

/// A launch while a context opbox did not make is current on the thread (as another library's
/// may be), on the default and on a scoped stream, and from a thread with no context current:
/// each runs in its own device's context and leaves its values. A launch does not ask which
/// context is current first (backend/cuda/submit.rs); this is what holds it to that.
fn launch_under_another_context() -> TestResult {
    with_gpu(|| {
        let n = 4096usize;
        let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0)).map_err(s)?;
        let ours = opbox::cuda::device(0).map_err(s)?.context.cu_ctx();
        let current = || {
            let mut c = std::ptr::null_mut();
            // SAFETY: writes one context handle.
            unsafe { sys::cuCtxGetCurrent(&mut c) };
            c
        };
        let filled = |v: f32| -> TestResult {
            opbox::cuda::synchronize(0).map_err(s)?;
            let got = out.to_vec::<f32>().map_err(s)?;
            ensure(got.iter().all(|&x| x == v), || {
                format!("expected every element {v}, got {:?}", &got[..4])
            })?;
            Ok(Outcome::Pass)
        };
        let mut foreign = std::ptr::null_mut();
        // SAFETY: creates a context on device 0 and makes it current on this thread; it is
        // destroyed below, and nothing else holds it.
        unsafe { sys::cuCtxCreate_v4(&mut foreign, std::ptr::null_mut(), 0, 0) }
            .result()
            .map_err(drv)?;
        ensure(current() == foreign && foreign != ours, || {
            "the new context is current".into()
        })?;
        slow_fill::launch(LaunchConfig::for_elems(n), &out, 3.0, n as i64, 0).map_err(s)?;
        println!(
            "    note: after a launch under another context, {} is current",
            if current() == ours {
                "opbox's (the driver refused, so the launch bound it)"
            } else {
                "the other one (the driver took the launch)"
            }
        );
        filled(3.0)?;
        // SAFETY: `foreign` is live; it becomes current again, for the scoped-stream case.
        unsafe { sys::cuCtxSetCurrent(foreign) }
            .result()
            .map_err(drv)?;
        let stream = stream_from_pool(0).map_err(s)?;
        with_stream(&stream, || {
            slow_fill::launch(LaunchConfig::for_elems(n), &out, 4.0, n as i64, 0)
        })
        .map_err(s)?;
        stream.synchronize().map_err(s)?;
        filled(4.0)?;
        // SAFETY: `foreign` was made above and is used no more; opbox's context is made
        // current in its place, for the tests after this one.
        unsafe { sys::cuCtxDestroy_v2(foreign) }
            .result()
            .map_err(drv)?;
        opbox::cuda::device(0)
            .map_err(s)?
            .context
            .bind_to_thread()
            .map_err(drv)?;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    ensure(current().is_null(), || "a new thread has no context".into())?;
                    slow_fill::launch(LaunchConfig::for_elems(n), &out, 5.0, n as i64, 0)
                        .map_err(s)?;
                    filled(5.0)
                })
                .join()
                .map_err(|_| "the launching thread panicked".to_string())?
        })
    })
}

fn cublas_handles() -> TestResult {
    with_gpu(|| {
        if let Err(e) = opbox::cuda::probe::cublas() {
            return Ok(Outcome::Skip(format!("no cuBLAS ({e})")));
        }
        let (x, y) = (
            stream_from_pool(0).map_err(s)?,
            stream_from_pool(0).map_err(s)?,
        );
        let hx = opbox::cuda::cublas::handle(&x).map_err(s)?;
        let hy = opbox::cuda::cublas::handle(&y).map_err(s)?;
        let again = opbox::cuda::cublas::handle(&x).map_err(s)?;
        ensure(Arc::ptr_eq(&hx, &again), || "one handle per stream".into())?;
        ensure(!Arc::ptr_eq(&hx, &hy), || {
            "another stream, another handle".into()
        })?;
        let current = with_stream(&y, || opbox::cuda::cublas::current_handle(0)).map_err(s)?;
        ensure(Arc::ptr_eq(&current, &hy), || {
            "current_handle follows with_stream".into()
        })?;
        Ok(Outcome::Pass)
    })
}
