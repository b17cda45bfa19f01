//! The seed documents' measured facts, written down once for every test
//! that judges them: the checks' unit tests feed them to `judge` as parsed
//! facts, and the replayed runs (`replayed_runs/`) answer a check's `run()`
//! with them as the files and answers a host would give. Two copies drift;
//! one cannot.
//!
//! Each fact names where it was measured: `performance-tuning` and
//! `nbd-performance` are the seed documents every check comes from.

/// performance-tuning §1: UDP buffers at the kernel default.
pub mod udp {
    /// The kernel's default `net.core.rmem_max` and `wmem_max` (208 KiB), as
    /// on the seed's broken cluster: quic-go's 7 MiB request gets 416 KiB.
    pub const DEFAULT_CEILING: u64 = 212_992;

    /// `Udp` `RcvbufErrors` of a node that had shed 80k datagrams since boot
    /// (the four nodes shed 80k–125k each)…
    pub const SHED_SINCE_BOOT: u64 = 80_000;

    /// …and was still dropping: this many more during the window.
    pub const SHED_IN_WINDOW: u64 = 750;

    /// quic-go's warning in spinifex-predastore's journal at the default
    /// ceiling.
    pub const QUIC_WARNING: &str = "failed to sufficiently increase receive buffer size (was: 208 kiB, wanted: 7168 kiB, got: 416 kiB)";
}

/// performance-tuning §2: the ESP funnel.
pub mod cpu {
    /// The receiving host's hardware threads.
    pub const THREADS: usize = 128;

    /// The one core that took the ESP work.
    pub const BUSIEST: usize = 37;

    /// One CPU's counters over the window: `(net_rx, busy, softirq, total)`,
    /// in ticks of 1/1000 s so that the percentages keep their decimals.
    pub type Ticks = (u64, u64, u64, u64);

    /// IPsec on, one second of 1000 ticks: core 37 97.4% busy, 71.8% of it
    /// softirq, the only core above 15% of 128; every counter zero at the
    /// window's start.
    pub fn esp_funnel() -> Vec<Ticks> {
        let mut cpus = vec![(20, 30, 2, 1_000); THREADS];
        cpus[BUSIEST] = (90_000, 974, 718, 1_000);
        cpus
    }
}

/// performance-tuning §3: a guest on IPsec with multiqueue (-12%).
pub mod tcp {
    /// The guest's TCP counters: `reordering:189`…
    pub const REORDERING: u64 = 189;

    /// …and `dsack_dups:116`.
    pub const DSACK_DUPS: u64 = 116;
}

/// nbd-performance's "Hive inner VM", before and after the fix, with the
/// VPC NIC as the daemon builds it (spinifex-facts.md).
pub mod qemu {
    /// One guest's names: its instance id (`0abc` in `i-0abc`, `tapeni-0abc`),
    /// its volume's socket and its VPC NIC's MAC.
    pub struct Guest<'a> {
        pub id: &'a str,
        pub volume: &'a str,
        pub mac: &'a str,
    }

    /// Before: no vhost, no queues, no host_mtu, no iothread, default
    /// cache, no num-queues.
    pub fn hive_before(g: &Guest) -> String {
        format!(
            "qemu-system-x86_64 -enable-kvm -cpu host -smp 2 -m 4096 \
             -netdev tap,id=net0,ifname=tapeni-{id},script=no,downscript=no \
             -device virtio-net-pci,netdev=net0,mac={mac} \
             -drive file=nbd:unix:/run/user/1000/nbd-vol-{vol}.sock,format=raw,if=none,media=disk,id=os \
             -device virtio-blk-pci,drive=os,bootindex=1 -M q35",
            id = g.id,
            mac = g.mac,
            vol = g.volume,
        )
    }

    /// After, for 2 vCPUs with IPsec off at 1500: an iothread, cache=none
    /// and num-queues for the disk; vhost, 2 queues, host_mtu 1442,
    /// rx_queue_size 1024, mq and 6 vectors for the NIC. `more` comes
    /// before the machine type (another NIC, a QMP monitor).
    pub fn hive_after(g: &Guest, more: &str) -> String {
        format!(
            "qemu-system-x86_64 -name guest=i-{id} -enable-kvm -cpu host -smp 2 -m 4096 \
             -object iothread,id=ioth-os \
             -drive file=nbd:unix:/run/user/1000/nbd-vol-{vol}.sock,format=raw,if=none,media=disk,id=os,cache=none \
             -device virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1 \
             -netdev tap,id=net0,ifname=tapeni-{id},script=no,downscript=no,vhost=on,queues=2 \
             -device virtio-net-pci,netdev=net0,mac={mac},host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6 \
             {more} -M q35",
            id = g.id,
            mac = g.mac,
            vol = g.volume,
        )
    }
}
