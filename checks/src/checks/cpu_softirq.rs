//! `cpu.softirq`: does the receive work of the node land on one core?
//!
//! With IPsec on, ESP (IP protocol 50) has no ports, so RSS hashes only the
//! two node addresses and all traffic of a node pair is processed by one
//! core: measured 97.4% busy, 71.8% of it softirq, the only core above 15%
//! on a 128-thread box. Without ESP the outer UDP source port varies per
//! inner flow and 16 cores share NET_RX, none above 15%. Replaces the
//! tuning page's `awk '/NET_RX/…' /proc/softirqs` and `top` by eye.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::{Finding, SkipReason};
use crate::metrics::{MetricDef, MetricType, Series};
use crate::read::proc_stats::{read_cpu_counters, CpuCounters};
use crate::targets::underlay_nics;

pub struct CpuSoftirq;

/// A core this busy, mostly in softirq, is saturated by receive work.
pub const HOT_BUSY: f64 = 0.90;
/// "Most of it softirq": at least this share of the hot core's busy time.
pub const HOT_SOFTIRQ_OF_BUSY: f64 = 0.5;
/// The hot core takes at least this share of all NET_RX.
pub const HOT_NET_RX_SHARE: f64 = 0.25;
/// The other cores are lightly loaded when their median busy share is below.
pub const OTHERS_LIGHT: f64 = 0.5;
/// One core taking this share of all NET_RX is a funnel…
pub const CONCENTRATED: f64 = 0.5;
/// …on a machine with at least this many CPUs…
pub const MANY_CPUS: usize = 4;
/// …and real traffic (NET_RX softirqs per second, all CPUs).
pub const REAL_TRAFFIC_NET_RX: f64 = 1_000.0;

/// What the window measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub start: Vec<CpuCounters>,
    pub end: Vec<CpuCounters>,
    pub window: Duration,
    /// From the config: Some(true) IPsec wanted, Some(false) not, None no config.
    pub ipsec_wanted: Option<bool>,
    /// Underlay interfaces, for the commands in the remediation.
    pub interfaces: Vec<String>,
    /// The Spinifex config the remediation names (the one this run read).
    pub config_file: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuShare {
    pub cpu: u32,
    pub net_rx_per_sec: f64,
    pub softirq_share: f64,
    pub busy_share: f64,
}

crate::kinds! {
    /// What `cpu.softirq` can say.
    pub enum CpuSoftirqKind for "cpu.softirq" {
        /// Receive work is spread: no core saturated by it, none taking half of NET_RX under real traffic.
        Ok = pass("ok"),
        /// With IPsec on, one core is saturated by receive work: the ESP funnel (one SA's traffic cannot be spread; measured 97.4% busy, 71.8% softirq). Expected with IPsec; the fix is disabling it on trusted links.
        EspFunnel = fail("esp-funnel"),
        /// One core is saturated by receive work while the others idle, and IPsec is off (or unknown): the NIC's queues or interrupts are not spread.
        ReceiveFunnel = fail("receive-funnel"),
        /// One core takes at least half of all NET_RX under real traffic on a machine of 4 or more CPUs.
        Concentrated = warn("concentrated"),
    }
}

static DECLARED: Declared = Declared::of::<CpuSoftirqKind, CpuSoftirqEvidence>();

/// Per-CPU shares over the window and the numbers the verdict used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSoftirqEvidence {
    pub cpus: Vec<CpuShare>,
    pub busiest_cpu: u32,
    pub busiest_busy_share: f64,
    pub busiest_softirq_share: f64,
    /// NET_RX softirqs per second, all CPUs.
    pub net_rx_per_sec: f64,
    pub top_net_rx_cpu: u32,
    pub top_net_rx_share: f64,
    pub window_ms: u64,
}

static BUSIEST_SOFTIRQ: MetricDef = MetricDef {
    name: "spx_doctor_busiest_cpu_softirq_ratio",
    help: "Share of the busiest CPU's time spent in softirq during the window (0-1).",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for CpuSoftirqEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&BUSIEST_SOFTIRQ];
    fn series(&self) -> Vec<Series> {
        vec![Series::of(&BUSIEST_SOFTIRQ, self.busiest_softirq_share)]
    }
}

