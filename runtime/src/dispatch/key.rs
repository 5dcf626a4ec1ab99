use crate::Device;

opbox_codegen::define_dispatch_keys! {
    /// Which kernel of an op runs. Backend keys come from the tensor arguments' devices;
    /// `CompositeExplicit` is the fallback kernel written in terms of other ops.
    pub enum DispatchKey
}

impl DispatchKey {
    /// The backend key for tensors on `device`.
    pub const fn for_device(device: Device) -> DispatchKey {
        match device {
            Device::Cpu => DispatchKey::CPU,
            Device::Cuda(_) => DispatchKey::CUDA,
            Device::Meta => DispatchKey::Meta,
        }
    }
}
