//! The one trait every check implements. The list of checks is
//! [`crate::CHECKS`]; `spx doctor list`, `explain`, the code table in docs/codes.md and the
//! shell completions of check ids are all generated from it. A cluster
//! check is in the same list: it answers [`Check::cluster`] with its
//! [`ClusterJudge`] (`cluster_check!` writes both methods it needs), and
//! that alone makes its scope [`Scope::Cluster`].

use serde_json::{Map, Value};

use crate::cluster::ClusterFacts;
use crate::ctx::Ctx;
use crate::evidence::{self, Evidence};
use crate::finding::Finding;
use crate::kind::{KindDoc, Kinds};
use crate::metrics::{MetricDef, Series};
use crate::settings::Preflight;
use crate::site_definition::SiteDefinition;

/// Where a check's facts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// One node: the host the doctor runs on.
    Node,
    /// The whole cluster: judged by `spx doctor --cluster` from every
    /// node's report ([`crate::cluster`]). Outside a cluster run such a
    /// check is not selected by default, and skips when asked for by id.
    Cluster,
}

pub trait Check: Send + Sync {
    /// Stable public id, `category.name`: used in `--check`, JSON and metrics.
    fn id(&self) -> &'static str;

    /// One line for `spx doctor list` and the JSON `title`.
    fn title(&self) -> &'static str;

    /// Long text for `spx doctor explain ID`: what it checks, why it matters
    /// (with the measured consequence), how to fix it.
    fn explain(&self) -> &'static str;

    /// True for checks that read counters at the start and end of the shared
    /// sample window ([`Ctx::wait_for_window_end`]). All of them run
    /// concurrently, so any number of them costs one window.
    fn samples(&self) -> bool {
        false
    }

    /// [`Scope::Node`] for every check that reads this host;
    /// [`Scope::Cluster`] for one that is a [`ClusterJudge`].
    fn scope(&self) -> Scope {
        match self.cluster() {
            Some(_) => Scope::Cluster,
            None => Scope::Node,
        }
    }

    /// The judge of every node's report, for a cluster check (`cluster.*`);
    /// `None`, the default, for a check that reads this host.
    fn cluster(&self) -> Option<ClusterJudge> {
        None
    }

    /// Gather facts and judge them. Never prints, never changes the host.
    /// A cluster check's, from `cluster_check!`, skips: one node alone
    /// has nothing to judge.
    fn run(&self, ctx: &Ctx) -> Finding;

    /// Every kind of outcome this check reports (its codes), its evidence
    /// type and the metrics it owns: `&DECLARED` with a
    /// `static DECLARED: Declared = Declared::of::<MyKind, MyEvidence>();`.
    fn declared(&self) -> &'static Declared;

    /// The preflights (`--for`) this check is part of besides the checks
    /// each names itself ([`crate::profile::Profile::required`]): a site
    /// check's `profiles`. None for a built-in check.
    fn profiles(&self) -> &[Preflight] {
        &[]
    }

    /// The doctor.d file a site check was made from; `None` for a
    /// built-in check.
    fn site(&self) -> Option<&SiteDefinition> {
        None
    }
}

/// A cluster check's judgement: every node's report, side by side
/// (`spx doctor --cluster`). Never prints, never reaches a node. Outside a
/// cluster run the same check's [`Check::run`] skips.
pub type ClusterJudge = fn(&ClusterFacts) -> Finding;

/// The two methods that make a check a cluster check, written inside its
/// `impl Check` in place of `run`: [`Check::cluster`] answers `$judge`, and
/// [`Check::run`] (one node, outside `--cluster`) skips with
/// [`crate::cluster::outside_cluster_run`].
///
/// ```ignore
/// impl Check for ClusterPathMatrix {
///     // id, title, explain, declared as in any check, then:
///     crate::check::cluster_check!(judge);
/// }
/// ```
macro_rules! cluster_check {
    ($judge:path) => {
        fn cluster(&self) -> Option<$crate::check::ClusterJudge> {
            Some($judge)
        }

        fn run(&self, _ctx: &$crate::ctx::Ctx) -> $crate::finding::Finding {
            $crate::cluster::outside_cluster_run()
        }
    };
}
pub(crate) use cluster_check;

/// What a converted check declares about its results.
pub struct Declared {
    /// Its kinds, in declaration (severity) order.
    pub kinds: &'static [KindDoc],
    /// The metrics its evidence carries.
    pub metrics: &'static [&'static MetricDef],
    /// Those metrics' series in one result's evidence (typed read-back),
    /// given the id of the check that reported it.
    pub series: fn(&str, &Map<String, Value>) -> Vec<Series>,
}

impl Declared {
    /// The declaration of a check whose kinds are `K` and evidence `E`.
    pub const fn of<K: Kinds, E: Evidence>() -> Declared {
        Declared {
            kinds: K::DOCS,
            metrics: E::METRICS,
            series: evidence::series_of::<E>,
        }
    }
}

/// The category of a check id: the part before the first dot.
pub fn category(id: &str) -> &str {
    id.split_once('.').map_or(id, |(c, _)| c)
}

impl std::fmt::Debug for dyn Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn category_is_the_prefix() {
        assert_eq!(super::category("mtu.path"), "mtu");
        assert_eq!(super::category("sysctl.udp-buffers"), "sysctl");
        assert_eq!(super::category("plain"), "plain");
    }
}
