//! DLPack import and export on cpu: round trips, the deleter's exactly-once rule, flags, the
//! codes from the type table, and refusals. Miri-clean.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::codes::{from_dl_dtype, to_dl_dtype};
use super::ffi::*;
use super::{DlpackStream, FromDlpack, ToDlpack};
use crate::tensor::live_tensors_on_this_thread;
use crate::{DType, Device, Error, Tensor};

/// A producer's tensor, as another library would hand it over: the managed tensor first, then
/// what it points at. Its deleter frees it all and counts its runs.
#[repr(C)]
struct Producer {
    managed: DLManagedTensorVersioned,
    data: Vec<f32>,
    dims: Vec<i64>,
    runs: Arc<AtomicUsize>,
}

unsafe extern "C" fn producer_delete(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `m` is the first field of a leaked `Box<Producer>` (see `produce`), freed once.
    let p = unsafe { Box::from_raw(m.cast::<Producer>()) };
    p.runs.fetch_add(1, Ordering::SeqCst);
}

/// A managed f32 tensor of `data` with `shape` (and `strides`, or null for row-major).
fn produce(
    data: Vec<f32>,
    shape: &[i64],
    strides: Option<&[i64]>,
    edit: impl FnOnce(&mut DLManagedTensorVersioned),
) -> (*mut DLManagedTensorVersioned, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut dims: Vec<i64> = shape.to_vec();
    dims.extend(strides.unwrap_or(&[]));
    let mut p = Box::new(Producer {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 3 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_delete),
            flags: 0,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim: shape.len() as i32,
                dtype: DLDataType {
                    code: 2,
                    bits: 32,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        data,
        dims,
        runs: runs.clone(),
    });
    p.managed.dl_tensor.data = p.data.as_mut_ptr().cast::<c_void>();
    p.managed.dl_tensor.shape = p.dims.as_mut_ptr();
    if strides.is_some() {
        // SAFETY: `dims` holds the shape then as many strides.
        p.managed.dl_tensor.strides = unsafe { p.dims.as_mut_ptr().add(shape.len()) };
    }
    edit(&mut p.managed);
    (Box::into_raw(p).cast(), runs)
}

#[test]
fn import_shares_memory_and_runs_the_deleter_once() {
    let before = live_tensors_on_this_thread();
    let (m, runs) = produce(
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        &[2, 3],
        Some(&[3, 1]),
        |_| {},
    );
    // SAFETY: the producer's pointers are valid until its deleter runs.
    let data = unsafe { (*m).dl_tensor.data };
    // SAFETY: a live managed tensor, handed over.
    let t = unsafe { Tensor::from_dlpack(m) }.unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.dtype(), DType::F32);
    assert_eq!(t.data_ptr(), data.cast_const(), "zero copy");
    let col = t.narrow(1, 1, 1).unwrap();
    t.fill_(9.0).unwrap();
    drop(t);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a view still holds the memory"
    );
    assert_eq!(col.to_vec::<f32>().unwrap(), vec![9.0, 9.0]);
    drop(col);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(live_tensors_on_this_thread(), before);
}

#[test]
fn round_trip_through_export_and_import() {
    let a = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
    let at = a.transpose(0, 1).unwrap();
    let m = at.to_dlpack().unwrap();
    // SAFETY: `m` is live until its deleter runs; opbox's export lays it out as ffi.rs says.
    let (version, flags, dl) = unsafe { ((*m).version, (*m).flags, (*m).dl_tensor) };
    assert_eq!(
        version,
        DLPackVersion {
            major: 1,
            minor: DLPACK_MINOR_VERSION
        }
    );
    assert_eq!(flags, 0);
    assert_eq!(
        dl.device,
        DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0
        }
    );
    assert_eq!(
        dl.dtype,
        DLDataType {
            code: 2,
            bits: 32,
            lanes: 1
        }
    );
    assert_eq!(dl.ndim, 2);
    // SAFETY: the export's shape and strides hold ndim values each.
    let (shape, strides) = unsafe {
        (
            std::slice::from_raw_parts(dl.shape, 2).to_vec(),
            std::slice::from_raw_parts(dl.strides, 2).to_vec(),
        )
    };
    assert_eq!((shape, strides), (vec![3, 2], vec![1, 3]));
    assert_eq!(dl.data.cast_const(), a.data_ptr());
    assert_eq!(
        a.ref_count(),
        1,
        "the export holds the view, which holds the storage"
    );

    // SAFETY: handing the export back to opbox as a foreign producer's tensor.
    let back = unsafe { Tensor::from_dlpack(m) }.unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), at.to_vec::<f32>().unwrap());
    assert_eq!(back.data_ptr(), a.data_ptr(), "zero copy both ways");
    let view = at.clone();
    drop((at, back));
    // The import's drop ran the export's deleter, which dropped its handle: only `view` is left.
    assert_eq!(view.ref_count(), 1);
}

