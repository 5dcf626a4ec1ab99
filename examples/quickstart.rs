//! opbox in one file: a library of ops defined by schema strings, CPU kernels checked against
//! them by rustc, a CUDA kernel in hand-written CUDA C++ (`#[extern_kernel]`), a
//! CompositeExplicit op built from other ops, and calls both typed and boxed.
//!
//! Run with `cargo run --example quickstart`. With a GPU, `axpby` also runs on CUDA and every
//! CUDA result is checked against the CPU impl; without one, it says so and runs on the CPU.

use opbox::prelude::*;

#[stable_library(mylib)]
fn mylib(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a=1.0, float b=1.0) -> Tensor");
    m.def("scale_(Tensor(a!) x, float s) -> ()");
    m.def("minmax(Tensor x) -> (Tensor, Tensor)");
    m.def("sum(Tensor x, int[] dims=[], bool keepdim=False) -> Tensor");
    m.def("add.Tensor(Tensor a, Tensor b) -> Tensor");
    m.def("add.Scalar(Tensor a, float b) -> Tensor");
    m.def("normalize(Tensor x) -> Tensor");
}

#[stable_fragment(mylib)]
fn more(m: &mut Library) {
    m.def("count(Tensor x, float? above=None) -> int");
}

/// Elementwise `f(x, y)` over two f32 tensors of one shape.
fn zip_f32(x: &Tensor, y: &Tensor, f: impl Fn(f32, f32) -> f32) -> Result<Tensor> {
    if x.shape() != y.shape() {
        return Err(Error::Shape(format!(
            "shapes {:?} and {:?} differ",
            x.shape(),
            y.shape()
        )));
    }
    let (xs, ys) = (x.to_vec::<f32>()?, y.to_vec::<f32>()?);
    Tensor::from_vec(
        xs.iter().zip(&ys).map(|(&a, &b)| f(a, b)).collect(),
        x.shape(),
    )
}

#[stable_impl(mylib, CPU)]
mod cpu {
    use super::zip_f32;
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, y: &Tensor, a: f64, b: f64) -> Result<Tensor> {
        zip_f32(x, y, |x, y| a as f32 * x + b as f32 * y)
    }

    pub fn scale_(x: &Tensor, s: f64) -> Result<()> {
        x.with_slice_mut::<f32, _>(|data| data.iter_mut().for_each(|v| *v *= s as f32))
    }

    pub fn minmax(x: &Tensor) -> Result<(Tensor, Tensor)> {
        let v = x.to_vec::<f32>()?;
        let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        Ok((
            Tensor::from_vec(vec![lo], &[])?,
            Tensor::from_vec(vec![hi], &[])?,
        ))
    }

    /// Sums over `dims` (all dims when empty) of a 2-D tensor.
    pub fn sum(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let [rows, cols] = x.shape() else {
            return Err(Error::Shape(format!(
                "sum takes a 2-D tensor, got shape {:?}",
                x.shape()
            )));
        };
        let (rows, cols) = (*rows, *cols);
        let v = x.contiguous()?.to_vec::<f32>()?;
        let (out, shape): (Vec<f32>, Vec<usize>) = match dims {
            [] => (
                vec![v.iter().sum()],
                if keepdim { vec![1, 1] } else { vec![] },
            ),
            [0] => (
                (0..cols)
                    .map(|c| (0..rows).map(|r| v[r * cols + c]).sum())
                    .collect(),
                if keepdim { vec![1, cols] } else { vec![cols] },
            ),
            [1] => (
                v.chunks(cols.max(1)).map(|row| row.iter().sum()).collect(),
                if keepdim { vec![rows, 1] } else { vec![rows] },
            ),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "sum: unsupported dims {other:?}"
                )))
            }
        };
        Tensor::from_vec(out, &shape)
    }

    pub fn add_Tensor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        zip_f32(a, b, |a, b| a + b)
    }

    pub fn add_Scalar(a: &Tensor, b: f64) -> Result<Tensor> {
        let v = a.to_vec::<f32>()?;
        Tensor::from_vec(v.into_iter().map(|x| x + b as f32).collect(), a.shape())
    }
}

