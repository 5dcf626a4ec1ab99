//! A compiled kernel as the caches hold it: the image NVRTC produced and the symbol to load.

/// What the image is: a cubin for one exact `sm_XX`, or PTX the driver JIT-compiles on load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    Cubin,
    Ptx,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub kind: ImageKind,
    /// The entry's symbol in the image (NVRTC's lowered name of the name expression).
    pub lowered_name: String,
    pub image: Vec<u8>,
}

impl Artifact {
    /// `kind (1 byte) | name length (u32 LE) | name | image`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5 + self.lowered_name.len() + self.image.len());
        out.push(match self.kind {
            ImageKind::Cubin => 0,
            ImageKind::Ptx => 1,
        });
        out.extend_from_slice(&(self.lowered_name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.lowered_name.as_bytes());
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
        let lowered_name = String::from_utf8(name.to_vec()).ok()?;
        let image = rest.get(4 + len..)?.to_vec();
        if lowered_name.is_empty() || image.is_empty() {
            return None;
        }
        Some(Artifact {
            kind,
            lowered_name,
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
            lowered_name: "_Z1kPf".into(),
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
