//! Unit tests of the tensor module. Small shapes and few iterations, so they also run under miri.

use std::ffi::c_void;

use half::{bf16, f16};

use super::*;
use crate::{Error, Scalar};

/// A contiguous f32 tensor holding 0, 1, 2, ... in `shape`.
fn arange(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

// ---- DType ----

#[test]
fn dtype_size_name_code() {
    let table = [
        (DType::F32, 4, "f32", 6),
        (DType::F64, 8, "f64", 7),
        (DType::F16, 2, "f16", 5),
        (DType::BF16, 2, "bf16", 15),
        (DType::I32, 4, "i32", 3),
        (DType::I64, 8, "i64", 4),
        (DType::U32, 4, "u32", 28),
        (DType::U64, 8, "u64", 29),
        (DType::U8, 1, "u8", 0),
        (DType::I8, 1, "i8", 1),
        (DType::Bool, 1, "bool", 11),
        (DType::I16, 2, "i16", 2),
        (DType::U16, 2, "u16", 27),
        (DType::F8E4M3, 1, "F8E4M3", 24),
        (DType::F8E5M2, 1, "F8E5M2", 23),
        (DType::Complex32, 8, "Complex32", 9),
        (DType::Complex64, 16, "Complex64", 10),
    ];
    for (d, size, name, code) in table {
        assert_eq!(d.size(), size);
        assert_eq!(d.name(), name);
        assert_eq!(d.to_string(), name);
        assert_eq!(d.code(), code, "codes are stable: {d}");
        assert_eq!(DType::from_code(code), Some(d));
        assert_eq!(name.parse::<DType>().unwrap(), d);
    }
    assert_eq!(DType::ALL.len(), table.len());
    // PyTorch's codes that opbox has no dtype for (complex, quantized, the fnuz float8s, ...).
    for bad in [8, 12, 16, 25, 26, 30, u32::MAX] {
        assert_eq!(DType::from_code(bad), None, "code {bad}");
    }
    assert!(DType::BF16.is_floating_point() && !DType::Bool.is_floating_point());
    let err = "F32".parse::<DType>().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("'F32'") && m.contains("u64, u8, i8, bool, i16, u16")),
        "{err}"
    );
    assert!(!DType::U64.is_floating_point() && !DType::I8.is_floating_point());
}

/// Every kernel element type is a dtype and back, in the same order, with the same size and
/// name: an `In<[T]>` of any element can be given a tensor.
#[test]
fn dtypes_are_the_kernel_element_types() {
    use opbox_codegen::cuda::ElemType;
    assert_eq!(DType::ALL.len(), ElemType::ALL.len());
    for (d, e) in DType::ALL.into_iter().zip(ElemType::ALL) {
        assert_eq!(d.elem(), e);
        assert_eq!(DType::from_elem(e), d);
        assert_eq!((d.size(), d.name()), (e.size(), e.rust_name()));
    }
}

// ---- Device ----

#[test]
fn device_display_parse_bits() {
    for (d, s) in [
        (Device::Cpu, "cpu"),
        (Device::Cuda(0), "cuda:0"),
        (Device::Cuda(7), "cuda:7"),
        (Device::Meta, "meta"),
    ] {
        assert_eq!(d.to_string(), s);
        assert_eq!(s.parse::<Device>().unwrap(), d);
        assert_eq!(Device::from_bits(d.to_bits()), Some(d));
    }
    assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
    for bad in [
        "",
        "gpu",
        "CPU",
        "cuda:",
        "cuda:x",
        "cuda:-1",
        "cuda:+1",
        "cuda:1 ",
        "cuda:99999999999",
        "meta:0",
    ] {
        let err = bad.parse::<Device>().unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains(&format!("'{bad}'"))),
            "{err}"
        );
    }
    assert_eq!(Device::Cpu.to_bits(), 0);
    assert_eq!(Device::Cuda(3).to_bits(), (1 << 32) | 3);
    assert_eq!(Device::Meta.to_bits(), 9 << 32);
    assert_eq!(
        Device::from_bits(u64::from(u32::MAX) | (1 << 32)),
        Some(Device::Cuda(u32::MAX))
    );
    for bad in [1, 2 << 32, (9 << 32) | 1, u64::MAX] {
        assert_eq!(Device::from_bits(bad), None, "bits {bad:#x}");
    }
    assert!(Device::Cpu.is_cpu() && !Device::Meta.is_cpu() && !Device::Cuda(0).is_cpu());
    assert!(Device::Cuda(1).is_cuda() && Device::Meta.is_meta());
}

// ---- Element ----

