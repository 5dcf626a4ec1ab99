//! `Debug` for [`Tensor`]: dtype, shape, device, strides when not contiguous, and the first few
//! elements of a cpu tensor.

use std::fmt;

use super::{with_dtype, Element, Tensor};

/// How many elements `Debug` prints before `...`.
const SHOWN: usize = 8;

impl Tensor {
    /// The first elements (up to `SHOWN`, one more to know whether to print `...`), or a note
    /// saying why they cannot be shown.
    fn preview(&self) -> Result<String, String> {
        if let Some(t) = self.adopted().map_err(|e| format!("<{e}>"))? {
            return t.preview();
        }
        let guard = self
            .storage()
            .read("Debug")
            .map_err(|_| "<busy>".to_string())?;
        let Some((range, lo)) = self.byte_span() else {
            return Ok("[]".to_string());
        };
        let size = self.dtype().size();
        let bytes = &guard.bytes()[range];
        let mut out = String::from("[");
        for (i, o) in self.layout().offsets().take(SHOWN + 1).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if i == SHOWN {
                out.push_str("...");
                break;
            }
            let at = (o - lo) * size;
            let one = &bytes[at..at + size];
            let shown = with_dtype!(self.dtype(), T => {
                bytemuck::checked::try_pod_read_unaligned::<T>(one)
                    .map(Element::display)
            });
            out.push_str(&shown.unwrap_or_else(|_| "<invalid>".to_string()));
        }
        out.push(']');
        Ok(out)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(dtype={}, shape={:?}, device={}",
            self.dtype(),
            self.shape(),
            self.device()
        )?;
        if !self.is_contiguous() {
            write!(
                f,
                ", strides={:?}, offset={}",
                self.strides(),
                self.offset()
            )?;
        }
        if self.device().is_cpu() {
            match self.preview() {
                Ok(data) => write!(f, ", data={data}")?,
                Err(note) => write!(f, ", data={note}")?,
            }
        }
        f.write_str(")")
    }
}