#[test]
fn every_dtype_maps_through_the_type_table() {
    for d in DType::ALL {
        let dl = to_dl_dtype(d);
        assert_eq!(dl.lanes, 1);
        assert_eq!((dl.code, dl.bits), d.elem().dlpack());
        assert_eq!(dl.bits as usize, d.size() * 8, "{d}");
        assert_eq!(from_dl_dtype(dl).unwrap(), d);
    }
    assert_eq!(
        to_dl_dtype(DType::BF16),
        DLDataType {
            code: 4,
            bits: 16,
            lanes: 1
        }
    );
    assert_eq!(
        to_dl_dtype(DType::Bool),
        DLDataType {
            code: 6,
            bits: 8,
            lanes: 1
        }
    );
}

#[test]
fn refuses_what_opbox_cannot_hold_and_still_deletes() {
    type Edit = fn(&mut DLManagedTensorVersioned);
    let cases: [(&str, Edit); 7] = [
        ("vector type (4 lanes)", |m| m.dl_tensor.dtype.lanes = 4),
        (
            "bits 8, lanes 1} has no opbox dtype: of this kind opbox holds f32 (32 bits)",
            |m| m.dl_tensor.dtype.bits = 8,
        ),
        ("kDLFloat8_e3m4", |m| m.dl_tensor.dtype.code = 7),
        ("kDLFloat4_e2m1fn", |m| {
            m.dl_tensor.dtype = DLDataType {
                code: 17,
                bits: 4,
                lanes: 1,
            }
        }),
        ("device type 4 (kDLOpenCL)", |m| {
            m.dl_tensor.device.device_type = DLDeviceType::OPENCL
        }),
        ("device type 99 (unknown to DLPack 1.x)", |m| {
            m.dl_tensor.device.device_type = DLDeviceType(99)
        }),
        ("DLPack 2.0, but opbox reads major version 1", |m| {
            m.version = DLPackVersion { major: 2, minor: 0 }
        }),
    ];
    for (want, edit) in cases {
        let (m, runs) = produce(vec![0.0; 4], &[4], Some(&[1]), edit);
        // SAFETY: a live managed tensor, handed over.
        let err = unsafe { Tensor::from_dlpack(m) }.unwrap_err();
        assert!(err.to_string().contains(want), "want {want:?} in: {err}");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "{want}: the deleter ran once"
        );
    }
    let (m, runs) = produce(vec![0.0; 4], &[4], Some(&[1]), |m| m.dl_tensor.ndim = -1);
    // SAFETY: as above.
    let err = unsafe { Tensor::from_dlpack(m) }.unwrap_err();
    assert!(err.to_string().contains("ndim is -1"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // SAFETY: null is refused before it is read.
    assert!(unsafe { Tensor::from_dlpack(std::ptr::null_mut()) }.is_err());
}

#[test]
fn read_only_flag_is_honoured_both_ways() {
    let (m, runs) = produce(vec![1.0, 2.0], &[2], Some(&[1]), |m| {
        m.flags = DLPACK_FLAG_BITMASK_READ_ONLY
    });
    // SAFETY: a live managed tensor, handed over.
    let t = unsafe { Tensor::from_dlpack(m) }.unwrap();
    assert!(t.is_read_only());
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    for err in [
        t.fill_(0.0).unwrap_err(),
        t.with_slice_mut(|_: &mut [f32]| ()).unwrap_err(),
        t.copy_from(&Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap())
            .unwrap_err(),
        t.mutable_data_ptr().unwrap_err(),
    ] {
        assert!(err.to_string().contains("read-only"), "{err}");
    }
    // Re-exported, it stays read-only.
    let out = t.to_dlpack().unwrap();
    // SAFETY: live until its deleter runs, which is called once here.
    unsafe {
        assert_eq!(
            (*out).flags & DLPACK_FLAG_BITMASK_READ_ONLY,
            DLPACK_FLAG_BITMASK_READ_ONLY
        );
        ((*out).deleter.unwrap())(out);
    }
    drop(t);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn copy_requests_copy_and_flag_it() {
    let (m, runs) = produce(vec![1.0, 2.0, 3.0], &[3], None, |_| {});
    // SAFETY: the pointer is read before the handover.
    let data = unsafe { (*m).dl_tensor.data };
    let opts = FromDlpack {
        copy: Some(true),
        producer_stream: None,
    };
    // SAFETY: a live managed tensor, handed over.
    let t = unsafe { Tensor::from_dlpack_with(m, &opts) }.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the producer is released once copied"
    );
    assert_ne!(t.data_ptr(), data.cast_const());
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);

    let out = t
        .to_dlpack_with(&ToDlpack {
            copy: Some(true),
            stream: None,
        })
        .unwrap();
    // SAFETY: live until its deleter runs, which is called once here.
    unsafe {
        assert_eq!((*out).flags, DLPACK_FLAG_BITMASK_IS_COPIED);
        assert_ne!((*out).dl_tensor.data.cast_const(), t.data_ptr());
        ((*out).deleter.unwrap())(out);
    }
    assert_eq!(t.ref_count(), 1);
}