#[test]
fn element_dtypes_and_scalar_conversions() {
    assert_eq!(f32::DTYPE, DType::F32);
    assert_eq!(f64::DTYPE, DType::F64);
    assert_eq!(f16::DTYPE, DType::F16);
    assert_eq!(bf16::DTYPE, DType::BF16);
    assert_eq!(i32::DTYPE, DType::I32);
    assert_eq!(i64::DTYPE, DType::I64);
    assert_eq!(u32::DTYPE, DType::U32);
    assert_eq!(u64::DTYPE, DType::U64);
    assert_eq!(u8::DTYPE, DType::U8);
    assert_eq!(i8::DTYPE, DType::I8);
    assert_eq!(bool::DTYPE, DType::Bool);

    assert_eq!(i32::from_scalar(Scalar::Float(2.7)).unwrap(), 2);
    assert_eq!(i32::from_scalar(Scalar::Float(-2.7)).unwrap(), -2);
    assert_eq!(
        i64::from_scalar(Scalar::Float(i64::MIN as f64)).unwrap(),
        i64::MIN
    );
    assert_eq!(u8::from_scalar(Scalar::Int(255)).unwrap(), 255);
    assert_eq!(u8::from_scalar(Scalar::Bool(true)).unwrap(), 1);
    assert!(bool::from_scalar(Scalar::Int(2)).unwrap());
    assert!(!bool::from_scalar(Scalar::Float(0.0)).unwrap());
    assert_eq!(
        f16::from_scalar(Scalar::Float(1.5)).unwrap(),
        f16::from_f32(1.5)
    );
    assert_eq!(
        bf16::from_scalar(Scalar::Int(3)).unwrap(),
        bf16::from_f32(3.0)
    );
    assert!(f32::from_scalar(Scalar::Float(f64::INFINITY))
        .unwrap()
        .is_infinite());
    assert!(f32::from_scalar(Scalar::Float(f64::NAN)).unwrap().is_nan());
    for (dtype, value) in [
        (DType::U8, Scalar::Int(300)),
        (DType::U8, Scalar::Int(-1)),
        (DType::I32, Scalar::Int(i64::MAX)),
        (DType::I32, Scalar::Float(f64::NAN)),
        (DType::I64, Scalar::Float(1e20)),
        (DType::I64, Scalar::Float(f64::INFINITY)),
        (DType::F32, Scalar::Float(1e300)),
        (DType::F16, Scalar::Float(70000.0)),
        (DType::BF16, Scalar::Float(1e300)),
        (DType::I8, Scalar::Int(128)),
        (DType::I8, Scalar::Float(-129.0)),
        (DType::U32, Scalar::Int(1 << 32)),
        (DType::U64, Scalar::Int(-1)),
        (DType::U64, Scalar::Float(-1.0)),
        (DType::U64, Scalar::Float(18446744073709551616.0)),
    ] {
        let err = with_dtype!(dtype, T => T::from_scalar(value).map(|_| ())).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains(&value.to_string()) && m.contains(dtype.name())),
            "{err}"
        );
    }
    assert_eq!(2.5f32.to_scalar(), Scalar::Float(2.5));
    assert_eq!(7u8.to_scalar(), Scalar::Int(7));
    assert_eq!((-7i32).to_scalar(), Scalar::Int(-7));
    assert_eq!(true.to_scalar(), Scalar::Bool(true));

    assert_eq!(i8::from_scalar(Scalar::Int(-128)).unwrap(), -128);
    assert_eq!(i8::from_scalar(Scalar::Float(-2.7)).unwrap(), -2);
    assert_eq!(i8::from_scalar(Scalar::Bool(true)).unwrap(), 1);
    assert_eq!(
        u32::from_scalar(Scalar::Int(u32::MAX.into())).unwrap(),
        u32::MAX
    );
    assert_eq!(
        u64::from_scalar(Scalar::Int(i64::MAX)).unwrap(),
        i64::MAX as u64
    );
    // Above i64's range: only a float can carry it, and it converts exactly (2^63 and 2^64 - 2048).
    assert_eq!(
        u64::from_scalar(Scalar::Float(9223372036854775808.0)).unwrap(),
        1 << 63
    );
    assert_eq!(
        u64::from_scalar(Scalar::Float(18446744073709549568.0)).unwrap(),
        u64::MAX - 2047
    );
    assert_eq!((-5i8).to_scalar(), Scalar::Int(-5));
    assert_eq!(u32::MAX.to_scalar(), Scalar::Int(u32::MAX.into()));
    assert_eq!(41u64.to_scalar(), Scalar::Int(41));
    // No Scalar::Int holds it; the nearest float keeps its magnitude.
    assert_eq!(u64::MAX.to_scalar(), Scalar::Float(u64::MAX as f64));
}

/// The dtypes added for the kernel element types keep their full ranges through a tensor.
#[test]
fn u32_u64_i8_round_trip() {
    let u64s = vec![0u64, 11, 29, 1 << 63, u64::MAX];
    let t = Tensor::from_vec(u64s.clone(), &[5]).unwrap();
    assert_eq!((t.dtype(), t.nbytes()), (DType::U64, 40));
    assert_eq!(t.to_vec::<u64>().unwrap(), u64s);
    assert_eq!(t.narrow(0, 4, 1).unwrap().item::<u64>().unwrap(), u64::MAX);
    assert_eq!(
        t.narrow(0, 3, 1).unwrap().item_scalar().unwrap(),
        Scalar::Float(9223372036854775808.0)
    );
    assert!(t.to_vec::<i64>().is_err(), "u64 read back as i64");

    let u32s = vec![u32::MAX, 0, 7];
    let t = Tensor::from_vec(u32s.clone(), &[3]).unwrap();
    assert_eq!((t.dtype(), t.nbytes()), (DType::U32, 12));
    assert_eq!(t.to_vec::<u32>().unwrap(), u32s);
    t.fill_(4_000_000_000i64).unwrap();
    assert_eq!(t.to_vec::<u32>().unwrap(), vec![4_000_000_000; 3]);

    let i8s = vec![-128i8, -1, 0, 127];
    let t = Tensor::from_vec(i8s.clone(), &[2, 2]).unwrap();
    assert_eq!((t.dtype(), t.nbytes()), (DType::I8, 4));
    assert_eq!(t.to_vec::<i8>().unwrap(), i8s);
    let tt = t.transpose(0, 1).unwrap().contiguous().unwrap();
    assert_eq!(tt.to_vec::<i8>().unwrap(), vec![-128, 0, -1, 127]);
    let dbg = format!("{t:?}");
    assert!(
        dbg.contains("dtype=i8") && dbg.contains("[-128, -1, 0, 127]"),
        "{dbg}"
    );
    assert!(Tensor::full(&[1], 128i64, DType::I8, Device::Cpu).is_err());
}

