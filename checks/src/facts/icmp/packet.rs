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
    append_payload(&mut p, nonce, seq, len);
    p
}

/// [`payload`], appended to `out` (a packet after its ICMP header).
pub(crate) fn append_payload(out: &mut Vec<u8>, nonce: &[u8; NONCE_LEN], seq: u16, len: usize) {
    out.reserve(len);
    out.extend_from_slice(&nonce[..len.min(NONCE_LEN)]);
    let period = pattern(seq);
    let mut i = len.min(NONCE_LEN);
    while i < len {
        let at = i % PERIOD;
        let n = (PERIOD - at).min(len - i);
        out.extend_from_slice(&period[at..at + n]);
        i += n;
    }
}

/// The pattern repeats every 256 bytes: `pattern_byte` keeps the low 8
/// bits of `131·i + 7·seq`, which depend on `i` only modulo 256.
const PERIOD: usize = 256;

/// One period of the pattern of probe `seq`: byte `k` is the pattern byte
/// of every offset `i` with `i % 256 == k`.
fn pattern(seq: u16) -> [u8; PERIOD] {
    std::array::from_fn(|k| pattern_byte(seq, k))
}

pub(crate) fn pattern_byte(seq: u16, i: usize) -> u8 {
    (i as u32)
        .wrapping_mul(131)
        .wrapping_add(u32::from(seq).wrapping_mul(7)) as u8
}

pub(crate) fn payload_matches(nonce: &[u8; NONCE_LEN], seq: u16, data: &[u8]) -> bool {
    if data.len() < NONCE_LEN || data[..NONCE_LEN] != nonce[..] {
        return false;
    }
    let period = pattern(seq);
    let mut i = NONCE_LEN;
    while i < data.len() {
        let at = i % PERIOD;
        let n = (PERIOD - at).min(data.len() - i);
        if data[i..i + n] != period[at..at + n] {
            return false;
        }
        i += n;
    }
    true
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The pattern byte by byte, as the payload was first written: the
    /// oracle of the period copies.
    fn bytewise(nonce: &[u8; NONCE_LEN], seq: u16, len: usize) -> Vec<u8> {
        let mut p = nonce[..len.min(NONCE_LEN)].to_vec();
        for i in p.len()..len {
            p.push(pattern_byte(seq, i));
        }
        p
    }

    #[test]
    fn the_payload_is_the_pattern_byte_by_byte() {
        let nonce = *b"\x01spxrun!";
        for seq in [0, 1, 7, 255, 256, 40_000, u16::MAX] {
            for len in [0, 1, 7, 8, 9, 255, 256, 263, 264, 265, 1472, 8972, 65_507] {
                let want = bytewise(&nonce, seq, len);
                assert_eq!(payload(&nonce, seq, len), want, "seq {seq} len {len}");
                let mut pkt = vec![8, 0, 0, 0];
                append_payload(&mut pkt, &nonce, seq, len);
                assert_eq!(&pkt[4..], &want[..]);
                assert_eq!(payload_matches(&nonce, seq, &want), len >= NONCE_LEN);
                if len > NONCE_LEN {
                    let mut bad = want.clone();
                    bad[len - 1] ^= 0x80;
                    assert!(!payload_matches(&nonce, seq, &bad), "seq {seq} len {len}");
                    // Cut short, the rest still matches: the length is
                    // judged by the driver, not here.
                    assert!(payload_matches(&nonce, seq, &want[..len - 1]));
                }
            }
        }
        assert!(!payload_matches(&nonce, 1, &bytewise(&nonce, 2, 300)));
    }
}
