//! CUDA tensor storage: uploads, downloads, device-to-device copies, and a kernel launched on
//! tensors' device pointers. Skipped, with the reason, without a GPU.

use opbox_runtime::backend::cuda::cudarc::driver::{LaunchConfig, PushKernelArg};
use opbox_runtime::backend::cuda::device;
use opbox_runtime::{DType, Device, Tensor};

use crate::gpu::AXPBY_HANDLE;
use crate::support::*;

pub const TESTS: &[Test] = &[
    ("tensors::f32_round_trip_through_the_gpu", round_trip),
    (
        "tensors::zeros_full_views_and_device_to_device_copies",
        zeros_views_copies,
    ),
    (
        "tensors::axpby_launched_on_tensor_pointers",
        launch_on_tensors,
    ),
];

const GPU: Device = Device::Cuda(0);

fn s<T>(r: opbox_runtime::Result<T>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// Like `with_gpu`, but a test that needs no kernel does not need NVRTC either.
fn gpu_only(f: impl FnOnce() -> TestResult) -> TestResult {
    match opbox_runtime::backend::cuda::device_count() {
        Err(opbox_runtime::Error::NoCuda { reason }) => {
            Ok(Outcome::Skip(format!("no GPU ({reason})")))
        }
        Err(e) => Err(e.to_string()),
        Ok(0) => Ok(Outcome::Skip(
            "no GPU (the driver reports 0 devices)".into(),
        )),
        Ok(_) => f(),
    }
}

fn round_trip() -> TestResult {
    gpu_only(|| {
        let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 7.0).collect();
        let cpu = s(Tensor::from_vec(data.clone(), &[10, 100]))?;
        let gpu = s(cpu.to(GPU))?;
        ensure(gpu.device() == GPU, || format!("on {}", gpu.device()))?;
        ensure(gpu.shape() == [10, 100], || {
            format!("shape {:?}", gpu.shape())
        })?;
        ensure(s(gpu.to_vec::<f32>())? == data, || "to_vec differs".into())?;
        let back = s(gpu.to(Device::Cpu))?;
        ensure(back.device() == Device::Cpu, || "not on cpu".into())?;
        ensure(s(back.to_vec::<f32>())? == data, || {
            "to(cpu) differs".into()
        })?;
        ensure(s(gpu.to(GPU))?.ptr_eq(&gpu), || {
            "to(same device) copied".into()
        })?;
        // Host access is an error, never a panic.
        ensure(gpu.with_slice::<f32, _>(|_| ()).is_err(), || {
            "with_slice on a cuda tensor succeeded".into()
        })?;
        let empty = s(Tensor::from_vec(Vec::<f32>::new(), &[0, 3]))?;
        ensure(s(s(empty.to(GPU))?.to_vec::<f32>())?.is_empty(), || {
            "empty round trip".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn zeros_views_copies() -> TestResult {
    gpu_only(|| {
        let z = s(Tensor::zeros(&[4, 5], DType::I32, GPU))?;
        ensure(s(z.to_vec::<i32>())? == vec![0; 20], || "zeros".into())?;
        let f = s(Tensor::full(&[3], 2.5, DType::F64, GPU))?;
        ensure(s(f.to_vec::<f64>())? == vec![2.5; 3], || "full".into())?;

        let data: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let cpu = s(Tensor::from_vec(data, &[3, 4]))?;
        let gpu = s(cpu.to(GPU))?;
        // A strided view downloads in index order, like the cpu one.
        let want = s(s(cpu.transpose(0, 1))?.to_vec::<f32>())?;
        let t = s(gpu.transpose(0, 1))?;
        ensure(s(t.to_vec::<f32>())? == want, || "transposed to_vec".into())?;
        let packed = s(t.contiguous())?;
        ensure(packed.device() == GPU && packed.is_contiguous(), || {
            "contiguous left the device".into()
        })?;
        ensure(s(packed.to_vec::<f32>())? == want, || "contiguous".into())?;
        let row = s(gpu.narrow(0, 1, 1))?;
        ensure(s(row.to_vec::<f32>())? == vec![4.0, 5.0, 6.0, 7.0], || {
            "narrow".into()
        })?;
        ensure(
            s(s(gpu.narrow(1, 2, 1))?.narrow(0, 2, 1))?.item::<f32>() == Ok(10.0),
            || "item".into(),
        )?;

        // Device to device.
        let dst = s(Tensor::empty(&[3, 4], DType::F32, GPU))?;
        s(dst.copy_from(&gpu))?;
        ensure(!dst.same_storage(&gpu), || "copy shares storage".into())?;
        ensure(s(dst.to_vec::<f32>())? == s(cpu.to_vec::<f32>())?, || {
            "dtod".into()
        })?;
        s(dst.fill_(1.0))?;
        ensure(s(dst.to_vec::<f32>())? == vec![1.0; 12], || "fill_".into())?;
        ensure(s(gpu.to_vec::<f32>())? == s(cpu.to_vec::<f32>())?, || {
            "fill_ changed the source".into()
        })?;
        // Into a cpu tensor from a cuda one.
        let host = s(Tensor::zeros(&[3, 4], DType::F32, Device::Cpu))?;
        s(host.copy_from(&gpu))?;
        ensure(s(host.to_vec::<f32>())? == s(cpu.to_vec::<f32>())?, || {
            "dtoh".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn launch_on_tensors() -> TestResult {
    with_gpu(|| {
        let n = 4096usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let y: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
        let tx = s(s(Tensor::from_vec(x.clone(), &[n]))?.to(GPU))?;
        let ty = s(s(Tensor::from_vec(y.clone(), &[n]))?.to(GPU))?;
        let out = s(Tensor::empty(&[n], DType::F32, GPU))?;
        let (px, bx) = s(tx.cuda_ptr())?;
        let (py, _) = s(ty.cuda_ptr())?;
        let (po, _) = s(out.cuda_ptr())?;
        ensure(bx == n * 4, || format!("cuda_ptr bytes {bx}"))?;
        let k = s(AXPBY_HANDLE.get(0))?;
        let stream = &s(device(0))?.stream;
        let (a, b, len) = (2.0f32, 3.0f32, n as i64);
        let mut launch = stream.launch_builder(&k.function);
        launch.arg(&px).arg(&py).arg(&po).arg(&a).arg(&b).arg(&len);
        // SAFETY: (const float*, const float*, float*, float, float, long long), passing device
        // addresses as u64 by value; each tensor holds n f32s and stays alive past the sync
        // that to_vec's download does on the same stream.
        unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }
            .map_err(|e| e.to_string())?;
        let got = s(out.to_vec::<f32>())?;
        for i in [0, 1, n / 2, n - 1] {
            let want = a * x[i] + b * y[i];
            ensure(got[i] == want, || {
                format!("out[{i}] = {} != {want}", got[i])
            })?;
        }
        Ok(Outcome::Pass)
    })
}
