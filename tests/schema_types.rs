//! PyTorch's whole schema grammar, end to end: ops whose schemas use every construct beyond the
//! basic types, implemented in Rust and called typed and boxed.

use opbox::prelude::*;
use opbox::value::List;

#[stable_library(grammar)]
fn grammar(m: &mut Library) {
    m.set_python_module("grammar_pkg.ops");
    m.def("narrow(Tensor self, int dim, SymInt start, SymInt length) -> SymInt");
    m.def("sym(SymInt[] sizes, SymInt? maybe, SymFloat f, SymBool b) -> (SymInt[], SymFloat, SymBool)");
    m.def("pool(int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool[3] output_mask=[True, False, True]) -> int[]");
    m.def("fft_dims(int[1] dim=[-2,-1]) -> int[]");
    m.def("empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, MemoryFormat? memory_format=None) -> (Layout?, MemoryFormat?)");
    m.def("formats(Layout layout=strided, MemoryFormat memory_format=contiguous_format) -> (Layout, MemoryFormat)");
    m.def("loss(Tensor self, int reduction=Mean) -> int");
    m.def("rand(int n, *, Generator? generator=None) -> float[]");
    m.def("align_to(Tensor(a) self, Dimname[] names, Dimname? first=None) -> str[]");
    m.def("on_stream(Tensor(a!) self, Stream s, DeviceIndex index=-1) -> (Stream, DeviceIndex)");
    m.def("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
    m.def("where(Tensor condition, Tensor x) -> Tensor");
    m.def("type(Tensor x) -> ScalarType");
    m.def("self(Tensor x) -> Tensor");
    m.def_with_tags(
        "tagged_identity(Tensor t) -> Tensor",
        &[OpTag::Pt2Compliant, OpTag::Core],
    );
    m.def("unpack(Tensor x, __torch__.torch.classes.grammar.Packed? packed=None) -> __torch__.torch.classes.grammar.Packed");
}

#[stable_impl(grammar, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn narrow(_x: &Tensor, _dim: i64, start: i64, length: i64) -> i64 {
        start + length
    }

    pub fn sym(sizes: &[i64], maybe: Option<i64>, f: f64, b: bool) -> (Vec<i64>, f64, bool) {
        let mut out = sizes.to_vec();
        out.extend(maybe);
        (out, f * 2.0, !b)
    }

    pub fn pool(kernel_size: &[i64], stride: &[i64], padding: &[i64], mask: &[bool]) -> Vec<i64> {
        let mut out = kernel_size.to_vec();
        out.push(stride.len() as i64);
        out.extend_from_slice(padding);
        out.extend(mask.iter().map(|&m| i64::from(m)));
        out
    }

    pub fn fft_dims(dim: &[i64]) -> Vec<i64> {
        dim.to_vec()
    }

    pub fn empty_like(
        _x: &Tensor,
        _dtype: Option<DType>,
        layout: Option<Layout>,
        _device: Option<Device>,
        memory_format: Option<MemoryFormat>,
    ) -> (Option<Layout>, Option<MemoryFormat>) {
        (layout, memory_format)
    }

    pub fn formats(layout: Layout, memory_format: MemoryFormat) -> (Layout, MemoryFormat) {
        (layout, memory_format)
    }

    pub fn loss(_x: &Tensor, reduction: i64) -> i64 {
        reduction
    }

    /// Uniform floats from the caller's generator (or a fixed seed): the generator advances.
    pub fn rand(n: i64, generator: Option<Generator>) -> Vec<f64> {
        let generator = generator.unwrap_or_else(|| Generator::new(0));
        let blocks = (n as u64).div_ceil(4);
        let state = generator.philox(blocks);
        (0..blocks)
            .flat_map(|b| state.uniform(b))
            .take(n as usize)
            .map(f64::from)
            .collect()
    }

    pub fn align_to(_x: &Tensor, names: Vec<&str>, first: Option<&str>) -> Vec<String> {
        first.into_iter().chain(names).map(str::to_string).collect()
    }

    pub fn on_stream(_x: &Tensor, s: Stream, index: i8) -> (Stream, i8) {
        (s, index)
    }

    pub fn chunk(x: &Tensor, chunks: i64, _dim: i64) -> Vec<Tensor> {
        (0..chunks).map(|_| x.clone()).collect()
    }

    pub fn r#where(_condition: &Tensor, x: &Tensor) -> Tensor {
        x.clone()
    }

    pub fn r#type(x: &Tensor) -> DType {
        x.dtype()
    }

    pub fn self_(x: &Tensor) -> Tensor {
        x.clone()
    }

    pub fn tagged_identity(t: &Tensor) -> Tensor {
        t.clone()
    }
}

