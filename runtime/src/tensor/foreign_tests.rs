//! `from_blob` and `data_ptr`: round trips, the deleter's exactly-once rule, strides, refusals.
//! Miri-clean (`cargo +nightly miri test -p opbox-runtime --no-default-features --lib tensor::`).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{DType, Device, Error, Tensor};

/// A heap buffer given away as a raw pointer, and a deleter that frees it and counts its runs.
fn blob(values: Vec<f32>) -> (*mut f32, usize, Arc<AtomicUsize>, impl FnOnce() + Send) {
    let len = values.len();
    let ptr = Box::into_raw(values.into_boxed_slice()).cast::<f32>();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let addr = ptr as usize;
    let deleter = move || {
        counter.fetch_add(1, Ordering::SeqCst);
        // SAFETY: `addr` is the pointer `Box::into_raw` gave for a boxed slice of `len` f32s,
        // freed only here, once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(addr as *mut f32, len)) });
    };
    (ptr, len, runs, deleter)
}

#[test]
fn cpu_round_trip_shares_memory_and_deletes_once() {
    let (ptr, _, runs, deleter) = blob(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // SAFETY: the buffer holds 6 initialised f32s and lives until the deleter runs.
    let t =
        unsafe { Tensor::from_blob(ptr.cast(), &[2, 3], None, DType::F32, Device::Cpu, deleter) }
            .unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(t.data_ptr(), ptr.cast_const().cast::<c_void>());

    // Zero copy: a write through opbox is in the foreign buffer.
    t.with_slice_mut(|s: &mut [f32]| s[0] = 10.0).unwrap();
    // SAFETY: the buffer is alive (the tensor holds it) and nothing writes it now.
    assert_eq!(unsafe { *ptr }, 10.0);

    // Views and clones keep the memory; only the last one runs the deleter.
    let view = t.transpose(0, 1).unwrap();
    let row = t.narrow(0, 1, 1).unwrap();
    // SAFETY: offset 3 is inside the 6 elements.
    assert_eq!(row.data_ptr(), unsafe { ptr.add(3) }.cast_const().cast());
    let clone = t.clone();
    drop(t);
    drop(clone);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        view.to_vec::<f32>().unwrap(),
        vec![10.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    drop(view);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The last handle goes on another thread: the deleter runs there, once.
    std::thread::spawn(move || drop(row)).join().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn strides_may_be_negative_or_zero() {
    let (ptr, _, runs, deleter) = blob(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // Rows in reverse: element [0, 0] is the buffer's element 3, row stride -3.
    // SAFETY: every element reached (0..6) is inside the buffer.
    let reversed = unsafe {
        Tensor::from_blob(
            ptr.add(3).cast(),
            &[2, 3],
            Some(&[-3, 1]),
            DType::F32,
            Device::Cpu,
            deleter,
        )
    }
    .unwrap();
    assert_eq!(
        reversed.to_vec::<f32>().unwrap(),
        vec![3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
    );
    // SAFETY: as above.
    assert_eq!(
        reversed.data_ptr(),
        unsafe { ptr.add(3) }.cast_const().cast()
    );
    assert!(!reversed.is_contiguous());

    // A broadcast view: stride 0 repeats one row, sharing the same buffer.
    let (ptr2, _, runs2, deleter2) = blob(vec![7.0, 8.0]);
    // SAFETY: the two elements of the row are inside the buffer.
    let rows = unsafe {
        Tensor::from_blob(
            ptr2.cast(),
            &[3, 2],
            Some(&[0, 1]),
            DType::F32,
            Device::Cpu,
            deleter2,
        )
    }
    .unwrap();
    assert_eq!(
        rows.to_vec::<f32>().unwrap(),
        vec![7.0, 8.0, 7.0, 8.0, 7.0, 8.0]
    );
    drop((reversed, rows));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(runs2.load(Ordering::SeqCst), 1);
}

#[test]
fn refused_memory_still_runs_the_deleter_once() {
    type Case = (
        &'static str,
        *mut c_void,
        Vec<usize>,
        Option<Vec<isize>>,
        Device,
    );
    let (ptr, _, runs, free) = blob(vec![0.0; 4]);
    let cases: Vec<Case> = vec![
        (
            "dimensions but strides",
            ptr.cast(),
            vec![2, 2],
            Some(vec![1]),
            Device::Cpu,
        ),
        ("null", std::ptr::null_mut(), vec![2], None, Device::Cpu),
        (
            "not aligned for f32",
            ptr.cast::<u8>().wrapping_add(1).cast(),
            vec![1],
            None,
            Device::Cpu,
        ),
        (
            "meta device holds no memory",
            ptr.cast(),
            vec![2],
            None,
            Device::Meta,
        ),
    ];
    for (want, p, shape, strides, device) in cases {
        let counter = runs.clone();
        // SAFETY: every case is refused before the pointer is used; the deleter frees nothing.
        let err = unsafe {
            Tensor::from_blob(
                p,
                &shape,
                strides.as_deref(),
                DType::F32,
                device,
                move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                },
            )
        }
        .unwrap_err();
        assert!(err.to_string().contains(want), "{want}: {err}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        4,
        "each refusal ran its deleter once"
    );
    free();
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

#[test]
fn empty_blob_may_be_null() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    // SAFETY: no elements, so the null pointer is never read.
    let t = unsafe {
        Tensor::from_blob(
            std::ptr::null_mut(),
            &[0, 3],
            None,
            DType::I64,
            Device::Cpu,
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
            },
        )
    }
    .unwrap();
    assert_eq!(t.numel(), 0);
    assert_eq!(t.to_vec::<i64>().unwrap(), Vec::<i64>::new());
    drop(t);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn cuda_blob_without_a_gpu_is_refused_and_deleted() {
    #[cfg(feature = "cuda")]
    if crate::backend::cuda::device_count().is_ok_and(|n| n > 0) {
        // With a GPU the address would be taken at its word; tests/dlpack.rs covers real ones.
        println!("skipped: a GPU is present (tests/dlpack.rs tests real device memory)");
        return;
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    // SAFETY: refused before the address is used.
    let err = unsafe {
        Tensor::from_blob(
            0x1000 as *mut c_void,
            &[4],
            None,
            DType::F32,
            Device::Cuda(0),
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
            },
        )
    }
    .unwrap_err();
    assert!(
        matches!(err, Error::NoCuda { .. } | Error::Unsupported(_)),
        "{err}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn data_ptr_of_every_kind_of_tensor() {
    let owned = Tensor::zeros(&[4, 4], DType::F64, Device::Cpu).unwrap();
    let base = owned.data_ptr() as usize;
    assert_eq!(base % crate::tensor::CPU_ALIGN, 0);
    let view = owned.narrow(0, 1, 2).unwrap().transpose(0, 1).unwrap();
    assert_eq!(view.data_ptr() as usize, base + 4 * 8);
    assert_eq!(owned.mutable_data_ptr().unwrap() as usize, base);
    assert!(!owned.is_read_only());
    let meta = Tensor::empty(&[2], DType::F32, Device::Meta).unwrap();
    assert!(meta.data_ptr().is_null());
}