impl Check for CpuSoftirq {
    fn id(&self) -> &'static str {
        "cpu.softirq"
    }

    fn title(&self) -> &'static str {
        "Receive work is spread over cores, not funnelled into one"
    }

    fn explain(&self) -> &'static str {
        "Reads NET_RX per CPU (/proc/softirqs) and per-CPU time (/proc/stat) at the start \
         and end of the sample window (--sample) and computes, per CPU, NET_RX per second, \
         the share of time in softirq and the share busy.\n\
         \n\
         Verdicts: one core at least 90% busy, at least half of it softirq, with at \
         least a quarter of all NET_RX, while the median of the others is under 50%: \
         fail (a receive funnel). One core taking at least 50% of all NET_RX on a \
         machine of 4 or more CPUs with real traffic (1000 NET_RX/s or more): warn.\n\
         \n\
         Why: measured on the receiving host with IPsec on, the busiest core was 97.4% \
         busy, 71.8% softirq, the only one above 15% on a 128-thread box; with IPsec off \
         16 cores shared NET_RX, none above 15%, and throughput into one guest went from \
         3.58 to 17.6 Gbit/s. ESP has no ports, so RSS can only hash the node addresses, \
         and RPS hashes the SPI, which OVN keeps constant per node pair: one SA's receive \
         work cannot be spread. More TCP streams do not help.\n\
         \n\
         Fix: with IPsec wanted, nothing on this host spreads one SA; on physically \
         trusted links only, consider disabling IPsec (`spx doctor --for disable-ipsec`). \
         Without IPsec, spread the NIC's queues and interrupts: RSS channels \
         (`ethtool -L`), IRQ affinity (irqbalance), or RPS for single-queue devices."
    }

    fn samples(&self) -> bool {
        true
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        // The interfaces are only for the commands in the remediation.
        let sampled = match ctx.across_window(read_cpu_counters, || {
            underlay_nics::select(ctx)
                .map(|s| s.interfaces)
                .unwrap_or_default()
        }) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        judge(&Sample {
            start: sampled.start,
            end: sampled.end,
            window: sampled.window,
            ipsec_wanted: ctx.expect.as_ref().map(|e| e.ipsec_wanted),
            interfaces: sampled.during,
            config_file: ctx.config_file(),
        })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Per-CPU shares over the window, for CPUs present at both ends.
pub fn shares(s: &Sample) -> Vec<CpuShare> {
    let secs = s.window.as_secs_f64().max(0.001);
    s.end
        .iter()
        .filter_map(|e| {
            let b = s.start.iter().find(|b| b.cpu == e.cpu)?;
            let total = e.total.saturating_sub(b.total);
            if total == 0 {
                return None;
            }
            let t = total as f64;
            Some(CpuShare {
                cpu: e.cpu,
                net_rx_per_sec: (e.net_rx.saturating_sub(b.net_rx) as f64 / secs).round(),
                softirq_share: round3(e.softirq.saturating_sub(b.softirq) as f64 / t),
                busy_share: round3(e.busy.saturating_sub(b.busy) as f64 / t),
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn remediation(s: &Sample) -> Vec<String> {
    let (ipsec_wanted, interfaces) = (s.ipsec_wanted, &s.interfaces);
    let ifname = interfaces.first().map_or("IF", String::as_str);
    let ipsec = [
        "with IPsec on this is expected: ESP (IP protocol 50) has no ports, so RSS hashes only the two node addresses, and RPS hashes the SPI, which OVN keeps constant per node pair; one SA's receive work cannot be spread across cores, and more streams do not help (pcrypt, which would, is not exposed by OVN)".to_owned(),
        format!(
            "only where the underlay is physically trusted (one rack, a private VLAN): run `spx doctor --for disable-ipsec`, then {} on every node and `{}` (measured 3.58 -> 17.6 Gbit/s into one guest)",
            crate::spinifex::set_network_key("ipsec_enabled", false, &s.config_file),
            crate::spinifex::restart_daemon()
        ),
    ];
    let spread = [
        format!("see where the NIC's interrupts land: `grep {ifname} /proc/interrupts`; spread them with irqbalance (`systemctl enable --now irqbalance`) or by writing CPU lists to /proc/irq/N/smp_affinity_list"),
        format!("use as many RSS queues as cores that should share the work: `ethtool -l {ifname}`, then `ethtool -L {ifname} combined N`"),
        format!("for a single-queue device, steer with RPS: `echo ffff > /sys/class/net/{ifname}/queues/rx-0/rps_cpus` (a hex mask of the CPUs to use)"),
    ];
    match ipsec_wanted {
        Some(true) => ipsec.to_vec(),
        Some(false) => spread.to_vec(),
        None => {
            let mut v = vec!["no Spinifex config was read, so whether the overlay is IPsec-encrypted is unknown (pass --config PATH); both causes follow".to_owned()];
            v.extend(ipsec);
            v.extend(spread);
            v
        }
    }
}

pub fn judge(s: &Sample) -> Finding {
    let cpus = shares(s);
    if cpus.is_empty() {
        return Finding::skip(SkipReason::NothingToMeasure(format!(
            "no CPU time elapsed in the {} ms window (lengthen --sample)",
            s.window.as_millis()
        )));
    }
    let busiest = cpus
        .iter()
        .max_by(|a, b| a.busy_share.total_cmp(&b.busy_share))
        .expect("non-empty")
        .clone();
    let total_rx: f64 = cpus.iter().map(|c| c.net_rx_per_sec).sum();
    let top_rx = cpus
        .iter()
        .max_by(|a, b| a.net_rx_per_sec.total_cmp(&b.net_rx_per_sec))
        .expect("non-empty")
        .clone();
    let rx_share = if total_rx > 0.0 {
        top_rx.net_rx_per_sec / total_rx
    } else {
        0.0
    };
    let others = median(
        cpus.iter()
            .filter(|c| c.cpu != busiest.cpu)
            .map(|c| c.busy_share)
            .collect(),
    );
    let above_15 = cpus.iter().filter(|c| c.busy_share > 0.15).count();
    let n = cpus.len();

    // The hot core's softirq must be receive work: it takes a real part of
    // NET_RX (block or timer softirqs are not this check's business).
    let hot_is_rx = total_rx > 0.0 && busiest.net_rx_per_sec >= HOT_NET_RX_SHARE * total_rx;
    let hot = n >= 2
        && busiest.busy_share >= HOT_BUSY
        && busiest.softirq_share >= HOT_SOFTIRQ_OF_BUSY * busiest.busy_share
        && others < OTHERS_LIGHT
        && hot_is_rx;
    let concentrated =
        n >= MANY_CPUS && total_rx >= REAL_TRAFFIC_NET_RX && rx_share >= CONCENTRATED;

    let finding = if hot {
        let kind = if s.ipsec_wanted == Some(true) {
            CpuSoftirqKind::EspFunnel
        } else {
            CpuSoftirqKind::ReceiveFunnel
        };
        Finding::new(
            kind,
            format!(
                "cpu{} is {} busy, {} in softirq, while the median of the other {} CPUs is {} busy ({} of {n} above 15%): receive work is funnelled into one core (cpu{} takes {} of NET_RX)",
                busiest.cpu,
                pct(busiest.busy_share),
                pct(busiest.softirq_share),
                n - 1,
                pct(others),
                above_15,
                top_rx.cpu,
                pct(rx_share)
            ),
        )
        .fixes(remediation(s))
    } else if concentrated {
        Finding::new(
            CpuSoftirqKind::Concentrated,
            format!(
                "cpu{} takes {} of NET_RX ({:.0} of {:.0}/s across {n} CPUs): receive work concentrates on one core",
                top_rx.cpu,
                pct(rx_share),
                top_rx.net_rx_per_sec,
                total_rx
            ),
        )
        .fixes(remediation(s))
    } else {
        Finding::new(
            CpuSoftirqKind::Ok,
            format!(
                "busiest cpu{} {} busy ({} softirq); {} of {n} CPUs above 15%; NET_RX {:.0}/s, at most {} on one CPU",
                busiest.cpu,
                pct(busiest.busy_share),
                pct(busiest.softirq_share),
                above_15,
                total_rx,
                pct(rx_share)
            ),
        )
    };
    finding.evidence(&CpuSoftirqEvidence {
        busiest_cpu: busiest.cpu,
        busiest_busy_share: busiest.busy_share,
        busiest_softirq_share: busiest.softirq_share,
        net_rx_per_sec: total_rx,
        top_net_rx_cpu: top_rx.cpu,
        top_net_rx_share: round3(rx_share),
        window_ms: s.window.as_millis() as u64,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::seeds;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(s: &Sample) -> Finding {
        crate::schema_check::valid("cpu.softirq", super::judge(s))
    }

    /// Counters over a 1 s window at USER_HZ 100: `busy` and `softirq` in
    /// percent of the CPU.
    fn window(per_cpu: &[(u32, u64, u64, u64)], ipsec: Option<bool>) -> Sample {
        let start = per_cpu
            .iter()
            .map(|&(cpu, ..)| CpuCounters {
                cpu,
                net_rx: 1_000,
                busy: 5_000,
                softirq: 500,
                total: 50_000,
            })
            .collect();
        let end = per_cpu
            .iter()
            .map(|&(cpu, net_rx, busy, softirq)| CpuCounters {
                cpu,
                net_rx: 1_000 + net_rx,
                busy: 5_000 + busy,
                softirq: 500 + softirq,
                total: 50_100,
            })
            .collect();
        Sample {
            start,
            end,
            window: Duration::from_secs(1),
            config_file: "/etc/spinifex/spinifex.toml".into(),
            ipsec_wanted: ipsec,
            interfaces: vec!["enp65s0f0np0".into()],
        }
    }

    #[test]
    fn seed_ipsec_funnel_on_a_128_thread_box_fails() {
        // performance-tuning §2, IPsec on: the busiest core 97.4% busy,
        // 71.8% softirq, the only core above 15% of 128 threads. Counters
        // are in ticks of 1/1000 s here to carry the decimals.
        let mut s = window(&[], Some(true));
        for (cpu, (net_rx, busy, softirq, total)) in (0u32..).zip(seeds::cpu::esp_funnel()) {
            s.start.push(CpuCounters {
                cpu,
                net_rx: 0,
                busy: 0,
                softirq: 0,
                total: 0,
            });
            s.end.push(CpuCounters {
                cpu,
                net_rx,
                busy,
                softirq,
                total,
            });
        }
        let f = judge(&s);
        crate::snapshot::snapshot!("cpu.softirq", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert_eq!(f.evidence["busiest_cpu"], seeds::cpu::BUSIEST);
        assert_eq!(f.evidence["busiest_softirq_share"], 0.718);
        assert_eq!(
            f.evidence["cpus"].as_array().unwrap().len(),
            seeds::cpu::THREADS
        );
        assert!(f.remediation[0].contains("ESP"), "{:?}", f.remediation);
        assert!(f.remediation[1].contains("spx doctor --for disable-ipsec"));
    }

    #[test]
    fn seed_spread_over_16_cores_passes() {
        // performance-tuning §2, IPsec off: 16 cores share NET_RX, none
        // above 15% busy, the busiest has 19% of NET_RX.
        let mut cpus = vec![(0u32, 1_900u64, 14u64, 10u64)];
        for cpu in 1..16 {
            cpus.push((cpu, 540, 12, 8));
        }
        for cpu in 16..128 {
            cpus.push((cpu, 0, 1, 0));
        }
        let f = judge(&window(&cpus, Some(false)));
        crate::snapshot::snapshot!("cpu.softirq", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["top_net_rx_share"], 0.19);
    }

    #[test]
    fn concentrated_net_rx_warns_with_spread_fixes_when_ipsec_is_off() {
        let mut cpus = vec![(3u32, 6_000u64, 40u64, 30u64)];
        for cpu in [0, 1, 2, 4, 5, 6, 7] {
            cpus.push((cpu, 300, 10, 2));
        }
        let f = judge(&window(&cpus, Some(false)));
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert!(
            f.summary.starts_with("cpu3 takes 74.1% of NET_RX"),
            "{}",
            f.summary
        );
        assert!(f
            .remediation
            .iter()
            .any(|r| r.contains("ethtool -L enp65s0f0np0 combined N")));
        assert!(!f.remediation.iter().any(|r| r.contains("ESP")));
    }

    #[test]
    fn without_config_both_causes_are_given_and_idle_passes() {
        let mut cpus = vec![(0u32, 5_000u64, 95u64, 80u64)];
        cpus.extend((1..4).map(|c| (c, 10, 5, 1)));
        let f = judge(&window(&cpus, None));
        assert_eq!(f.status, Status::Fail);
        assert!(f.remediation[0].contains("unknown"));
        assert!(f.remediation.iter().any(|r| r.contains("ESP")));
        assert!(f.remediation.iter().any(|r| r.contains("irqbalance")));
        // Softirq saturation without NET_RX on that core is not a receive funnel.
        let f = judge(&window(&[(0, 0, 99, 90), (1, 500, 5, 1)], None));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        // A busy core that is not softirq is not a receive funnel.
        let f = judge(&window(&[(0, 10, 99, 1), (1, 10, 5, 1)], None));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        // Concentration needs real traffic.
        let f = judge(&window(
            &[(0, 500, 5, 1), (1, 1, 5, 1), (2, 1, 5, 1), (3, 1, 5, 1)],
            None,
        ));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
    }

    #[test]
    fn an_empty_window_is_a_skip() {
        let s = Sample {
            config_file: "/etc/spinifex/spinifex.toml".into(),
            start: vec![CpuCounters {
                cpu: 0,
                net_rx: 1,
                busy: 1,
                softirq: 0,
                total: 10,
            }],
            end: vec![CpuCounters {
                cpu: 0,
                net_rx: 1,
                busy: 1,
                softirq: 0,
                total: 10,
            }],
            window: Duration::from_millis(1),
            ipsec_wanted: None,
            interfaces: vec![],
        };
        assert_eq!(judge(&s).status, Status::Skip);
    }
}