/// `out = a * x + b * y` in CUDA C++ (examples/kernels/axpby.cu), compiled by NVRTC on first use
/// and cached on disk. `--fmad=false` keeps `a * x + b * y` two roundings, as on the CPU, so the
/// CUDA results can be compared for equality.
#[extern_kernel(source = "kernels/axpby.cu", entry = "axpby", options = ["--fmad=false"])]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[stable_impl(mylib, CUDA)]
mod cuda {
    use super::axpby_f32;
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, y: &Tensor, a: f64, b: f64) -> Result<Tensor> {
        if x.shape() != y.shape() {
            return Err(Error::Shape(format!(
                "shapes {:?} and {:?} differ",
                x.shape(),
                y.shape()
            )));
        }
        let out = x.empty_like()?;
        let n = x.numel();
        axpby_f32::launch(
            LaunchConfig::for_elems(n),
            x,
            y,
            &out,
            a as f32,
            b as f32,
            n as i64,
        )?;
        Ok(out)
    }
}

/// Runs `axpby` on cuda:0 for a few inputs and checks each result against the CPU impl.
fn run_on_cuda(axpby: &OpHandle) -> opbox::Result<()> {
    let mut checked = 0;
    for (n, a, b) in [
        (6usize, 2.0, 3.0),
        (1000, 1.0, 1.0),
        ((1 << 20) + 3, -0.5, 0.25),
    ] {
        let x = Tensor::from_vec((0..n).map(|i| i as f32 * 0.5).collect(), &[n])?;
        let y = Tensor::from_vec((0..n).map(|i| (n - i) as f32).collect(), &[n])?;
        let want: Tensor = axpby.call((&x, &y, a, b))?;
        let (gx, gy) = (x.to(Device::Cuda(0))?, y.to(Device::Cuda(0))?);
        let got: Tensor = axpby.call((&gx, &gy, a, b))?;
        if got.device() != Device::Cuda(0) {
            return Err(Error::msg(format!(
                "axpby ran on {}, not cuda:0",
                got.device()
            )));
        }
        let (want, got) = (want.to_vec::<f32>()?, got.to_vec::<f32>()?);
        if let Some(i) = (0..n).find(|&i| want[i].to_bits() != got[i].to_bits()) {
            return Err(Error::msg(format!(
                "CUDA axpby(n={n}, a={a}, b={b})[{i}] = {} but the CPU impl gives {}",
                got[i], want[i]
            )));
        }
        checked += 1;
    }
    opbox::cuda::synchronize(0)?;
    println!(
        "CUDA: axpby ran on {} for {checked} inputs; every CUDA result was checked against the CPU impl and is bit-identical",
        opbox::cuda::device(0)?.name
    );
    Ok(())
}

/// The fragment's ops are reached through its marker module, `more`.
#[stable_impl(more, CPU)]
mod more_cpu {
    use opbox::prelude::*;

    pub fn count(x: &Tensor, above: Option<f64>) -> Result<i64> {
        let v = x.to_vec::<f32>()?;
        Ok(match above {
            Some(t) => v.iter().filter(|&&e| f64::from(e) > t).count() as i64,
            None => v.len() as i64,
        })
    }
}

/// `normalize` is built from other ops, so it runs on any backend that has them.
#[stable_impl(mylib::normalize, CompositeExplicit)]
fn normalize(x: &Tensor) -> Result<Tensor> {
    let (lo, hi): (Tensor, Tensor) = opbox::op("mylib::minmax")?.call((x,))?;
    let (lo, hi) = (lo.item::<f32>()?, hi.item::<f32>()?);
    let shifted: Tensor = opbox::op("mylib::add.Scalar")?.call((x, -f64::from(lo)))?;
    let range = f64::from(hi - lo);
    let () = opbox::op("mylib::scale_")?
        .call((&shifted, if range == 0.0 { 1.0 } else { 1.0 / range }))?;
    Ok(shifted)
}