#[test]
fn byte_offset_and_null_strides_are_read() {
    // byte_offset 8 skips two f32s; null strides mean row-major.
    let (m, runs) = produce(vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0], &[2, 2], None, |m| {
        m.dl_tensor.byte_offset = 8
    });
    // SAFETY: a live managed tensor, handed over.
    let t = unsafe { Tensor::from_dlpack(m) }.unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert!(t.is_contiguous());
    drop(t);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[repr(C)]
struct LegacyProducer {
    managed: DLManagedTensor,
    data: Vec<i64>,
    shape: Vec<i64>,
    runs: Arc<AtomicUsize>,
}

unsafe extern "C" fn legacy_delete(m: *mut DLManagedTensor) {
    // SAFETY: `m` is the first field of a leaked `Box<LegacyProducer>`, freed once.
    let p = unsafe { Box::from_raw(m.cast::<LegacyProducer>()) };
    p.runs.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn legacy_managed_tensor_imports() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut p = Box::new(LegacyProducer {
        managed: DLManagedTensor {
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim: 1,
                dtype: DLDataType {
                    code: 0,
                    bits: 64,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(legacy_delete),
        },
        data: vec![10, 20, 30],
        shape: vec![3],
        runs: runs.clone(),
    });
    p.managed.dl_tensor.data = p.data.as_mut_ptr().cast();
    p.managed.dl_tensor.shape = p.shape.as_mut_ptr();
    let m = Box::into_raw(p).cast::<DLManagedTensor>();
    // SAFETY: `data` and `shape` are heap buffers the box owns, alive until the deleter runs.
    let t = unsafe { Tensor::from_dlpack_legacy(m) }.unwrap();
    assert_eq!(t.dtype(), DType::I64);
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![10, 20, 30]);
    assert!(!t.is_read_only());
    drop(t);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn meta_has_no_dlpack_form_and_streams_parse_as_the_spec_says() {
    let meta = Tensor::empty(&[2], DType::F32, Device::Meta).unwrap();
    assert!(matches!(meta.to_dlpack(), Err(Error::Unsupported(m)) if m.contains("meta")));
    assert_eq!(
        DlpackStream::from_arg(None).unwrap(),
        DlpackStream::LegacyDefault
    );
    assert_eq!(
        DlpackStream::from_arg(Some(1)).unwrap(),
        DlpackStream::LegacyDefault
    );
    assert_eq!(
        DlpackStream::from_arg(Some(2)).unwrap(),
        DlpackStream::PerThreadDefault
    );
    assert_eq!(
        DlpackStream::from_arg(Some(-1)).unwrap(),
        DlpackStream::NoSync
    );
    assert_eq!(
        DlpackStream::from_arg(Some(0x5000)).unwrap(),
        DlpackStream::Handle(0x5000)
    );
    assert!(DlpackStream::from_arg(Some(0))
        .unwrap_err()
        .to_string()
        .contains("disallowed"));
    assert!(DlpackStream::from_arg(Some(-7)).is_err());
}

#[test]
fn empty_tensor_exports_a_null_data_pointer() {
    let e = Tensor::zeros(&[0, 4], DType::F32, Device::Cpu).unwrap();
    let m = e.to_dlpack().unwrap();
    // SAFETY: live until its deleter runs; handed back to opbox, which runs it.
    let back = unsafe {
        assert!((*m).dl_tensor.data.is_null());
        Tensor::from_dlpack(m)
    }
    .unwrap();
    assert_eq!(back.shape(), &[0, 4]);
    drop(back);
    assert_eq!(e.ref_count(), 1);
}