// ---- constructors and metadata ----

#[test]
fn empty_and_metadata() {
    let t = Tensor::empty(&[2, 3], DType::F64, Device::Cpu).unwrap();
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.strides(), &[3, 1]);
    assert_eq!(t.offset(), 0);
    assert_eq!(t.dtype(), DType::F64);
    assert_eq!(t.device(), Device::Cpu);
    assert_eq!(t.dim(), 2);
    assert_eq!(t.numel(), 6);
    assert_eq!(t.nbytes(), 48);
    assert!(t.is_contiguous());

    let s = Tensor::empty(&[], DType::U8, Device::Cpu).unwrap();
    assert_eq!((s.dim(), s.numel(), s.nbytes()), (0, 1, 1));
    assert!(s.strides().is_empty());

    let z = Tensor::empty(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!((z.numel(), z.nbytes()), (0, 0));
    assert!(z.is_contiguous());
    assert_eq!(f32s(&z), Vec::<f32>::new());
    assert_eq!(z.with_slice(|s: &[f32]| s.len()).unwrap(), 0);
}

#[test]
fn zeros_in_every_dtype() {
    for d in DType::ALL {
        let t = Tensor::zeros(&[2, 2], d, Device::Cpu).unwrap();
        assert_eq!(t.dtype(), d);
        let all_zero = with_dtype!(d, T => t.to_vec::<T>().unwrap().iter().all(|v| v.to_scalar().to_f64() == 0.0));
        assert!(all_zero, "{d}");
    }
    let t = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    let like = arange(&[2, 3])
        .transpose(0, 1)
        .unwrap()
        .zeros_like()
        .unwrap();
    assert_eq!(f32s(&t), vec![0.0; 3]);
    assert_eq!(
        (like.shape(), like.strides()),
        (&[3usize, 2][..], &[2isize, 1][..])
    );
    assert_eq!(f32s(&like), vec![0.0; 6]);
}

#[test]
fn full_and_scalar_tensor() {
    let t = Tensor::full(&[2, 2], 2.5, DType::F32, Device::Cpu).unwrap();
    assert_eq!(f32s(&t), vec![2.5; 4]);
    let t = Tensor::full(&[3], 7i64, DType::I64, Device::Cpu).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![7; 3]);
    let t = Tensor::full(&[2], 3.9, DType::I32, Device::Cpu).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![3; 2]);
    let t = Tensor::full(&[2], true, DType::Bool, Device::Cpu).unwrap();
    assert_eq!(t.to_vec::<bool>().unwrap(), vec![true; 2]);
    let t = Tensor::full(&[2], Scalar::Float(1.5), DType::F16, Device::Cpu).unwrap();
    assert_eq!(t.to_vec::<f16>().unwrap(), vec![f16::from_f32(1.5); 2]);
    let err = Tensor::full(&[2], 300i64, DType::U8, Device::Cpu).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("300") && m.contains("u8")),
        "{err}"
    );

    let s = Tensor::scalar_tensor(4i64, DType::F64, Device::Cpu).unwrap();
    assert_eq!((s.dim(), s.numel()), (0, 1));
    assert_eq!(s.item::<f64>().unwrap(), 4.0);

    let like = arange(&[2]).full_like(-1.0).unwrap();
    assert_eq!(f32s(&like), vec![-1.0; 2]);
}

#[test]
fn from_vec_from_slice_and_like() {
    let t = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[3, 2]).unwrap();
    assert_eq!((t.dtype(), t.shape()), (DType::I32, &[3usize, 2][..]));
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
    let s = Tensor::from_slice(&[1u8, 2], &[2]).unwrap();
    assert_eq!(s.to_vec::<u8>().unwrap(), vec![1, 2]);
    let scalar = Tensor::from_vec(vec![5i64], &[]).unwrap();
    assert_eq!(scalar.item::<i64>().unwrap(), 5);

    let err = Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains('5') && m.contains("[2, 3]") && m.contains('6')),
        "{err}"
    );

    let e = t.empty_like().unwrap();
    assert_eq!(
        (e.shape(), e.dtype(), e.device()),
        (t.shape(), t.dtype(), t.device())
    );
    assert!(!e.same_storage(&t));
}

