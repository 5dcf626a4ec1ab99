//! [`LaunchPlan`]: what a plain kernel's launch checks, worked out from its declaration once, at
//! compile time, so that a repeat launch checks and packs in one short pass instead of walking
//! the declaration ([`prepare`](super::prepare::prepare)'s general path).
//!
//! A plan exists only for the common shape: the default entry ABI, no `#[constexpr]`, and every
//! parameter a buffer of a built-in element type or a scalar, at most [`MAX_PLANNED`] of them.
//! Its checks accept a subset of what `prepare` accepts, and pack the same words: when a launch
//! does not fit them (a wrong argument, a CPU tensor, a view that is not contiguous), the
//! launch goes the general way, whose checks give the error. So every message stays in one
//! place, `prepare`, and the plan never refuses a launch itself.

use std::borrow::Cow;

use opbox_codegen::cuda::{EntryAbi, KernelDecl, ParamKind, ScalarType};

use super::arg::LaunchArg;
use super::prepare::Access;
use crate::tensor::{DType, Device};

/// Launch parameters a plan covers; a kernel with more launches the general way.
pub const MAX_PLANNED: usize = 12;

/// One launch parameter as a plan checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Planned {
    /// A buffer of `dtype`, `nullable` when declared `Option<..>`.
    Tensor { dtype: DType, nullable: bool },
    /// A scalar of this type.
    Scalar(ScalarType),
    /// Not in use (past the plan's length).
    Unused,
}

/// A kernel's launch parameters as `LaunchPlan::pack` checks them.
#[derive(Clone, Copy, Debug)]
pub struct LaunchPlan {
    params: [Planned; MAX_PLANNED],
    // Read by `pack`, which only a CUDA launch calls.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    len: u8,
    /// Some buffer is written and some is read: the launch must check that they do not share
    /// storage ([`check_aliases`](super::prepare::check_aliases)).
    aliasing: bool,
}

impl LaunchPlan {
    /// The plan of `decl`, or `None` when its launches need the general path.
    pub const fn of(decl: &KernelDecl) -> Option<LaunchPlan> {
        if !matches!(decl.abi, EntryAbi::Params) {
            return None;
        }
        // A declaration built at run time may own its parameters; the macros' borrow them.
        let Cow::Borrowed(params) = &decl.params else {
            return None;
        };
        if params.len() > MAX_PLANNED {
            return None;
        }
        let mut plan = LaunchPlan {
            params: [Planned::Unused; MAX_PLANNED],
            len: params.len() as u8,
            aliasing: false,
        };
        let (mut writes, mut reads) = (false, false);
        let mut i = 0;
        while i < params.len() {
            let kind = params[i].kind;
            plan.params[i] = match kind {
                ParamKind::In(t) | ParamKind::Out(t) | ParamKind::InOut(t) => Planned::Tensor {
                    dtype: DType::from_elem(t),
                    nullable: params[i].nullable,
                },
                ParamKind::Scalar(t) => Planned::Scalar(t),
                _ => return None,
            };
            match Access::of(kind) {
                Some(Access::Read) => reads = true,
                Some(Access::Write | Access::ReadWrite) => writes = true,
                None => {}
            }
            i += 1;
        }
        plan.aliasing = writes && reads;
        Some(plan)
    }