fn tensor() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2]).expect("tensor")
}

#[test]
fn sym_types_are_plain_values() -> Result<()> {
    let end: i64 = opbox::op("grammar::narrow")?.call((&tensor(), 0i64, 2i64, 3i64))?;
    assert_eq!(end, 5);
    let (sizes, f, b): (Vec<i64>, f64, bool) =
        opbox::op("grammar::sym")?.call((&[1i64, 2][..], Some(3i64), 1.5, false))?;
    assert_eq!((sizes, f, b), (vec![1, 2, 3], 3.0, true));
    Ok(())
}

#[test]
fn fixed_size_lists_broadcast_and_check_their_length() -> Result<()> {
    let pool = opbox::op("grammar::pool")?;
    // stride=[] (empty: "not given"), padding=0 broadcast to [0, 0], the mask's default.
    let out: Vec<i64> = pool.call((&[3i64, 3][..],))?;
    assert_eq!(out, [3, 3, 0, 0, 0, 1, 0, 1]);
    // A lone int for `int[2]` is two copies of it, as PyTorch's argument parser does.
    let out: Vec<i64> = pool.call((5i64, &[1i64, 1][..], 2i64))?;
    assert_eq!(out, [5, 5, 2, 2, 2, 1, 0, 1]);
    let err = pool
        .call::<_, Vec<i64>>((&[1i64, 2, 3][..],))
        .expect_err("three is not two");
    assert_eq!(
        err.to_string(),
        "grammar::pool expects argument #0 (kernel_size) to be int[2] (a list of 2, or one value \
         repeated), but got a list of 3"
    );
    // Every argument given, as the kernel takes them: a typed call that could skip boxing, but
    // an op with fixed-size lists has its lengths checked all the same.
    let err = pool
        .call::<_, Vec<i64>>((
            &[1i64, 2, 3][..],
            &[1i64, 1][..],
            &[0i64, 0][..],
            &[true, false, true][..],
        ))
        .expect_err("three is not two, on the typed path too");
    assert!(err.to_string().contains("but got a list of 3"), "{err}");
    // PyTorch's own `int[1] dim=[-2,-1]`: the default's length is accepted too.
    let dims: Vec<i64> = opbox::op("grammar::fft_dims")?.call(())?;
    assert_eq!(dims, [-2, -1]);
    Ok(())
}

#[test]
fn layout_memory_format_and_named_int_defaults() -> Result<()> {
    let x = tensor();
    let (layout, format): (Option<Layout>, Option<MemoryFormat>) =
        opbox::op("grammar::empty_like")?.call((&x,))?;
    assert_eq!((layout, format), (None, None));
    let (layout, format): (Option<Layout>, Option<MemoryFormat>) =
        opbox::op("grammar::empty_like")?.call((
            &x,
            None::<DType>,
            Some(Layout::Strided),
            None::<Device>,
            Some(MemoryFormat::ChannelsLast),
        ))?;
    assert_eq!(
        (layout, format),
        (Some(Layout::Strided), Some(MemoryFormat::ChannelsLast))
    );
    let (layout, format): (Layout, MemoryFormat) = opbox::op("grammar::formats")?.call(())?;
    assert_eq!(
        (layout, format),
        (Layout::Strided, MemoryFormat::Contiguous)
    );
    let reduction: i64 = opbox::op("grammar::loss")?.call((&x,))?;
    assert_eq!(reduction, 1, "Mean is 1, as torchgen resolves it");

    // Boxed, a layout is PyTorch's code, an int; a code out of range is refused.
    let formats = opbox::op("grammar::formats")?;
    let mut stack = Stack::new();
    stack.push(99i64);
    let err = formats.call_boxed(&mut stack).expect_err("99 is no layout");
    assert_eq!(
        err.to_string(),
        "grammar::formats expects argument #0 (layout) to be Layout, but got int"
    );
    Ok(())
}

#[test]
fn a_generator_is_shared_and_advances() -> Result<()> {
    let rand = opbox::op("grammar::rand")?;
    let g = Generator::new(1234);
    let first: Vec<f64> = rand.call((6i64, Some(g.clone())))?;
    assert_eq!(first.len(), 6);
    assert_eq!(g.offset(), 2, "6 numbers take 2 Philox blocks");
    let second: Vec<f64> = rand.call((6i64, Some(g.clone())))?;
    assert_ne!(first, second, "the generator moved on");
    let replay: Vec<f64> = rand.call((6i64, Some(Generator::new(1234))))?;
    assert_eq!(first, replay, "same seed, same offset, same numbers");
    assert!(first.iter().all(|x| (0.0..1.0).contains(x)));
    // Boxed too: the stack holds one reference, released after the call.
    let mut stack = Stack::new();
    stack.push(3i64).push(StableValue::generator(g.clone()));
    rand.call_boxed(&mut stack)?;
    assert_eq!(g.offset(), 5);
    Ok(())
}

