use crate::Device;

/// Which kernel of an op runs. Backend keys come from the tensor arguments' devices;
/// `CompositeExplicit` is the fallback kernel written in terms of other ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DispatchKey {
    CPU = 0,
    CUDA = 1,
    Meta = 2,
    CompositeExplicit = 3,
}

impl DispatchKey {
    pub const COUNT: usize = 4;
    pub const ALL: [DispatchKey; 4] = [
        DispatchKey::CPU,
        DispatchKey::CUDA,
        DispatchKey::Meta,
        DispatchKey::CompositeExplicit,
    ];

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn name(self) -> &'static str {
        match self {
            DispatchKey::CPU => "CPU",
            DispatchKey::CUDA => "CUDA",
            DispatchKey::Meta => "Meta",
            DispatchKey::CompositeExplicit => "CompositeExplicit",
        }
    }

    pub fn from_name(name: &str) -> Option<DispatchKey> {
        DispatchKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The backend key for tensors on `device`.
    pub const fn for_device(device: Device) -> DispatchKey {
        match device {
            Device::Cpu => DispatchKey::CPU,
            Device::Cuda(_) => DispatchKey::CUDA,
            Device::Meta => DispatchKey::Meta,
        }
    }
}

impl std::fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