    /// Checks `args` against the plan and writes each one's launch word to `words` (a device
    /// address, 0 for a null buffer, or a scalar's bytes), returning the tensors' device
    /// (`cuda:0` when there are none); `None` when the launch must go the general way. The
    /// words are the ones `prepare` packs.
    #[inline]
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn pack(
        &self,
        args: &[LaunchArg<'_>],
        words: &mut [[u8; 8]; MAX_PLANNED],
    ) -> Option<Device> {
        let len = self.len as usize;
        if args.len() != len {
            return None;
        }
        let mut device = None;
        for ((planned, arg), word) in self.params[..len].iter().zip(args).zip(words.iter_mut()) {
            *word = match (*planned, arg) {
                (Planned::Tensor { dtype, .. }, &LaunchArg::Tensor(x)) => {
                    let (on, address) = x.cuda_buffer(dtype)?;
                    match device {
                        None => device = Some(on),
                        Some(first) if first != on => return None,
                        Some(_) => {}
                    }
                    address.to_ne_bytes()
                }
                (Planned::Tensor { nullable: true, .. }, LaunchArg::Null) => [0; 8],
                (Planned::Scalar(t), a) => match a.scalar() {
                    Some((given, raw)) if given == t => raw,
                    _ => return None,
                },
                _ => return None,
            };
        }
        Some(device.unwrap_or(Device::Cuda(0)))
    }

    /// Whether a launch must check that no written buffer shares storage with a read one.
    #[inline]
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn aliasing(&self) -> bool {
        self.aliasing
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use opbox_codegen::cuda::{
        ConstexprStyle, ElemType, EntryAbi, KernelDecl, Param, ParamKind, ScalarType,
    };

    use super::{LaunchPlan, MAX_PLANNED};
    use crate::kernel::{prepare, KernelHandle, LaunchArg, LaunchConfig, ParamBuffer};
    use crate::tensor::{Device, Tensor};

    const fn decl(params: &'static [Param], abi: EntryAbi) -> KernelDecl {
        KernelDecl {
            rust_name: Cow::Borrowed("k"),
            entry: Cow::Borrowed("k"),
            params: Cow::Borrowed(params),
            constexpr_style: ConstexprStyle::Defines,
            sources: Cow::Borrowed(&[]),
            options: Cow::Borrowed(&[]),
            preamble: Cow::Borrowed(""),
            declared_at: Cow::Borrowed("src/lib.rs:1"),
            build: None,
            abi,
        }
    }

    const AXPBY: &[Param] = &[
        Param::new("x", ParamKind::In(ElemType::F32)),
        Param::with_nullable("y", ParamKind::In(ElemType::F32), true),
        Param::new("out", ParamKind::Out(ElemType::F32)),
        Param::new("a", ParamKind::Scalar(ScalarType::F32)),
        Param::new("n", ParamKind::Scalar(ScalarType::I64)),
    ];
    const SCALARS: &[Param] = &[
        Param::new("a", ParamKind::Scalar(ScalarType::F32)),
        Param::new("n", ParamKind::Scalar(ScalarType::I64)),
        Param::new("flag", ParamKind::Scalar(ScalarType::Bool)),
    ];

    /// What `#[extern_kernel]` emits: the plan is worked out when the static is, at compile
    /// time.
    static SCALAR_DECL: KernelDecl = decl(SCALARS, EntryAbi::Params);
    static SCALAR_HANDLE: KernelHandle = KernelHandle::new(&SCALAR_DECL);

    #[test]
    fn the_common_shape_has_a_plan_and_the_others_launch_the_general_way() {
        let plan = LaunchPlan::of(&decl(AXPBY, EntryAbi::Params)).expect("axpby has a plan");
        assert!(plan.aliasing(), "axpby writes one buffer and reads two");
        assert!(!LaunchPlan::of(&SCALAR_DECL).unwrap().aliasing());
        assert!(SCALAR_HANDLE.plan().is_some());

        const CONSTEXPR: &[Param] = &[
            Param::new("x", ParamKind::In(ElemType::F32)),
            Param::new("N", ParamKind::Constexpr(ScalarType::I32)),
        ];
        assert!(LaunchPlan::of(&decl(CONSTEXPR, EntryAbi::Params)).is_none());
        assert!(LaunchPlan::of(&decl(AXPBY, EntryAbi::ParamsAndLens)).is_none());
        assert!(LaunchPlan::of(&decl(AXPBY, EntryAbi::ConstantParams)).is_none());
        const MANY: &[Param] =
            &[const { Param::new("a", ParamKind::Scalar(ScalarType::I32)) }; MAX_PLANNED + 1];
        assert!(LaunchPlan::of(&decl(MANY, EntryAbi::Params)).is_none());
        const ENOUGH: &[Param] =
            &[const { Param::new("a", ParamKind::Scalar(ScalarType::I32)) }; MAX_PLANNED];
        assert!(LaunchPlan::of(&decl(ENOUGH, EntryAbi::Params)).is_some());
        let mut owned = decl(SCALARS, EntryAbi::Params);
        owned.params = Cow::Owned(SCALARS.to_vec());
        assert!(LaunchPlan::of(&owned).is_none());
    }

    #[test]
    fn a_plan_packs_the_words_prepare_packs() {
        let plan = SCALAR_HANDLE.plan().unwrap();
        let args = [
            LaunchArg::F32(1.5),
            LaunchArg::I64(-7),
            LaunchArg::Bool(true),
        ];
        let mut words = [[0xAA; 8]; MAX_PLANNED];
        assert_eq!(plan.pack(&args, &mut words), Some(Device::Cuda(0)));

        let cfg = LaunchConfig::single();
        let mut buffer = ParamBuffer::new();
        let prepared = prepare(&SCALAR_HANDLE, &cfg, &args, &[], &mut buffer).unwrap();
        let (chunks, starts) = prepared.packed();
        assert_eq!(starts.len(), args.len());
        for (i, &start) in starts.iter().enumerate() {
            let chunk = &chunks[start as usize].0[..8];
            // SAFETY: `prepare` wrote the first 8 bytes of every one-word parameter's chunk.
            let bytes: Vec<u8> = chunk.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(bytes, words[i], "parameter {i}");
        }
    }

    #[test]
    fn a_plan_leaves_what_it_does_not_take_to_the_general_path() {
        let plan = LaunchPlan::of(&decl(AXPBY, EntryAbi::Params)).unwrap();
        let mut words = [[0; 8]; MAX_PLANNED];
        let cpu = Tensor::from_vec(vec![1f32, 2.0], &[2]).unwrap();
        let scalars = [LaunchArg::F32(2.0), LaunchArg::I64(2)];
        // A CPU tensor: the general path says the kernel takes CUDA tensors.
        let on_cpu = [
            LaunchArg::Tensor(&cpu),
            LaunchArg::Null,
            LaunchArg::Tensor(&cpu),
            scalars[0],
            scalars[1],
        ];
        assert_eq!(plan.pack(&on_cpu, &mut words), None);
        // Too few arguments, a scalar of another type, a null where none is allowed.
        assert_eq!(plan.pack(&on_cpu[..4], &mut words), None);
        let plan = SCALAR_HANDLE.plan().unwrap();
        let wrong = [
            LaunchArg::F64(1.5),
            LaunchArg::I64(-7),
            LaunchArg::Bool(true),
        ];
        assert_eq!(plan.pack(&wrong, &mut words), None);
        let null = [LaunchArg::Null, LaunchArg::I64(-7), LaunchArg::Bool(true)];
        assert_eq!(plan.pack(&null, &mut words), None);
    }
}