#[test]
fn numel_and_size_overflow_are_errors() {
    let err = Tensor::empty(&[usize::MAX, 2], DType::F32, Device::Cpu).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("overflow")),
        "{err}"
    );
    let err = Tensor::empty(&[usize::MAX / 4 + 1], DType::F64, Device::Meta).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("isize::MAX")),
        "{err}"
    );
    let err = Tensor::empty(&[isize::MAX as usize / 2 + 1], DType::I32, Device::Cpu).unwrap_err();
    assert!(matches!(&err, Error::Shape(_)), "{err}");
    let err = Tensor::from_vec(vec![1.0f32], &[usize::MAX, 2]).unwrap_err();
    assert!(matches!(err, Error::Shape(_)));
    let err = arange(&[2]).reshape(&[usize::MAX, 3]).unwrap_err();
    assert!(matches!(err, Error::Shape(_)));
}

#[test]
fn cuda_tensors_need_a_gpu_and_never_panic_without_one() {
    // With a GPU this allocates; without one (or without the "cuda" feature) it is an error.
    match Tensor::empty(&[2], DType::F32, Device::Cuda(0)) {
        Ok(t) => assert_eq!(t.device(), Device::Cuda(0)),
        Err(err) => assert!(
            matches!(&err, Error::NoCuda { .. })
                || matches!(&err, Error::Unsupported(m) if m.contains("cuda:0")),
            "{err}"
        ),
    }
    let cpu = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    if let Err(err) = cpu.to(Device::Cuda(0)) {
        assert!(
            matches!(&err, Error::NoCuda { .. } | Error::Unsupported(_)),
            "{err}"
        );
    }
}

// ---- views ----

#[test]
fn transpose_to_vec_and_contiguous() {
    let a = arange(&[2, 3]);
    let t = a.transpose(0, 1).unwrap();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.strides(), &[1, 3]);
    assert!(!t.is_contiguous());
    assert!(t.same_storage(&a) && !t.ptr_eq(&a));
    assert_eq!(f32s(&t), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);

    let c = t.contiguous().unwrap();
    assert!(c.is_contiguous() && !c.same_storage(&a));
    assert_eq!(c.strides(), &[2, 1]);
    assert_eq!(f32s(&c), f32s(&t));
    assert!(a.contiguous().unwrap().ptr_eq(&a));

    assert_eq!(f32s(&t.transpose(1, 0).unwrap()), f32s(&a));
    assert!(a.transpose(1, 1).unwrap().is_contiguous());
    let err = a.transpose(0, 2).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("dim 2") && m.contains("[2, 3]")),
        "{err}"
    );
}

#[test]
fn permute_3d() {
    let a = arange(&[2, 3, 4]);
    let p = a.permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.shape(), &[4, 2, 3]);
    assert_eq!(p.strides(), &[1, 12, 4]);
    let got = f32s(&p);
    let mut want = Vec::new();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                want.push((i * 12 + j * 4 + k) as f32);
            }
        }
    }
    assert_eq!(got, want);
    assert_eq!(f32s(&p.contiguous().unwrap()), want);
    assert_eq!(f32s(&a.permute(&[0, 1, 2]).unwrap()), f32s(&a));

    let err = a.permute(&[0, 1]).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("[0, 1]")),
        "{err}"
    );
    let err = a.permute(&[0, 1, 1]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("more than once")),
        "{err}"
    );
    let err = a.permute(&[0, 1, 3]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("dim 3")),
        "{err}"
    );
}

#[test]
fn narrow_views() {
    let a = arange(&[4, 3]);
    let rows = a.narrow(0, 1, 2).unwrap();
    assert_eq!((rows.shape(), rows.offset()), (&[2usize, 3][..], 3));
    assert!(rows.is_contiguous() && rows.same_storage(&a));
    assert_eq!(f32s(&rows), vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    assert_eq!(
        rows.with_slice(|s: &[f32]| s.to_vec()).unwrap(),
        f32s(&rows)
    );

    let cols = a.narrow(1, 1, 2).unwrap();
    assert!(!cols.is_contiguous());
    assert_eq!(f32s(&cols), vec![1.0, 2.0, 4.0, 5.0, 7.0, 8.0, 10.0, 11.0]);
    assert_eq!(f32s(&cols.narrow(0, 3, 1).unwrap()), vec![10.0, 11.0]);

    let none = a.narrow(0, 4, 0).unwrap();
    assert_eq!((none.numel(), none.shape()), (0, &[0usize, 3][..]));
    assert_eq!(f32s(&none), Vec::<f32>::new());
    none.fill_(1.0).unwrap();

    let err = a.narrow(0, 3, 2).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("start 3") && m.contains("size 4")),
        "{err}"
    );
    let err = a.narrow(1, usize::MAX, 2).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    let err = a.narrow(2, 0, 1).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("dim 2")),
        "{err}"
    );
}

