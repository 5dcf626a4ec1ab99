use opbox::prelude::*;

#[stable_library(smoke)]
fn smoke(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a=1.0, float b=1.0) -> Tensor");
    m.def("add(int a, int b) -> int");
    m.def("add.Tensor(Tensor a, Tensor b) -> Tensor");
    m.def("minmax(Tensor x) -> (Tensor, Tensor)");
    m.def("scale_(Tensor(a!) x, float s) -> ()");
    m.def("shape_of(Tensor x) -> (int[], Tensor[], str[])");
}

#[stable_impl(smoke, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, y: &Tensor, a: f64, b: f64) -> Result<Tensor> {
        let xs = x.to_vec::<f32>()?;
        let ys = y.to_vec::<f32>()?;
        let out: Vec<f32> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (a as f32) * x + (b as f32) * y)
            .collect();
        Tensor::from_vec(out, x.shape())
    }
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
    pub fn add_Tensor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        axpby(a, b, 1.0, 1.0)
    }
    pub fn minmax(x: &Tensor) -> Result<(Tensor, Tensor)> {
        let v = x.to_vec::<f32>()?;
        let lo = v.iter().cloned().fold(f32::INFINITY, f32::min);
        let hi = v.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        Ok((
            Tensor::from_vec(vec![lo], &[1])?,
            Tensor::from_vec(vec![hi], &[1])?,
        ))
    }
    pub fn shape_of(x: &Tensor) -> (Vec<i64>, Vec<Tensor>, Vec<String>) {
        let dims = x.shape().iter().map(|&d| d as i64).collect();
        (
            dims,
            vec![x.clone(), x.clone()],
            vec![format!("{:?}", x.dtype())],
        )
    }
    pub fn scale_(x: &Tensor, s: f64) -> Result<()> {
        x.with_slice_mut::<f32, _>(|d| d.iter_mut().for_each(|v| *v *= s as f32))
    }
}

#[test]
fn smoke_calls() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let y = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap();
    let axpby = opbox::op("smoke::axpby").unwrap();
    let z: Tensor = axpby.call((&x, &y, 2.0, 3.0)).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![32.0, 64.0, 96.0]);
    let z: Tensor = axpby.call((&x, &y)).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0]);
    let add = opbox::op("smoke::add").unwrap();
    let s: i64 = add.call((2i64, 3i64)).unwrap();
    assert_eq!(s, 5);
    let (lo, hi): (Tensor, Tensor) = opbox::op("smoke::minmax").unwrap().call((&x,)).unwrap();
    assert_eq!(
        (lo.to_vec::<f32>().unwrap(), hi.to_vec::<f32>().unwrap()),
        (vec![1.0], vec![3.0])
    );
    let () = opbox::op("smoke::scale_").unwrap().call((&x, 2.0)).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    let (dims, tensors, names): (Vec<i64>, Vec<Tensor>, Vec<String>) =
        opbox::op("smoke::shape_of").unwrap().call((&x,)).unwrap();
    assert_eq!(dims, vec![3]);
    assert!(tensors.len() == 2 && tensors.iter().all(|t| t.ptr_eq(&x)));
    assert_eq!(names, vec!["F32".to_string()]);
    let err = opbox::op("smoke::axbpy").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown operator 'smoke::axbpy'; did you mean 'smoke::axpby'?"
    );
    // A namespace nothing linked defines: most often a crate the binary never names.
    let err = opbox::op("unlinked::axpby").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown operator 'unlinked::axpby'. No op of namespace 'unlinked' is linked into this binary or loaded from a plugin: a test or binary that never names the crate defining them does not link it (add `use that_crate as _;`)"
    );
    let err = axpby.call::<_, Tensor>((1i64, &y)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "smoke::axpby expects argument #0 (x) to be Tensor, but got int"
    );
}
