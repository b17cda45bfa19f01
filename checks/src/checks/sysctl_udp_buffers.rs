//! `sysctl.udp-buffers`: the kernel's ceiling on socket buffers.
//!
//! Predastore carries blob, meta and raft traffic over QUIC and quic-go asks
//! for a 7 MiB receive buffer. At the kernel default ceiling (208 KiB) it gets
//! 416 KiB and silently drops datagrams under load; on a cluster left at the
//! default the four nodes had shed 80k–125k datagrams each, QUIC streams
//! failed, erasure-coded writes failed, and two guests remounted their root
//! filesystems read-only. setup.sh's sysctl stage prevents this; this check
//! proves it ran and stuck.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::Finding;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::read::kernel_files::sysctl_u64;
use crate::spinifex;

/// `net.core.rmem_max` and `wmem_max` Spinifex requires: 16 MiB.
pub const REQUIRED: u64 = 16_777_216;
/// The receive buffer quic-go requests.
pub const QUIC_WANTS: u64 = 7 * 1024 * 1024;

pub struct UdpBuffers;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferCeilings {
    pub rmem_max: u64,
    pub wmem_max: u64,
}

crate::kinds! {
    /// What `sysctl.udp-buffers` can say.
    pub enum UdpBuffersKind for "sysctl.udp-buffers" {
        /// net.core.rmem_max and wmem_max are both at least 16 MiB (16777216).
        Ok = pass("ok"),
        /// rmem_max is below the 7 MiB quic-go asks for: it gets a smaller buffer and drops datagrams under load (guests lost root filesystems this way).
        QuicStarved = fail("quic-starved"),
        /// A ceiling is below the 16 MiB Spinifex requires, though quic-go gets its 7 MiB: setup.sh's sysctl stage did not run or was overridden.
        BelowRequired = fail("below-required"),
    }
}

static DECLARED: Declared = Declared::of::<UdpBuffersKind, UdpBuffersEvidence>();

/// What was read: the two ceilings and what Spinifex requires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpBuffersEvidence {
    pub rmem_max: u64,
    pub wmem_max: u64,
    pub required: u64,
}

static RMEM_MAX: MetricDef = MetricDef {
    name: "spx_doctor_udp_rmem_max_bytes",
    help: "net.core.rmem_max.",
    kind: MetricType::Gauge,
    labels: &[],
};
static WMEM_MAX: MetricDef = MetricDef {
    name: "spx_doctor_udp_wmem_max_bytes",
    help: "net.core.wmem_max.",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for UdpBuffersEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&RMEM_MAX, &WMEM_MAX];
    fn series(&self) -> Vec<Series> {
        vec![
            Series::of(&RMEM_MAX, self.rmem_max as f64),
            Series::of(&WMEM_MAX, self.wmem_max as f64),
        ]
    }
}

impl Check for UdpBuffers {
    fn id(&self) -> &'static str {
        "sysctl.udp-buffers"
    }

    fn title(&self) -> &'static str {
        "Socket buffer ceilings let QUIC have the 7 MiB it asks for"
    }

    fn explain(&self) -> &'static str {
        "Checks net.core.rmem_max and net.core.wmem_max against 16777216 (16 MiB).\n\
         \n\
         Why: Predastore carries blob, meta and raft traffic over QUIC, and quic-go \
         requests a 7 MiB UDP receive buffer. At the kernel default ceiling of 208 KiB \
         it gets 416 KiB and silently drops datagrams under load. On a cluster left at \
         the default, the four nodes had shed 80k-125k datagrams each to UdpRcvbufErrors. \
         Dropped datagrams fail QUIC streams, which fail erasure-coded shard writes, \
         which exhaust viperblock's retry budget and return EIO to the guest, whose ext4 \
         journal aborts and remounts read-only: two guests lost their root filesystems \
         this way. It does not make the cluster slow; it breaks it.\n\
         \n\
         Fix: put `net.core.rmem_max = 16777216` and `net.core.wmem_max = 16777216` in \
         /etc/sysctl.d/99-spinifex-net.conf (setup.sh's sysctl stage writes it) and run \
         `sysctl --system`. Pair with udp.rcvbuf-errors, which shows whether drops are \
         happening now."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let host = ctx.host();
        let read = || -> Result<BufferCeilings, crate::facts::ProbeError> {
            Ok(BufferCeilings {
                rmem_max: sysctl_u64(host, "net.core.rmem_max")?,
                wmem_max: sysctl_u64(host, "net.core.wmem_max")?,
            })
        };
        match read() {
            Ok(facts) => judge(facts),
            Err(e) => e.into(),
        }
    }
}