#[test]
fn reshape_views_and_copies() {
    let a = arange(&[2, 3]);
    let r = a.reshape(&[3, 2]).unwrap();
    assert!(r.same_storage(&a));
    assert_eq!(
        (r.shape(), r.strides()),
        (&[3usize, 2][..], &[2isize, 1][..])
    );
    assert_eq!(f32s(&r), f32s(&a));
    assert_eq!(a.reshape(&[6]).unwrap().shape(), &[6]);
    let err = a.reshape(&[4]).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("[2, 3]") && m.contains("[4]")),
        "{err}"
    );

    // Not viewable: a transposed tensor, flattened, is copied.
    let t = a.transpose(0, 1).unwrap();
    let flat = t.reshape(&[6]).unwrap();
    assert!(!flat.same_storage(&a) && flat.is_contiguous());
    assert_eq!(f32s(&flat), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);

    // Viewable although not contiguous: splitting the outer dim of a column slice.
    let b = arange(&[4, 3]).narrow(1, 0, 2).unwrap();
    let v = b.reshape(&[2, 2, 2]).unwrap();
    assert!(v.same_storage(&b));
    assert_eq!(v.strides(), &[6, 3, 1]);
    assert_eq!(f32s(&v), vec![0.0, 1.0, 3.0, 4.0, 6.0, 7.0, 9.0, 10.0]);
    let unit = b.reshape(&[4, 1, 2]).unwrap();
    assert!(unit.same_storage(&b));
    assert_eq!(f32s(&unit), f32s(&b));
    let copied = b.reshape(&[8]).unwrap();
    assert!(!copied.same_storage(&b));
    assert_eq!(f32s(&copied), f32s(&v));

    let s = Tensor::scalar_tensor(3.0, DType::F32, Device::Cpu).unwrap();
    let s11 = s.reshape(&[1, 1]).unwrap();
    assert!(s11.same_storage(&s));
    assert_eq!(s11.reshape(&[]).unwrap().item::<f32>().unwrap(), 3.0);
}

// ---- element access ----

#[test]
fn dtype_mismatch_is_an_error() {
    let a = arange(&[2]);
    let err = a.to_vec::<f64>().unwrap_err();
    assert!(
        matches!(&err, Error::DType { expected, got } if expected.contains("f64") && got.contains("f32")),
        "{err}"
    );
    assert!(matches!(
        a.with_slice(|_: &[i32]| ()),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        a.with_slice_mut(|_: &mut [bool]| ()),
        Err(Error::DType { .. })
    ));
    assert!(matches!(a.item::<u8>(), Err(Error::DType { .. })));
}

#[test]
fn with_slice_needs_contiguous() {
    let t = arange(&[2, 2]).transpose(0, 1).unwrap();
    for err in [
        t.with_slice(|_: &[f32]| ()).unwrap_err(),
        t.with_slice_mut(|_: &mut [f32]| ()).unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains(".contiguous()") && m.contains("[1, 2]")),
            "{err}"
        );
    }
}

#[test]
fn with_slice_mut_writes_are_shared_by_views_and_clones() {
    let a = arange(&[2, 3]);
    let row = a.narrow(0, 1, 1).unwrap();
    row.with_slice_mut(|s: &mut [f32]| s.iter_mut().for_each(|x| *x *= 10.0))
        .unwrap();
    let clone = a.clone();
    assert_eq!(f32s(&clone), vec![0.0, 1.0, 2.0, 30.0, 40.0, 50.0]);
    assert_eq!(
        a.with_slice(|s: &[f32]| s.iter().sum::<f32>()).unwrap(),
        123.0
    );
}

#[test]
fn self_aliasing_is_storage_busy_not_deadlock() {
    let a = arange(&[2, 2]);
    let view = a.transpose(0, 1).unwrap();
    let other = arange(&[2]);
    let inner = a
        .with_slice_mut(|_: &mut [f32]| {
            let read = view.to_vec::<f32>().unwrap_err();
            let write = a.with_slice_mut(|_: &mut [f32]| ()).unwrap_err();
            let debug = format!("{view:?}");
            other.fill_(1.0).unwrap();
            (read, write, debug)
        })
        .unwrap();
    assert!(
        matches!(&inner.0, Error::StorageBusy(m) if m.contains("to_vec")),
        "{}",
        inner.0
    );
    assert!(
        matches!(&inner.1, Error::StorageBusy(m) if m.contains("with_slice_mut")),
        "{}",
        inner.1
    );
    assert!(inner.2.contains("<busy>"), "{}", inner.2);

    // Reads nest; a write inside a read is busy.
    let (nested, fill) = a
        .with_slice(|_: &[f32]| (view.to_vec::<f32>().unwrap(), view.fill_(0.0).unwrap_err()))
        .unwrap();
    assert_eq!(nested, vec![0.0, 2.0, 1.0, 3.0]);
    assert!(matches!(fill, Error::StorageBusy(_)));
    // Everything is released afterwards.
    view.fill_(2.0).unwrap();
    assert_eq!(f32s(&a), vec![2.0; 4]);
}

