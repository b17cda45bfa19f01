//! Where each driver keeps its TSO descriptor counters (`ethtool -S`
//! names), and the generic names tried for an unknown driver.

/// What a driver calls its transmit counters in `ethtool -S`, learned from
/// the real captures in `checks/testdata/hw/` (README there for sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverCounters {
    /// The driver's name as `ethtool -i` reports it.
    pub driver: &'static str,
    /// Counters of TSO descriptors (super-packets handed to the NIC), by
    /// name as the driver spells it (leading blanks trimmed); every entry
    /// of each name is summed. Empty: the driver counts none.
    pub tso: &'static [&'static str],
    /// How the driver names its per-queue transmit packet counters, for
    /// the operator (`N` is the queue).
    pub tx_queue_packets: &'static str,
}

/// Drivers whose statistics are known.
pub const DRIVER_COUNTERS: &[DriverCounters] = &[
    // Plain and encapsulated (geneve, vxlan) TSO are counted apart; both are
    // also kept per queue (txN_tso_packets), which must not be added again.
    DriverCounters {
        driver: "mlx5_core",
        tso: &["tx_tso_packets", "tx_tso_inner_packets"],
        tx_queue_packets: "txN_packets",
    },
    DriverCounters {
        driver: "mlx4_en",
        tso: &["tso_packets"],
        tx_queue_packets: "txN_packets",
    },
    // sfc's tx_tso_packets counts the segments TSO produced (wire packets);
    // the descriptors are tx_tso_bursts.
    DriverCounters {
        driver: "sfc",
        tso: &["tx_tso_bursts"],
        tx_queue_packets: "tx-N.tx_packets",
    },
    // Repeated under each "Tx Queue#: N" heading.
    DriverCounters {
        driver: "vmxnet3",
        tso: &["TSO pkts tx"],
        tx_queue_packets: "ucast pkts tx (under Tx Queue#: N)",
    },
    // TSCTC: TCP segmentation contexts transmitted, one per TSO packet.
    DriverCounters {
        driver: "igb",
        tso: &["tx_tcp_seg_good"],
        tx_queue_packets: "tx_queue_N_packets",
    },
    DriverCounters {
        driver: "e1000e",
        tso: &["tx_tcp_seg_good"],
        tx_queue_packets: "tx_packets",
    },
    DriverCounters {
        driver: "ice",
        tso: &[],
        tx_queue_packets: "tx_queue_N_packets",
    },
    // Older i40e: tx-N.tx_packets; 2.3.2-k and later: tx-N.packets.
    DriverCounters {
        driver: "i40e",
        tso: &[],
        tx_queue_packets: "tx-N.packets, tx-N.tx_packets before 2.3.2-k",
    },
    DriverCounters {
        driver: "ixgbe",
        tso: &[],
        tx_queue_packets: "tx_queue_N_packets",
    },
    DriverCounters {
        driver: "bnxt_en",
        tso: &[],
        tx_queue_packets: "[N]: tx_ucast_packets",
    },
    DriverCounters {
        driver: "ena",
        tso: &[],
        tx_queue_packets: "queue_N_tx_cnt",
    },
    DriverCounters {
        driver: "virtio_net",
        tso: &[],
        tx_queue_packets: "tx_queue_N_packets",
    },
];

/// TSO counter names recognised for a driver not in [`DRIVER_COUNTERS`]
/// (mlx5 and mlx4 spellings, which other drivers and representors reuse).
pub const GENERIC_TSO_COUNTERS: [&str; 3] =
    ["tx_tso_packets", "tx_tso_inner_packets", "tso_packets"];

/// The known counters of `driver`, if it is known.
pub fn driver_counters(driver: &str) -> Option<&'static DriverCounters> {
    DRIVER_COUNTERS.iter().find(|d| d.driver == driver)
}
