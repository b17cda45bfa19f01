//! The echo payload: a run nonce, then a pattern that depends on the
//! sequence number, so a corrupted, truncated or foreign reply is never
//! taken for an answer; and the RFC 1071 checksum.

/// Bytes at the start of every payload that identify this run.
pub(crate) const NONCE_LEN: usize = 8;

/// The payload of probe `seq` of `len` bytes: the run's nonce, then a
/// pattern that depends on the sequence number and the offset, so a
/// truncated, corrupted or foreign reply is recognised.
pub fn payload(nonce: &[u8; NONCE_LEN], seq: u16, len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(len);
    p.extend_from_slice(&nonce[..len.min(NONCE_LEN)]);
    for i in p.len()..len {
        p.push(pattern_byte(seq, i));
    }
    p
}

pub(crate) fn pattern_byte(seq: u16, i: usize) -> u8 {
    (i as u32)
        .wrapping_mul(131)
        .wrapping_add(u32::from(seq).wrapping_mul(7)) as u8
}

pub(crate) fn payload_matches(nonce: &[u8; NONCE_LEN], seq: u16, data: &[u8]) -> bool {
    data.len() >= NONCE_LEN
        && data[..NONCE_LEN] == nonce[..]
        && data[NONCE_LEN..]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern_byte(seq, i + NONCE_LEN))
}

/// RFC 1071 checksum.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: out is a live buffer of N bytes.
    let n = unsafe { libc::getrandom(out.as_mut_ptr() as *mut libc::c_void, N, 0) };
    if n != N as isize {
        // Fall back to the clock and pid: uniqueness, not secrecy, is needed.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        for (i, b) in out.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8;
        }
    }
    out
}