#[test]
fn copy_from_strided_and_overlapping() {
    let a = arange(&[2, 3]);
    let dst = Tensor::zeros(&[3, 2], DType::F32, Device::Cpu).unwrap();
    dst.copy_from(&a.transpose(0, 1).unwrap()).unwrap();
    assert_eq!(f32s(&dst), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);

    // Into a strided view.
    let b = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    b.transpose(0, 1).unwrap().copy_from(&dst).unwrap();
    assert_eq!(f32s(&b), f32s(&a));

    // Overlapping views of one storage copy as if through a temporary.
    let c = arange(&[5]);
    c.narrow(0, 1, 4)
        .unwrap()
        .copy_from(&c.narrow(0, 0, 4).unwrap())
        .unwrap();
    assert_eq!(f32s(&c), vec![0.0, 0.0, 1.0, 2.0, 3.0]);
    c.copy_from(&c).unwrap();
    assert_eq!(f32s(&c), vec![0.0, 0.0, 1.0, 2.0, 3.0]);

    let err = dst.copy_from(&a).unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("[2, 3]") && m.contains("[3, 2]")),
        "{err}"
    );
    let ints = Tensor::zeros(&[2, 3], DType::I32, Device::Cpu).unwrap();
    let err = ints.copy_from(&a).unwrap_err();
    assert!(
        matches!(&err, Error::DType { expected, got } if expected.contains("i32") && got.contains("f32")),
        "{err}"
    );
    let empty = Tensor::zeros(&[0], DType::F32, Device::Cpu).unwrap();
    empty
        .copy_from(&a.narrow(0, 0, 0).unwrap().reshape(&[0]).unwrap())
        .unwrap();
}

#[test]
fn fill_strided_view() {
    let a = Tensor::zeros(&[3, 2], DType::I64, Device::Cpu).unwrap();
    a.narrow(1, 1, 1).unwrap().fill_(9i64).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![0, 9, 0, 9, 0, 9]);
    a.fill_(Scalar::Float(-2.0)).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![-2; 6]);
    let u = Tensor::zeros(&[2], DType::U8, Device::Cpu).unwrap();
    let err = u.fill_(256i64).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    assert_eq!(u.to_vec::<u8>().unwrap(), vec![0, 0]);
}

#[test]
fn item_and_item_scalar() {
    let a = arange(&[2, 3]);
    let one = a.narrow(0, 1, 1).unwrap().narrow(1, 2, 1).unwrap();
    assert_eq!(one.offset(), 5);
    assert_eq!(one.item::<f32>().unwrap(), 5.0);
    assert_eq!(one.item_scalar().unwrap(), Scalar::Float(5.0));
    let err = a.item::<f32>().unwrap_err();
    assert!(
        matches!(&err, Error::Shape(m) if m.contains("[2, 3]") && m.contains('6')),
        "{err}"
    );
    let b = Tensor::from_vec(vec![true], &[1, 1]).unwrap();
    assert_eq!(b.item_scalar().unwrap(), Scalar::Bool(true));
    let i = Tensor::scalar_tensor(-3i64, DType::I32, Device::Cpu).unwrap();
    assert_eq!(i.item_scalar().unwrap(), Scalar::Int(-3));
}

#[test]
fn bool_round_trips() {
    let b = Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap();
    assert_eq!(b.dtype(), DType::Bool);
    assert_eq!(b.nbytes(), 4);
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, false, false, true]);
    assert_eq!(
        b.transpose(0, 1).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false, true]
    );
    b.with_slice_mut(|s: &mut [bool]| s[1] = true).unwrap();
    assert_eq!(
        b.contiguous().unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false, true]
    );
    let n = Tensor::full(&[3], 5i64, DType::Bool, Device::Cpu).unwrap();
    assert_eq!(n.to_vec::<bool>().unwrap(), vec![true; 3]);
    n.narrow(0, 1, 1).unwrap().fill_(0i64).unwrap();
    assert_eq!(
        n.with_slice(|s: &[bool]| s.to_vec()).unwrap(),
        vec![true, false, true]
    );
}

#[test]
fn half_floats_round_trip() {
    let hs: Vec<f16> = [1.5f32, -2.0, 0.25, 65504.0]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect();
    let h = Tensor::from_vec(hs.clone(), &[2, 2]).unwrap();
    assert_eq!(h.dtype(), DType::F16);
    assert_eq!(h.to_vec::<f16>().unwrap(), hs);
    assert_eq!(
        h.transpose(0, 1)
            .unwrap()
            .contiguous()
            .unwrap()
            .to_vec::<f16>()
            .unwrap(),
        vec![hs[0], hs[2], hs[1], hs[3]]
    );
    assert_eq!(
        h.narrow(0, 1, 1)
            .unwrap()
            .narrow(1, 0, 1)
            .unwrap()
            .item_scalar()
            .unwrap(),
        Scalar::Float(0.25)
    );

    let bs: Vec<bf16> = [1.0f32, -3.5, 1e30]
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    let b = Tensor::from_slice(&bs, &[3]).unwrap();
    assert_eq!(b.dtype(), DType::BF16);
    assert_eq!(b.to_vec::<bf16>().unwrap(), bs);
    b.fill_(0.5).unwrap();
    assert_eq!(b.to_vec::<bf16>().unwrap(), vec![bf16::from_f32(0.5); 3]);
}

#[test]
fn every_dtype_round_trips() {
    for d in DType::ALL {
        with_dtype!(d, T => {
            let vals: Vec<T> = [0i64, 1, 0, 1].iter().map(|&v| T::from_scalar(Scalar::Int(v)).unwrap()).collect();
            let t = Tensor::from_slice(&vals, &[2, 2]).unwrap();
            assert_eq!(t.dtype(), d);
            assert_eq!(t.to_vec::<T>().unwrap(), vals);
            let tt = t.transpose(0, 1).unwrap().contiguous().unwrap();
            assert_eq!(tt.to_vec::<T>().unwrap(), vec![vals[0], vals[2], vals[1], vals[3]]);
        });
    }
}

