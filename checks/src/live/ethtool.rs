//! SIOCETHTOOL on this machine: the ioctls; their answers are parsed by
//! [`crate::facts::ethtool`].
use crate::facts::ethtool::parse::bad;
use crate::facts::ethtool::{
    errno_error, parse_channels, parse_drvinfo, parse_gfeatures, parse_gstrings, parse_rings,
    parse_sset_info, parse_stats, Channels, DrvInfo, Feature, Reported, Rings, CHANNELS_LEN,
    DRVINFO_LEN, ETH_GSTRING_LEN, ETH_SS_FEATURES, ETH_SS_STATS, FEATURE_BLOCK_LEN, GFEATURES_HDR,
    GSTRINGS_HDR, RINGS_LEN, SSET_INFO_HDR, STATS_HDR,
};
use crate::facts::ProbeError;
use nix::errno::Errno;
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
use std::os::fd::{AsRawFd, OwnedFd};

nix::ioctl_readwrite_bad!(siocethtool, libc::SIOCETHTOOL, libc::ifreq);

const ETHTOOL_GDRVINFO: u32 = 0x03;

const ETHTOOL_GRINGPARAM: u32 = 0x10;

const ETHTOOL_GSTRINGS: u32 = 0x1b;

const ETHTOOL_GSTATS: u32 = 0x1d;

const ETHTOOL_GSSET_INFO: u32 = 0x37;

const ETHTOOL_GFEATURES: u32 = 0x3a;

const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// The socket the ioctls go through. Opened once per check run; the
/// interfaces it sees are those of this process's network namespace.
pub struct Ethtool {
    fd: OwnedFd,
}

impl Ethtool {
    pub fn open() -> Result<Ethtool, ProbeError> {
        let fd = socket(
            AddressFamily::Inet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| {
            ProbeError::Other(format!("socket(AF_INET, SOCK_DGRAM) for SIOCETHTOOL: {e}"))
        })?;
        Ok(Ethtool { fd })
    }