fn main() -> opbox::Result<()> {
    opbox::init()?;
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let y = Tensor::full(&[2, 3], 10.0, DType::F32, Device::Cpu)?;

    // Resolve once, call many times. Typed calls box underneath; defaults fill the rest.
    let axpby = opbox::op("mylib::axpby")?;
    let z: Tensor = axpby.call((&x, &y, 2.0, 3.0))?;
    println!("axpby(x, y, 2, 3)     = {:?}", z.to_vec::<f32>()?);
    let z: Tensor = axpby.call((&x, &y))?;
    println!("axpby(x, y) defaults  = {:?}", z.to_vec::<f32>()?);

    let (lo, hi): (Tensor, Tensor) = opbox::op("mylib::minmax")?.call((&x,))?;
    println!(
        "minmax(x)             = ({}, {})",
        lo.item::<f32>()?,
        hi.item::<f32>()?
    );

    let rows: Tensor = opbox::op("mylib::sum")?.call((&x, vec![1i64]))?;
    println!(
        "sum(x, dims=[1])      = {:?} shape {:?}",
        rows.to_vec::<f32>()?,
        rows.shape()
    );

    let plus_t: Tensor = opbox::op("mylib::add.Tensor")?.call((&x, &y))?;
    let plus_s: Tensor = opbox::op("mylib::add.Scalar")?.call((&x, 0.5))?;
    println!(
        "add.Tensor / add.Scalar = {:?} / {:?}",
        plus_t.to_vec::<f32>()?,
        plus_s.to_vec::<f32>()?
    );

    let count = opbox::op("mylib::count")?;
    let all: i64 = count.call((&x,))?;
    let big: i64 = count.call((&x, Some(3.0)))?;
    println!("count(x) / count(x, above=3) = {all} / {big}");

    let n: Tensor = opbox::op("mylib::normalize")?.call((&x,))?;
    println!(
        "normalize(x) (CompositeExplicit) = {:?}",
        n.to_vec::<f32>()?
    );

    // The raw boxed call, as plugins and FFI make it: push, call, read the results off the stack.
    let w = x.clone();
    let mut stack = Stack::new();
    stack.push(&w).push(2.0);
    opbox::op("mylib::scale_")?.call_boxed(&mut stack)?;
    println!(
        "boxed scale_(x, 2) wrote in place: {:?} (stack now holds {} values)",
        x.to_vec::<f32>()?,
        stack.len()
    );

    stack.push(&x).push(&y).push(1.0).push(-1.0);
    axpby.call_boxed(&mut stack)?;
    let z = stack.pop_tensor()?; // or stack.pop_as::<Tensor>()
    println!("boxed axpby(x, y, 1, -1) = {:?}", z.to_vec::<f32>()?);

    // Mistakes are errors that say what to fix, never panics.
    let mut bad = Stack::new();
    bad.push(3i64).push(&y);
    if let Err(e) = axpby.call_boxed(&mut bad) {
        println!("error: {e}");
    }
    if let Err(e) = opbox::op("mylib::axbpy") {
        println!("error: {e}");
    }
    let meta = Tensor::empty(&[2, 3], DType::F32, Device::Meta)?;
    if let Err(e) = axpby.call::<_, Tensor>((&meta, &meta)) {
        println!("error: {e}");
    }

    // The same op on the GPU, when there is one.
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => run_on_cuda(&axpby)?,
        Ok(_) => println!("CUDA: ran on the CPU only: the CUDA driver reports no devices"),
        Err(e) => println!("CUDA: ran on the CPU only: {e}"),
    }
    Ok(())
}
