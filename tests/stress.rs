//! 8 threads × 100_000 calls through one `OpHandle`, every result checked; and a smaller run of a
//! tensor op, shared tensors and all.

use std::thread;

use opbox::prelude::*;

#[stable_library(stress)]
fn stress(m: &mut Library) {
    m.def("mad(int a, int b, int c) -> int");
    m.def("axpy(Tensor x, Tensor y, float a) -> Tensor");
}

#[stable_impl(stress, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn mad(a: i64, b: i64, c: i64) -> i64 {
        a.wrapping_mul(b).wrapping_add(c)
    }
    pub fn axpy(x: &Tensor, y: &Tensor, a: f64) -> Result<Tensor> {
        let xs = x.to_vec::<f32>()?;
        let ys = y.to_vec::<f32>()?;
        Tensor::from_vec(
            xs.iter().zip(&ys).map(|(x, y)| a as f32 * x + y).collect(),
            x.shape(),
        )
    }
}

const THREADS: i64 = 8;
const INT_CALLS: i64 = 100_000;
const TENSOR_CALLS: i64 = 5_000;

#[test]
fn eight_threads_through_one_int_handle() {
    let mad = opbox::op("stress::mad").unwrap();
    let total: u64 = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || {
                    let mut stack = Stack::new();
                    let mut done = 0u64;
                    for i in 0..INT_CALLS {
                        // Alternate boxed and typed calls; both go through the same handle.
                        let got = if i % 2 == 0 {
                            stack.clear();
                            stack.push(t).push(i).push(7i64);
                            mad.call_boxed(&mut stack).unwrap();
                            assert_eq!(stack.len(), 1);
                            stack[0].as_int().unwrap()
                        } else {
                            mad.call::<_, i64>((t, i, 7i64)).unwrap()
                        };
                        assert_eq!(got, t * i + 7, "thread {t}, call {i}");
                        done += 1;
                    }
                    // A bad call now and then must not disturb the others.
                    stack.clear();
                    stack.push("x").push(1i64).push(2i64);
                    assert!(matches!(
                        mad.call_boxed(&mut stack),
                        Err(Error::ArgType { index: 0, .. })
                    ));
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    println!("stress::mad: {total} calls on {THREADS} threads through one handle");
    assert_eq!(total, (THREADS * INT_CALLS) as u64);
}

#[test]
fn eight_threads_through_one_tensor_handle() {
    let axpy = opbox::op("stress::axpy").unwrap();
    let y = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let total: u64 = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let y = &y;
                scope.spawn(move || {
                    let x = Tensor::from_vec(vec![t as f32; 3], &[3]).unwrap();
                    let mut stack = Stack::new();
                    let mut done = 0u64;
                    for i in 0..TENSOR_CALLS {
                        let a = (i % 5) as f64;
                        let z: Tensor = if i % 2 == 0 {
                            stack.clear();
                            stack.push(&x).push(y).push(a);
                            axpy.call_boxed(&mut stack).unwrap();
                            stack.pop_tensor().unwrap()
                        } else {
                            axpy.call((&x, y, a)).unwrap()
                        };
                        let want: Vec<f32> = [1.0f32, 2.0, 3.0]
                            .iter()
                            .map(|v| a as f32 * t as f32 + v)
                            .collect();
                        assert_eq!(z.to_vec::<f32>().unwrap(), want, "thread {t}, call {i}");
                        done += 1;
                    }
                    assert_eq!(x.ref_count(), 1);
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    println!("stress::axpy: {total} calls on {THREADS} threads through one handle");
    assert_eq!(total, (THREADS * TENSOR_CALLS) as u64);
    assert_eq!(
        y.ref_count(),
        1,
        "every thread released its references to the shared tensor"
    );
}
