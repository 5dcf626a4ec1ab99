//! A compiled module as the caches hold it: the image NVRTC produced and the symbol of each of
//! its kernels.

/// What the image is: a cubin for one exact `sm_XX`, or PTX the driver JIT-compiles on load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// A cubin: machine code for one `sm_XX`, loaded as it is.
    Cubin,
    /// PTX: compiled by the driver when loaded, on any device of its arch or newer.
    Ptx,
}

/// A compiled module's image, as NVRTC made it and the disk cache stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// Cubin or PTX.
    pub kind: ImageKind,
    /// Each kernel's symbol in the image (NVRTC's lowered name of its name expression), in the
    /// module's member order.
    pub lowered_names: Vec<String>,
    /// The image's bytes.
    pub image: Vec<u8>,
}

impl Artifact {
    /// The first kernel's symbol: the only one of a single kernel's module.
    pub fn lowered_name(&self) -> &str {
        self.lowered_names.first().map_or("", String::as_str)
    }

    /// `kind (1 byte) | names length (u32 LE) | names, one per line | image`. A lowered name is
    /// a C++ symbol, which never holds a newline.
    pub fn encode(&self) -> Vec<u8> {
        let names = self.lowered_names.join("\n");
        let mut out = Vec::with_capacity(5 + names.len() + self.image.len());
        out.push(match self.kind {
            ImageKind::Cubin => 0,
            ImageKind::Ptx => 1,
        });
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        out.extend_from_slice(names.as_bytes());
        out.extend_from_slice(&self.image);
        out
    }

    /// The inverse of [`Artifact::encode`]; `None` for anything it did not produce.
    pub fn decode(bytes: &[u8]) -> Option<Artifact> {
        let (&kind, rest) = bytes.split_first()?;
        let kind = match kind {
            0 => ImageKind::Cubin,
            1 => ImageKind::Ptx,
            _ => return None,
        };
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let name = rest.get(4..4usize.checked_add(len)?)?;
        let names = std::str::from_utf8(name).ok()?;
        let lowered_names: Vec<String> = names.split('\n').map(str::to_string).collect();
        let image = rest.get(4 + len..)?.to_vec();
        if lowered_names.iter().any(String::is_empty) || image.is_empty() {
            return None;
        }
        Some(Artifact {
            kind,
            lowered_names,
            image,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let a = Artifact {
            kind: ImageKind::Ptx,
            lowered_names: vec!["_Z1kPf".into(), "k2".into()],
            image: vec![1, 2, 3],
        };
        assert_eq!(Artifact::decode(&a.encode()), Some(a.clone()));
        let bytes = a.encode();
        for cut in 0..bytes.len() - 3 {
            assert_eq!(Artifact::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        assert_eq!(Artifact::decode(&[7, 0, 0, 0, 0]), None);
        assert_eq!(Artifact::decode(&[0, 255, 255, 255, 255, 1]), None);
    }
}