/// The verdict on two measured ceilings.
pub fn judge(facts: BufferCeilings) -> Finding {
    let low: Vec<String> = [("rmem_max", facts.rmem_max), ("wmem_max", facts.wmem_max)]
        .into_iter()
        .filter(|(_, v)| *v < REQUIRED)
        .map(|(name, v)| format!("net.core.{name} is {v}"))
        .collect();
    let finding = if low.is_empty() {
        Finding::new(
            UdpBuffersKind::Ok,
            format!(
                "rmem_max {} and wmem_max {} are at least {REQUIRED}",
                facts.rmem_max, facts.wmem_max
            ),
        )
    } else {
        too_low(&low, facts.rmem_max)
    };
    finding.evidence(&UdpBuffersEvidence {
        rmem_max: facts.rmem_max,
        wmem_max: facts.wmem_max,
        required: REQUIRED,
    })
}

/// `quic-starved` or `below-required`: the ceilings named in `low`.
fn too_low(low: &[String], rmem_max: u64) -> Finding {
    // The kernel caps SO_RCVBUF at rmem_max and doubles it for overhead.
    let granted_kib = rmem_max.min(QUIC_WANTS) * 2 / 1024;
    let (kind, consequence) = if granted_kib * 1024 < QUIC_WANTS {
        (
            UdpBuffersKind::QuicStarved,
            format!("quic-go asks for a 7 MiB receive buffer, gets {granted_kib} KiB, and drops datagrams under load (guests lost root filesystems this way)"),
        )
    } else {
        (
            UdpBuffersKind::BelowRequired,
            "setup.sh's sysctl stage did not run or something overrode it".to_owned(),
        )
    };
    Finding::new(
        kind,
        format!(
            "{}, below the {REQUIRED} Spinifex requires: {consequence}",
            low.join(" and ")
        ),
    )
    .fixes(remediation())
}

/// The fix, shared with udp.rcvbuf-errors.
pub fn remediation() -> [String; 2] {
    spinifex::persist_sysctls(&[
        ("net.core.rmem_max".to_owned(), REQUIRED),
        ("net.core.wmem_max".to_owned(), REQUIRED),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::seeds;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: BufferCeilings) -> Finding {
        crate::schema_check::valid("sysctl.udp-buffers", super::judge(facts))
    }

    #[test]
    fn kernel_default_fails_with_the_consequence() {
        // The kernel default ceiling, 208 KiB, as on the seed's broken cluster.
        let f = judge(BufferCeilings {
            rmem_max: seeds::udp::DEFAULT_CEILING,
            wmem_max: seeds::udp::DEFAULT_CEILING,
        });
        crate::snapshot::snapshot!("sysctl.udp-buffers", f);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.remediation[1], "sysctl --system");
        assert_eq!(f.evidence["required"], 16_777_216);
    }

    #[test]
    fn one_low_ceiling_is_enough_to_fail() {
        let f = judge(BufferCeilings {
            rmem_max: REQUIRED,
            wmem_max: REQUIRED - 1,
        });
        assert_eq!(f.status, Status::Fail);
        assert!(!f.summary.contains("rmem_max is"));
    }

    #[test]
    fn setup_sh_values_pass() {
        let f = judge(BufferCeilings {
            rmem_max: REQUIRED,
            wmem_max: 33_554_432,
        });
        assert_eq!(f.status, Status::Pass);
        assert!(f.remediation.is_empty());
    }
}
