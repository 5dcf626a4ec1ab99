use opbox::prelude::*;

#[stable_library(passlib)]
fn passlib(m: &mut Library) {
    m.def("all(Tensor a, Tensor b, int i, float f, bool flag, str s, ScalarType dt, Device dev, Scalar sc) -> Tensor");
    m.def("lists(Tensor[] ts, int[] is, float[] fs, bool[] bs, str[] ss) -> (Tensor[], int[], float[], str[])");
    m.def("optionals(Tensor? t, int? i=None, float? f=None, int[]? dims=None, str? name=None) -> (Tensor?, int?)");
    m.def("inplace_(Tensor(a!) x, *, float alpha=1.0) -> ()");
    m.def("scalar_only(int a, int b=2) -> int");
    m.def("pick.int(Tensor x, int i) -> Tensor");
    m.def("pick.dims(Tensor x, int[] dims=[0, 1]) -> Tensor");
}

#[stable_impl(passlib, CPU)]
mod cpu {
    use opbox::prelude::*;

    #[allow(clippy::too_many_arguments)]
    pub fn all(a: &Tensor, _b: Tensor, _i: i64, _f: f64, _flag: bool, _s: &str, _dt: DType, _dev: Device, _sc: Scalar) -> Result<Tensor> {
        Ok(a.clone())
    }

    pub fn lists(ts: &[Tensor], is: Vec<i64>, fs: &[f64], _bs: &[bool], ss: Vec<String>) -> (Vec<Tensor>, Vec<i64>, Vec<f64>, Vec<String>) {
        (ts.to_vec(), is, fs.to_vec(), ss)
    }

    pub fn optionals(t: Option<&Tensor>, i: Option<i64>, _f: Option<f64>, _dims: Option<&[i64]>, _name: Option<&str>) -> Result<(Option<Tensor>, Option<i64>), Error> {
        Ok((t.cloned(), i))
    }

    pub fn inplace_(_x: &Tensor, _alpha: f64) -> Result<()> {
        Ok(())
    }

    pub fn scalar_only(a: i64, b: i64) -> i64 {
        a * b
    }

    pub fn pick_int(x: &Tensor, _i: i64) -> Tensor {
        x.clone()
    }

    pub fn pick_dims(x: &Tensor, _dims: &[i64]) -> Tensor {
        x.clone()
    }
}

#[stable_impl(passlib::scalar_only, CompositeExplicit)]
fn scalar_only_composite(a: i64, b: i64) -> Result<i64> {
    Ok(a + b)
}

fn main() {
    let op = opbox::op("passlib::scalar_only").unwrap();
    let product: i64 = op.call((3i64,)).unwrap();
    assert_eq!(product, 6);
    assert!(opbox::op("passlib::pick.int").is_ok());
    assert!(opbox::op("passlib::pick.dims").is_ok());
}
