//! The bytes of one entry: an 80-byte header, then the payload (an encoded [`Artifact`]).
//!
//! `magic (8) | cache key (32) | payload length (u64 LE) | SHA-256 of the payload (32)`. The
//! key binds the entry to its file name, so an entry copied onto another key's path is refused
//! rather than served; the length and hash catch truncation and corruption.

use opbox_codegen::cuda::CacheKey;
use sha2::{Digest, Sha256};

use crate::backend::cuda::artifact::Artifact;

/// Version 2 added the key; a version 1 entry reads as a foreign file and is rebuilt.
const MAGIC: &[u8; 8] = b"OPBOXK\x00\x02";
pub(super) const HEADER: usize = 8 + 32 + 8 + 32;
/// No NVRTC image comes near this; a larger entry (or a header claiming one) is not read.
pub(super) const MAX_PAYLOAD: u64 = 512 << 20;

pub(super) fn encode(key: &CacheKey, artifact: &Artifact) -> Vec<u8> {
    let payload = artifact.encode();
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&payload));
    out.extend_from_slice(&payload);
    out
}

/// A header that belongs to `key`: the payload length it announces.
pub(super) fn check_header(header: &[u8; HEADER], key: &CacheKey) -> Result<u64, String> {
    if &header[..8] != MAGIC {
        return Err("not an opbox kernel entry (bad magic)".into());
    }
    if header[8..40] != key.0 {
        return Err("the entry belongs to another cache key".into());
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[40..48]);
    let len = u64::from_le_bytes(len);
    if len > MAX_PAYLOAD {
        return Err(format!(
            "header says the payload is {len} bytes, over the {MAX_PAYLOAD}-byte limit"
        ));
    }
    Ok(len)
}

/// The payload under a header [`check_header`] accepted.
pub(super) fn decode_payload(header: &[u8; HEADER], payload: &[u8]) -> Result<Artifact, String> {
    if Sha256::digest(payload).as_slice() != &header[48..] {
        return Err("payload hash mismatch".into());
    }
    Artifact::decode(payload).ok_or_else(|| "payload does not decode".into())
}