// ---- meta ----

#[test]
fn meta_tensors_have_no_data() {
    let m = Tensor::empty(&[2, 3], DType::F32, Device::Meta).unwrap();
    assert_eq!((m.device(), m.numel(), m.nbytes()), (Device::Meta, 6, 24));
    let t = m.transpose(0, 1).unwrap();
    assert!(t.same_storage(&m) && !t.is_contiguous());
    let c = t.contiguous().unwrap();
    assert!(c.is_contiguous() && c.device().is_meta() && !c.same_storage(&m));
    assert_eq!(t.reshape(&[6]).unwrap().shape(), &[6]);
    assert_eq!(m.narrow(1, 1, 2).unwrap().shape(), &[2, 2]);
    assert_eq!(m.empty_like().unwrap().device(), Device::Meta);

    let errs = [
        m.to_vec::<f32>().unwrap_err(),
        m.with_slice(|_: &[f32]| ()).unwrap_err(),
        m.with_slice_mut(|_: &mut [f32]| ()).unwrap_err(),
        m.narrow(1, 0, 1)
            .unwrap()
            .narrow(0, 0, 1)
            .unwrap()
            .item::<f32>()
            .unwrap_err(),
        Tensor::zeros(&[2, 3], DType::F32, Device::Cpu)
            .unwrap()
            .copy_from(&m)
            .unwrap_err(),
    ];
    for err in errs {
        assert!(
            matches!(&err, Error::Unsupported(m) if m.contains("meta")),
            "{err}"
        );
    }
    // Filling and copying between meta tensors only check their arguments.
    let f = Tensor::full(&[2], 1.0, DType::F32, Device::Meta).unwrap();
    f.fill_(3.0).unwrap();
    assert!(matches!(
        Tensor::full(&[2], 300i64, DType::U8, Device::Meta),
        Err(Error::InvalidArgument(_))
    ));
    c.copy_from(&t).unwrap();
    let dbg = format!("{m:?}");
    assert!(
        dbg.contains("device=meta") && !dbg.contains("data"),
        "{dbg}"
    );
}

// ---- handles, raw pointers and the live counter ----

#[test]
fn clone_drop_and_live_counts() {
    let before = live_tensors_on_this_thread();
    let a = arange(&[2]);
    assert_eq!(live_tensors_on_this_thread(), before + 1);
    assert!(live_tensors() >= 1);
    let b = a.clone();
    assert_eq!(
        live_tensors_on_this_thread(),
        before + 1,
        "clones are handles, not tensors"
    );
    assert!(a.ptr_eq(&b) && a.same_storage(&b));
    assert_eq!(a.ref_count(), 2);
    let v = a.reshape(&[2]).unwrap();
    assert_eq!(
        live_tensors_on_this_thread(),
        before + 2,
        "a view is a new tensor"
    );
    assert!(!v.ptr_eq(&a) && v.same_storage(&a));
    assert_eq!(a.ref_count(), 2);
    let other = arange(&[2]);
    assert!(!other.same_storage(&a) && !other.ptr_eq(&a));
    drop((v, other));
    drop(b);
    assert_eq!(a.ref_count(), 1);
    assert_eq!(live_tensors_on_this_thread(), before + 1);
    drop(a);
    assert_eq!(live_tensors_on_this_thread(), before);
}

#[test]
fn into_raw_from_raw_borrow_raw() {
    const _: () = assert!(std::mem::size_of::<Tensor>() == std::mem::size_of::<*mut c_void>());
    let before = live_tensors_on_this_thread();
    let a = arange(&[3]);
    let keep = a.clone();
    let slot: *mut c_void = a.into_raw();
    assert!(!slot.is_null());
    assert_eq!(keep.ref_count(), 2, "into_raw keeps its reference");
    {
        // SAFETY: `slot` holds a handle from into_raw that is released only below.
        let borrowed: &Tensor = unsafe { Tensor::borrow_raw(&slot) };
        assert!(borrowed.ptr_eq(&keep));
        assert_eq!(f32s(borrowed), vec![0.0, 1.0, 2.0]);
        let c = borrowed.clone();
        assert_eq!(keep.ref_count(), 3);
        drop(c);
        assert_eq!(keep.ref_count(), 2, "borrowing does not change the count");
    }
    // SAFETY: `slot` came from into_raw and is taken back exactly once.
    let back = unsafe { Tensor::from_raw(slot) };
    assert!(back.ptr_eq(&keep));
    drop(back);
    assert_eq!(keep.ref_count(), 1);
    assert_eq!(live_tensors_on_this_thread(), before + 1);
    drop(keep);
    assert_eq!(live_tensors_on_this_thread(), before);
}