#[test]
fn dimnames_streams_and_device_indices() -> Result<()> {
    let x = tensor();
    let names: Vec<String> =
        opbox::op("grammar::align_to")?.call((&x, vec!["N", "C"], Some("H")))?;
    assert_eq!(names, ["H", "N", "C"]);
    let s = Stream::new(1, 0xabc0);
    let (back, index): (Stream, i8) = opbox::op("grammar::on_stream")?.call((&x, s))?;
    assert_eq!((back, index), (s, -1));
    let mut stack = Stack::new();
    stack.push(&x).push(s).push(300i64);
    let err = opbox::op("grammar::on_stream")?
        .call_boxed(&mut stack)
        .expect_err("300 is no i8");
    assert!(
        err.to_string()
            .contains("argument #2 (index) to be DeviceIndex"),
        "{err}"
    );
    Ok(())
}

#[test]
fn aliases_keywords_and_tags() -> Result<()> {
    let x = tensor();
    let chunk = opbox::op("grammar::chunk")?;
    assert_eq!(
        chunk.schema().to_string(),
        "grammar::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"
    );
    let parts: Vec<Tensor> = chunk.call((&x, 3i64))?;
    assert_eq!(parts.len(), 3);
    let y: Tensor = opbox::op("grammar::where")?.call((&x, &x))?;
    assert_eq!(y.to_vec::<f32>()?, [1.0, 2.0]);
    let dtype: DType = opbox::op("grammar::type")?.call((&x,))?;
    assert_eq!(dtype, DType::F32);
    let z: Tensor = opbox::op("grammar::self")?.call((&x,))?;
    assert_eq!(z.shape(), [2]);

    let tagged = opbox::op("grammar::tagged_identity")?;
    assert_eq!(tagged.tags(), [OpTag::Pt2Compliant, OpTag::Core]);
    assert!(tagged.has_tag(OpTag::Pt2Compliant));
    assert!(!opbox::op("grammar::where")?.has_tag(OpTag::Core));
    assert_eq!(tagged.python_module(), Some("grammar_pkg.ops"));
    Ok(())
}

#[test]
fn the_library_fn_records_tags_when_run() {
    let mut m = Library::new("grammar");
    grammar(&mut m);
    assert_eq!(m.schemas().len(), 16);
    assert_eq!(m.tags(), [(14, vec![OpTag::Pt2Compliant, OpTag::Core])]);
    assert_eq!(m.python_module(), Some("grammar_pkg.ops"));
}

#[test]
fn boxed_lists_of_fixed_size_from_raw_values() -> Result<()> {
    let pool = opbox::op("grammar::pool")?;
    let mut stack = Stack::new();
    stack.push_value(StableValue::list(List::Int(vec![2, 2])));
    stack.push_value(StableValue::list(List::Int(vec![1])));
    let err = pool.call_boxed(&mut stack).expect_err("one is not two");
    assert!(err.to_string().contains("(stride) to be int[2]"), "{err}");
    Ok(())
}

/// The schema each op was registered with is the static data `#[stable_library]` emitted; it
/// must be exactly what the parser makes of the `m.def` string, for every construct above
/// (fixed-size lists, enum and named defaults, alias sets, keyword names).
#[test]
fn the_emitted_schemas_are_the_parsed_ones() -> Result<()> {
    let mut m = Library::new("grammar");
    grammar(&mut m);
    for text in m.schemas() {
        let mut parsed = opbox_codegen::schema::parse(text).expect("the macro parsed it");
        let name = parsed.qualified_name("grammar");
        parsed.name.namespace = Some("grammar".into());
        assert_eq!(opbox::op(&name)?.schema(), &parsed, "{text}");
    }
    Ok(())
}

#[test]
fn custom_classes_are_kept_in_the_op_schema() -> Result<()> {
    let unpack = opbox::op("grammar::unpack")?;
    let packed = &unpack.schema().arguments[1];
    assert_eq!(
        packed.ty.to_string(),
        "__torch__.torch.classes.grammar.Packed?"
    );
    assert_eq!(
        unpack.schema().returns[0].ty.class_name(),
        Some("__torch__.torch.classes.grammar.Packed")
    );
    // Defined, but no `#[stable_impl]` can implement it: a call says there is no kernel.
    let err = unpack.call::<_, ()>((&tensor(),)).expect_err("no kernel");
    assert!(err.to_string().contains("grammar::unpack"), "{err}");
    Ok(())
}
