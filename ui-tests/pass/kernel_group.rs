//! A group of DSL kernels exposes its members' signature through `launch` and `launch_in`.
use opbox::prelude::*;

#[kernel_group]
mod step {
    use super::*;

    #[kernel]
    pub fn times(x: InOut<[f32]>, s: f32, n: u32) {
        let i = global_id_x();
        if i < n {
            x[i] *= s;
        }
    }

    #[kernel]
    pub fn plus(x: InOut<[f32]>, s: f32, n: u32) {
        let i = global_id_x();
        if i < n {
            x[i] += s;
        }
    }
}

fn main() -> opbox::Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    step::launch(LaunchConfig::for_elems(2), &x, 2.0, 2)?;
    let g = opbox::graph::record(Device::Cpu, |r| {
        step::launch_in(r, LaunchConfig::for_elems(2), &x, 2.0, 2)?;
        Ok(())
    })?;
    assert_eq!(g.len(), 1);
    assert_eq!(step::GROUP.members.len(), 2);
    Ok(())
}