#[test]
fn handles_move_across_threads() {
    let n_threads = if cfg!(miri) { 2 } else { 4 };
    let iters = if cfg!(miri) { 5 } else { 200 };
    let before = live_tensors_on_this_thread();
    let a = arange(&[2, 2]);
    let view = a.transpose(0, 1).unwrap();
    std::thread::scope(|s| {
        for _ in 0..n_threads {
            s.spawn(|| {
                let mut held = Vec::new();
                for i in 0..iters {
                    held.push(a.clone());
                    if i % 3 == 0 {
                        held.push(view.clone());
                        assert_eq!(view.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 1.0, 3.0]);
                    }
                    if i % 2 == 0 {
                        held.pop();
                    }
                }
                drop(held);
                // Moving a handle into another thread and dropping it there.
                let moved = a.clone();
                std::thread::spawn(move || drop(moved)).join().unwrap();
            });
        }
    });
    assert_eq!(a.ref_count(), 1);
    assert_eq!(view.ref_count(), 1);
    drop((a, view));
    assert_eq!(live_tensors_on_this_thread(), before);
}

#[test]
fn concurrent_readers_and_writer_wait_for_each_other() {
    // Issue 16, item 6: 2 x 500 alternating calls, a writer in place and a reader of a view on
    // another thread. Every call succeeds (they wait, as with an RwLock), and no read sees half a
    // write.
    let iters = if cfg!(miri) { 8 } else { 500 };
    let a = Tensor::zeros(&[4], DType::I32, Device::Cpu).unwrap();
    let view = a.narrow(0, 1, 2).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..iters {
                a.with_slice_mut(|x: &mut [i32]| {
                    x[1] = i;
                    std::hint::black_box(&mut *x);
                    x[2] = i;
                })
                .unwrap();
            }
        });
        s.spawn(|| {
            for _ in 0..iters {
                let v = view.to_vec::<i32>().unwrap();
                assert_eq!(v[0], v[1], "a read never sees half a write");
            }
        });
    });
    assert_eq!(view.to_vec::<i32>().unwrap(), vec![iters - 1; 2]);
}

#[test]
fn copies_in_opposite_directions_do_not_deadlock() {
    // a -> b on one thread and b -> a on another take both locks; address order keeps them from
    // waiting for each other forever.
    let iters = if cfg!(miri) { 4 } else { 200 };
    let a = Tensor::full(&[8], 1.0, DType::F32, Device::Cpu).unwrap();
    let b = Tensor::full(&[8], 2.0, DType::F32, Device::Cpu).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..iters {
                b.copy_from(&a).unwrap();
            }
        });
        s.spawn(|| {
            for _ in 0..iters {
                a.copy_from(&b).unwrap();
            }
        });
    });
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
}

// ---- Debug ----

#[test]
fn debug_output() {
    let a = arange(&[2, 3]);
    let s = format!("{a:?}");
    assert_eq!(
        s,
        "Tensor(dtype=f32, shape=[2, 3], device=cpu, data=[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])"
    );
    let t = format!("{:?}", a.transpose(0, 1).unwrap());
    assert!(
        t.contains("strides=[1, 3]") && t.contains("data=[0.0, 3.0, 1.0"),
        "{t}"
    );
    let big = format!("{:?}", arange(&[10]));
    assert!(big.ends_with("7.0, ...])"), "{big}");
    let b = format!("{:?}", Tensor::from_vec(vec![true, false], &[2]).unwrap());
    assert!(
        b.contains("dtype=bool") && b.contains("[True, False]"),
        "{b}"
    );
    let e = format!(
        "{:?}",
        Tensor::zeros(&[0], DType::I64, Device::Cpu).unwrap()
    );
    assert!(e.contains("data=[]"), "{e}");
}

#[test]
fn a_panic_while_writing_does_not_wedge_the_storage() {
    let a = arange(&[2]);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.with_slice_mut(|s: &mut [f32]| {
            s[0] = 5.0;
            panic!("kernel bug");
        })
    }));
    assert!(caught.is_err());
    assert_eq!(f32s(&a), vec![5.0, 1.0]);
    a.fill_(0.0).unwrap();
    assert_eq!(f32s(&a), vec![0.0, 0.0]);
}

#[test]
fn handles_are_send_sync_and_one_pointer() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Tensor>();
    assert_eq!(
        std::mem::size_of::<Option<Tensor>>(),
        std::mem::size_of::<usize>()
    );
}

/// Complex elements: a real `Scalar` fills them, `Debug` shows both parts, and `item_scalar`
/// refuses a value a `Scalar` cannot hold instead of dropping its imaginary part.
#[test]
fn complex_elements_keep_both_parts() {
    use num_complex::Complex32;
    let t = Tensor::from_vec(vec![Complex32::new(1.5, -2.0)], &[1]).unwrap();
    assert_eq!(t.dtype(), DType::Complex32);
    assert!(format!("{t:?}").contains("1.5-2.0j"), "{t:?}");
    let err = t.item_scalar().unwrap_err();
    assert!(
        err.to_string().contains("imaginary part")
            && err.to_string().contains("item::<Complex32>()"),
        "{err}"
    );
    let real = Tensor::full(&[2], Scalar::Float(3.0), DType::Complex64, Device::Cpu).unwrap();
    assert_eq!(
        real.to_vec::<num_complex::Complex64>().unwrap(),
        vec![num_complex::Complex64::new(3.0, 0.0); 2]
    );
    assert_eq!(
        real.item_scalar().map_err(|_| ()),
        Err(()),
        "two elements have no item"
    );
}