    /// One SIOCETHTOOL call with `buf` as the command struct. EOPNOTSUPP is
    /// an answer ([`Reported::NotReported`]); other errnos are returned raw
    /// so that EFAULT (the guard page) can be retried; see [`errno_error`].
    fn call_raw(&self, ifname: &str, buf: &mut GuardedBuf) -> Result<Reported<()>, Errno> {
        if crate::validate::interface(ifname).is_err() {
            return Err(Errno::EINVAL);
        }
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(ifname.as_bytes()) {
            *dst = *src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = buf.as_mut_ptr().cast();
        // SAFETY: `ifr` names a NUL-terminated interface (validated: at
        // most 15 bytes in a zeroed 16-byte array) and points at `buf`, which
        // lives through the call and is sized for the command; a write past
        // it hits the guard page and returns EFAULT.
        match unsafe { siocethtool(self.fd.as_raw_fd(), &mut ifr) } {
            Ok(_) => Ok(Reported::Yes(())),
            Err(Errno::EOPNOTSUPP) => Ok(Reported::NotReported),
            Err(e) => Err(e),
        }
    }

    fn call(
        &self,
        ifname: &str,
        what: &str,
        buf: &mut GuardedBuf,
    ) -> Result<Reported<()>, ProbeError> {
        self.call_raw(ifname, buf)
            .map_err(|e| errno_error(e, ifname, what))
    }

    /// A fixed-size GET: write `cmd`, call, return the bytes.
    fn get_fixed(
        &self,
        ifname: &str,
        what: &str,
        cmd: u32,
        len: usize,
    ) -> Result<Reported<Vec<u8>>, ProbeError> {
        let mut buf = GuardedBuf::new(len)?;
        buf.bytes_mut()[..4].copy_from_slice(&cmd.to_ne_bytes());
        Ok(match self.call(ifname, what, &mut buf)? {
            Reported::Yes(()) => Reported::Yes(buf.bytes().to_vec()),
            Reported::NotReported => Reported::NotReported,
        })
    }

    /// `ethtool -i`.
    pub fn drvinfo(&self, ifname: &str) -> Result<Reported<DrvInfo>, ProbeError> {
        match self.get_fixed(ifname, "driver info", ETHTOOL_GDRVINFO, DRVINFO_LEN)? {
            Reported::Yes(b) => parse_drvinfo(&b)
                .map(Reported::Yes)
                .map_err(|e| bad("ethtool_drvinfo", ifname, e)),
            Reported::NotReported => Ok(Reported::NotReported),
        }
    }

    /// `ethtool -l`.
    pub fn channels(&self, ifname: &str) -> Result<Reported<Channels>, ProbeError> {
        match self.get_fixed(ifname, "channels", ETHTOOL_GCHANNELS, CHANNELS_LEN)? {
            Reported::Yes(b) => parse_channels(&b)
                .map(Reported::Yes)
                .map_err(|e| bad("ethtool_channels", ifname, e)),
            Reported::NotReported => Ok(Reported::NotReported),
        }
    }

    /// `ethtool -g`.
    pub fn rings(&self, ifname: &str) -> Result<Reported<Rings>, ProbeError> {
        match self.get_fixed(ifname, "ring sizes", ETHTOOL_GRINGPARAM, RINGS_LEN)? {
            Reported::Yes(b) => parse_rings(&b)
                .map(Reported::Yes)
                .map_err(|e| bad("ethtool_ringparam", ifname, e)),
            Reported::NotReported => Ok(Reported::NotReported),
        }
    }

    /// How many strings the driver has in `set` (ETHTOOL_GSSET_INFO).
    pub fn set_len(&self, ifname: &str, set: u32) -> Result<Reported<usize>, ProbeError> {
        let mut buf = GuardedBuf::new(SSET_INFO_HDR + 4)?;
        {
            let b = buf.bytes_mut();
            b[..4].copy_from_slice(&ETHTOOL_GSSET_INFO.to_ne_bytes());
            b[8..16].copy_from_slice(&(1u64 << set).to_ne_bytes());
        }
        if self.call(ifname, "string set sizes", &mut buf)? == Reported::NotReported {
            return Ok(Reported::NotReported);
        }
        match parse_sset_info(buf.bytes(), set).map_err(|e| bad("ethtool_sset_info", ifname, e))? {
            Some(n) => Ok(Reported::Yes(n)),
            None => Ok(Reported::NotReported),
        }
    }

    /// The names in string set `set` (ETHTOOL_GSTRINGS).
    pub fn strings(&self, ifname: &str, set: u32) -> Result<Reported<Vec<String>>, ProbeError> {
        // The count can change between the two calls; an overrun is EFAULT
        // at the guard page, and one retry with the new count follows.
        for attempt in 0..2 {
            let n = match self.set_len(ifname, set)? {
                Reported::Yes(n) => n,
                Reported::NotReported => return Ok(Reported::NotReported),
            };
            let mut buf = GuardedBuf::new(GSTRINGS_HDR + n * ETH_GSTRING_LEN)?;
            {
                let b = buf.bytes_mut();
                b[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
                b[4..8].copy_from_slice(&set.to_ne_bytes());
                b[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
            }
            match self.call_raw(ifname, &mut buf) {
                Ok(Reported::Yes(())) => {}
                Ok(Reported::NotReported) => return Ok(Reported::NotReported),
                Err(Errno::EFAULT) if attempt == 0 => continue,
                Err(e) => return Err(errno_error(e, ifname, "string set")),
            }
            return parse_gstrings(buf.bytes())
                .map(Reported::Yes)
                .map_err(|e| bad("ethtool_gstrings", ifname, e));
        }
        Err(ProbeError::Other(format!(
            "{ifname}: string set {set} kept changing size"
        )))
    }

    /// `ethtool -k`: every feature by the kernel's name.
    pub fn features(&self, ifname: &str) -> Result<Reported<Vec<Feature>>, ProbeError> {
        let names = match self.strings(ifname, ETH_SS_FEATURES)? {
            Reported::Yes(n) => n,
            Reported::NotReported => return Ok(Reported::NotReported),
        };
        let blocks = names.len().div_ceil(32);
        let mut buf = GuardedBuf::new(GFEATURES_HDR + blocks * FEATURE_BLOCK_LEN)?;
        {
            let b = buf.bytes_mut();
            b[..4].copy_from_slice(&ETHTOOL_GFEATURES.to_ne_bytes());
            b[4..8].copy_from_slice(&(blocks as u32).to_ne_bytes());
        }
        if self.call(ifname, "features", &mut buf)? == Reported::NotReported {
            return Ok(Reported::NotReported);
        }
        parse_gfeatures(buf.bytes(), &names)
            .map(Reported::Yes)
            .map_err(|e| bad("ethtool_gfeatures", ifname, e))
    }

    /// `ethtool -S`: driver statistics by name.
    pub fn stats(&self, ifname: &str) -> Result<Reported<Vec<(String, u64)>>, ProbeError> {
        for attempt in 0..2 {
            let names = match self.strings(ifname, ETH_SS_STATS)? {
                Reported::Yes(n) => n,
                Reported::NotReported => return Ok(Reported::NotReported),
            };
            let mut buf = GuardedBuf::new(STATS_HDR + names.len() * 8)?;
            {
                let b = buf.bytes_mut();
                b[..4].copy_from_slice(&ETHTOOL_GSTATS.to_ne_bytes());
                b[4..8].copy_from_slice(&(names.len() as u32).to_ne_bytes());
            }
            match self.call_raw(ifname, &mut buf) {
                Ok(Reported::Yes(())) => {}
                Ok(Reported::NotReported) => return Ok(Reported::NotReported),
                Err(Errno::EFAULT) if attempt == 0 => continue,
                Err(e) => return Err(errno_error(e, ifname, "statistics")),
            }
            let values = parse_stats(buf.bytes()).map_err(|e| bad("ethtool_stats", ifname, e))?;
            if values.len() != names.len() {
                // The set changed between the two reads; names would be
                // paired with the wrong values.
                continue;
            }
            return Ok(Reported::Yes(names.into_iter().zip(values).collect()));
        }
        Err(ProbeError::Other(format!(
            "{ifname}: driver statistics kept changing size"
        )))
    }
}

/// A buffer for the kernel that ends exactly at a PROT_NONE guard page, so
/// that a kernel write past `len` faults (EFAULT) instead of corrupting
/// this process's heap.
struct GuardedBuf {
    map: *mut libc::c_void,
    map_len: usize,
    offset: usize,
    len: usize,
}

impl GuardedBuf {
    fn new(len: usize) -> Result<GuardedBuf, ProbeError> {
        // SAFETY: sysconf has no preconditions.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            p if p > 0 => p as usize,
            _ => 4096,
        };
        let data_pages = len.div_ceil(page).max(1);
        let map_len = (data_pages + 1) * page;
        // SAFETY: an anonymous private mapping with no address hint.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(ProbeError::Other(format!(
                "mmap of {map_len} bytes for an ethtool buffer: {}",
                std::io::Error::last_os_error()
            )));
        }
        let buf = GuardedBuf {
            map,
            map_len,
            offset: data_pages * page - len,
            len,
        };
        // SAFETY: the last page lies inside the mapping just created.
        let rc = unsafe {
            libc::mprotect(
                map.cast::<u8>().add(data_pages * page).cast(),
                page,
                libc::PROT_NONE,
            )
        };
        if rc != 0 {
            return Err(ProbeError::Other(format!(
                "mprotect of an ethtool guard page: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(buf)
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: offset < data_pages * page, inside the mapping.
        unsafe { self.map.cast::<u8>().add(self.offset) }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: [offset, offset + len) is readable, zero-initialised by
        // mmap, and owned by self for its lifetime.
        unsafe { std::slice::from_raw_parts(self.map.cast::<u8>().add(self.offset), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and &mut self makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.map.cast::<u8>().add(self.offset), self.len) }
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping created in `new`.
        unsafe {
            libc::munmap(self.map, self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::ethtool::{parse_features, parse_strings};

    fn ne32(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn strings_are_nul_padded_fields() {
        let mut data = vec![0u8; 3 * ETH_GSTRING_LEN];
        data[..11].copy_from_slice(b"tx_packets\0");
        data[32..46].copy_from_slice(b"tx_tso_packets");
        // a name that fills the whole field without a NUL
        data[64..96].copy_from_slice(&[b'x'; 32]);
        let names = parse_strings(&data, 3).unwrap();
        assert_eq!(names, ["tx_packets", "tx_tso_packets", &"x".repeat(32)]);
        assert!(parse_strings(&data, 4).is_err());
        assert!(parse_strings(&data, usize::MAX).is_err());
        assert_eq!(parse_strings(&[], 0).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn gstrings_header_gives_the_count() {
        let mut b = ne32(&[ETHTOOL_GSTRINGS, ETH_SS_STATS, 1]);
        let mut name = [0u8; 32];
        name[..7].copy_from_slice(b"rx_drop");
        b.extend_from_slice(&name);
        assert_eq!(parse_gstrings(&b).unwrap(), ["rx_drop"]);
        assert!(parse_gstrings(&b[..20]).is_err());
        assert!(parse_gstrings(&b[..5]).is_err());
    }

    #[test]
    fn stats_are_native_u64s() {
        let mut b = ne32(&[ETHTOOL_GSTATS, 2]);
        b.extend_from_slice(&163_694_993u64.to_ne_bytes());
        b.extend_from_slice(&4_165_267u64.to_ne_bytes());
        assert_eq!(parse_stats(&b).unwrap(), [163_694_993, 4_165_267]);
        assert!(parse_stats(&b[..20]).is_err());
        let huge = ne32(&[ETHTOOL_GSTATS, u32::MAX]);
        assert!(parse_stats(&huge).is_err());
    }

    #[test]
    fn features_map_bits_to_names_like_ethtool_k() {
        // 33 names so that a second block is needed; feature 32 is in block 1.
        let mut names: Vec<String> = (0..33).map(|i| format!("f{i}")).collect();
        names[2] = String::new(); // an unused bit
                                  // block 0: available, requested, active, never_changed
        let mut blocks = ne32(&[0b0011, 0b1001, 0b0001, 0b1000]);
        blocks.extend(ne32(&[1, 1, 0, 0]));
        let f = parse_features(&blocks, &names).unwrap();
        assert_eq!(f.len(), 32);
        assert_eq!(f[0].state(), "on");
        assert_eq!(f[1].state(), "off");
        assert_eq!(f[2].name, "f3");
        assert_eq!(f[2].state(), "off [fixed]");
        let f32 = f.iter().find(|x| x.name == "f32").unwrap();
        assert_eq!(f32.state(), "off [requested on]");
        assert!(parse_features(&blocks[..16], &names).is_err());
        let on_fixed = Feature {
            name: "x".into(),
            available: false,
            requested: true,
            active: true,
            never_changed: false,
        };
        assert_eq!(on_fixed.state(), "on [fixed]");
    }

    #[test]
    fn sset_info_reads_the_count_for_the_asked_set() {
        let mut b = ne32(&[ETHTOOL_GSSET_INFO, 0]);
        b.extend_from_slice(&(1u64 << ETH_SS_FEATURES).to_ne_bytes());
        b.extend(ne32(&[66]));
        assert_eq!(parse_sset_info(&b, ETH_SS_FEATURES).unwrap(), Some(66));
        let mut none = ne32(&[ETHTOOL_GSSET_INFO, 0]);
        none.extend_from_slice(&0u64.to_ne_bytes());
        none.extend(ne32(&[0]));
        assert_eq!(parse_sset_info(&none, ETH_SS_STATS).unwrap(), None);
        assert!(parse_sset_info(&b[..12], ETH_SS_FEATURES).is_err());
        assert!(parse_sset_info(&b, 64).is_err());
    }

    #[test]
    fn channels_count_queue_pairs() {
        // captured on Debian 12, kernel 6.18: a veth created with 4 queues
        // each way, then `ethtool -L va rx 1 tx 1`.
        let c = parse_channels(&ne32(&[ETHTOOL_GCHANNELS, 4, 4, 0, 0, 1, 1, 0, 0])).unwrap();
        assert_eq!((c.current_pairs(), c.max_pairs()), (1, 4));
        // mlx5 reports combined channels only.
        let c = parse_channels(&ne32(&[ETHTOOL_GCHANNELS, 0, 0, 0, 63, 0, 0, 0, 8])).unwrap();
        assert_eq!((c.current_pairs(), c.max_pairs()), (8, 63));
        // ice (E810, 6.1, testdata/hw/ice): rx, tx and combined maxima are
        // the same 16 queue pairs, not 32.
        let c = parse_channels(&ne32(&[ETHTOOL_GCHANNELS, 16, 16, 1, 16, 0, 0, 1, 4])).unwrap();
        assert_eq!((c.current_pairs(), c.max_pairs()), (4, 16));
        assert!(parse_channels(&[0; 8]).is_err());
    }

    #[test]
    fn rings_and_drvinfo_layouts() {
        let r = parse_rings(&ne32(&[
            ETHTOOL_GRINGPARAM,
            8192,
            0,
            0,
            8192,
            256,
            0,
            0,
            1024,
        ]))
        .unwrap();
        assert_eq!((r.rx, r.rx_max, r.tx, r.tx_max), (256, 8192, 1024, 8192));
        let mut b = vec![0u8; DRVINFO_LEN];
        b[4..8].copy_from_slice(b"mlx5");
        b[68..76].copy_from_slice(b"16.35.20");
        b[100..112].copy_from_slice(b"0000:41:00.0");
        b[180..184].copy_from_slice(&1234u32.to_ne_bytes());
        let d = parse_drvinfo(&b).unwrap();
        assert_eq!(d.driver, "mlx5");
        assert_eq!(d.fw_version, "16.35.20");
        assert_eq!(d.bus_info, "0000:41:00.0");
        assert_eq!(d.n_stats, 1234);
        assert!(parse_drvinfo(&b[..100]).is_err());
    }

    #[test]
    fn guarded_buffer_is_zeroed_and_bounded() {
        let mut g = GuardedBuf::new(100).unwrap();
        assert_eq!(g.bytes().len(), 100);
        assert!(g.bytes().iter().all(|&b| b == 0));
        g.bytes_mut()[99] = 7;
        assert_eq!(g.bytes()[99], 7);
    }

    #[test]
    fn a_kernel_write_past_the_buffer_faults_at_the_guard_page() {
        // The kernel writes as many feature names as it has, whatever the
        // caller's `len` says: size the buffer one name short on purpose.
        let e = Ethtool::open().unwrap();
        let n = e.set_len("lo", ETH_SS_FEATURES).unwrap().ok().unwrap();
        let mut buf = GuardedBuf::new(GSTRINGS_HDR + (n - 1) * ETH_GSTRING_LEN).unwrap();
        buf.bytes_mut()[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
        buf.bytes_mut()[4..8].copy_from_slice(&ETH_SS_FEATURES.to_ne_bytes());
        assert_eq!(e.call_raw("lo", &mut buf), Err(Errno::EFAULT));
        // Sized right, the same call succeeds.
        assert_eq!(
            e.strings("lo", ETH_SS_FEATURES)
                .unwrap()
                .ok()
                .unwrap()
                .len(),
            n
        );
    }

    #[test]
    fn loopback_features_match_ethtool_k() {
        // ethtool is the independent oracle (installed in CI).
        let out = match std::process::Command::new("ethtool")
            .args(["-k", "lo"])
            .output()
        {
            Ok(o) if o.status.success() => o,
            _ if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("ethtool must be installed in CI")
            }
            _ => return,
        };
        let oracle = crate::hw_captures::ethtool_k(&String::from_utf8_lossy(&out.stdout));
        let ours = Ethtool::open()
            .unwrap()
            .features("lo")
            .unwrap()
            .ok()
            .unwrap();
        let mut compared = 0;
        for f in &ours {
            if let Some(v) = oracle.get(&f.name) {
                assert_eq!(&f.state(), v, "{}", f.name);
                compared += 1;
            }
        }
        assert!(
            compared >= 40,
            "only {compared} features compared with ethtool -k"
        );
    }

    #[test]
    fn errnos_map_to_the_verdicts_they_imply() {
        match errno_error(Errno::EPERM, "eth0", "statistics") {
            ProbeError::PermissionDenied { needs, .. } => {
                assert!(needs.starts_with("CAP_NET_ADMIN"), "{needs}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            errno_error(Errno::ENODEV, "eth0", "features"),
            ProbeError::NotFound(_)
        ));
        assert!(matches!(
            errno_error(Errno::EIO, "eth0", "features"),
            ProbeError::Other(_)
        ));
        let f: crate::finding::Finding = errno_error(Errno::EACCES, "eth0", "rings").into();
        assert_eq!(f.status, crate::finding::Status::Skip);
    }

    // Found by `fuzz/run.sh ethtool_stats` (issue 8): a driver reporting
    // u32::MAX channels overflowed the pair count (a panic in debug builds,
    // a wrapped count in release).
    #[test]
    fn huge_channel_counts_saturate() {
        let mut b = vec![0u8; CHANNELS_LEN];
        for i in 1..9 {
            b[4 * i..4 * i + 4].copy_from_slice(&u32::MAX.to_ne_bytes());
        }
        let c = parse_channels(&b).unwrap();
        assert_eq!(c.current_pairs(), u32::MAX);
        assert_eq!(c.max_pairs(), u32::MAX);
    }

    #[test]
    fn loopback_answers_through_the_ioctl() {
        let e = Ethtool::open().unwrap();
        let f = e
            .features("lo")
            .unwrap()
            .ok()
            .expect("every kernel reports lo's features");
        assert!(f.len() > 30, "{f:?}");
        assert!(f.iter().any(|x| x.name == "tx-udp_tnl-segmentation"));
        let d = e.drvinfo("lo").unwrap();
        assert!(matches!(d, Reported::Yes(_) | Reported::NotReported));
        assert!(matches!(
            e.channels("nosuchdev0"),
            Err(ProbeError::NotFound(_))
        ));
        assert!(e.features("a/b").is_err());
    }
}
