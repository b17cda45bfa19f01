//! Golden snapshots of the first screens in a real terminal: tmux at 80
//! and 120 columns, each view as the operator sees it. A change of what
//! a screen says is a change of its snapshot (`cargo insta review`, or
//! `INSTA_UPDATE=always`; under `CI=true` a changed screen fails).
//!
//! Besides the snapshot, each screen is held to what the issue asks of
//! it: within its width, problems before passes, one fix line with the
//! count for 300 guests, the cluster in natural order and short.

use super::fixtures::{ClusterFixture, GUESTS};
use super::terminal::{
    assert_fits, in_terminal, replay_args, without_wall_time, StoredCluster, UTF8,
};
use crate::support::{self, tmux::Tmux};

const WIDTHS: [u16; 2] = [80, 120];

fn tmux_or_skip(test: &str) -> bool {
    support::tool_or_skip(test, "tmux", Tmux::available())
}

/// `bundle` replayed in a terminal of each width: its screens.
fn node_screens(test: &str, bundle: &str) -> Vec<(u16, String)> {
    WIDTHS
        .iter()
        .map(|&w| {
            let text = in_terminal(&replay_args(bundle), w, &[UTF8], None, false);
            assert_fits(&text, usize::from(w), test);
            insta::assert_snapshot!(format!("{test}-{w}"), text);
            (w, text)
        })
        .collect()
}

/// The line numbers of the first line starting with each of `starts`,
/// which must come in that order.
fn in_order(text: &str, starts: &[&str]) {
    let mut last = 0;
    for s in starts {
        let at = text
            .lines()
            .position(|l| l.starts_with(s))
            .unwrap_or_else(|| panic!("no line starts with {s:?}:\n{text}"));
        assert!(at >= last, "{s:?} out of order:\n{text}");
        last = at;
    }
}

#[test]
fn a_node_without_a_config() {
    if !tmux_or_skip("a_node_without_a_config") {
        return;
    }
    for (w, text) in node_screens("node-no-config", "node-no-config.spxb") {
        // The README's first command: the failures and their fixes at
        // the top, then the warning, passes and skips, the exit last.
        in_order(
            &text,
            &[
                "vm · 20 checks",
                "✘ sysctl.udp-buffers/",
                "  fix: ",
                "✘ nic.offloads/",
                "! nic.rings/",
                "✔ 4 pass: ",
                "- 10 skip: no config: ",
                "exit 1: sysctl.udp-buffers and nic.offloads failed",
            ],
        );
        assert_eq!(text.matches("no config: none found").count(), 1, "{text}");
        assert_eq!(
            text.matches("default route's interface").count(),
            1,
            "{text}"
        );
        if w == 120 {
            // 25 lines, and one more: where a replay's facts came from.
            assert!(
                text.lines().count() <= 26,
                "{}\n{text}",
                text.lines().count()
            );
        }
    }
}

#[test]
fn a_node_running_300_guests_that_lack_one_flag() {
    if !tmux_or_skip("a_node_running_300_guests_that_lack_one_flag") {
        return;
    }
    for (_, text) in node_screens("node-300-guests", "node-300-guests.spxb") {
        // One fix line (and the line naming the others), not 300.
        assert_eq!(
            text.matches("stop, then start instance").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(&format!("and {} more:", GUESTS - 10)),
            "{text}"
        );
        assert!(text.contains("--check qemu.tuning -v`"), "{text}");
    }
}

#[test]
fn a_node_with_three_problems() {
    if !tmux_or_skip("a_node_with_three_problems") {
        return;
    }
    for (_, text) in node_screens("node-three-problems", "node-three-problems.spxb") {
        in_order(
            &text,
            &[
                "n1 · 18 checks",
                "✘ sysctl.udp-buffers/",
                "✘ mtu.path/black-hole",
                "! nic.queues/unused-queues",
                "✔ ",
                "exit 1: ",
            ],
        );
        let marks = text
            .lines()
            .filter(|l| l.starts_with("✘ ") || l.starts_with("! ") || l.starts_with("? "))
            .count();
        assert_eq!(marks, 3, "{text}");
    }
}

#[test]
fn a_healthy_node() {
    if !tmux_or_skip("a_healthy_node") {
        return;
    }
    for (_, text) in node_screens("node-healthy", "node-healthy.spxb") {
        assert!(!text.contains("✘") && !text.contains("\n! "), "{text}");
        assert!(text.contains(" · 0 fail, 0 warn, 0 error, "), "{text}");
        // Every pass on one line, right after the headline.
        let second = text.lines().nth(1).unwrap_or("");
        assert!(
            second.starts_with("✔ ") && second.contains(" pass: "),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("exit 0: no check failed"),
            "{text}"
        );
        assert!(text.lines().count() <= 12, "{text}");
    }
}

/// `nodes` stored reports, `silent` without an answer, in a terminal of
/// each width: the screens (the wall time aside).
fn cluster_screens(test: &str, nodes: usize, silent: &[&str]) -> Vec<(u16, String)> {
    let cluster = StoredCluster::new(&ClusterFixture::read(nodes), silent);
    WIDTHS
        .iter()
        .map(|&w| {
            let path = cluster.path();
            let text = in_terminal(&cluster.args(), w, &[UTF8], Some(&path), false);
            assert_fits(&text, usize::from(w), test);
            let text = without_wall_time(&text);
            insta::assert_snapshot!(format!("{test}-{w}"), text);
            (w, text)
        })
        .collect()
}

#[test]
fn a_16_node_cluster_with_a_black_hole_and_a_node_that_did_not_answer() {
    let test = "cluster-16";
    if !tmux_or_skip(test) {
        return;
    }
    for (w, text) in cluster_screens(test, 16, &["n7"]) {
        if w == 120 {
            assert!(
                text.lines().count() <= 40,
                "{}\n{text}",
                text.lines().count()
            );
        }
        // Natural order, and a fault shared by 14 nodes said once.
        assert!(
            text.starts_with("16 nodes (15 answered, 1 did not: n7)"),
            "{text}"
        );
        assert!(
            text.contains("✘ n0–n6, n8–n11, n13–n15: mtu.path/black-hole: 1 of 15 peers"),
            "{text}"
        );
        assert!(
            text.contains("✘ n12: mtu.path/black-hole: 15 of 15 peers"),
            "{text}"
        );
        assert!(!text.contains("n10, n11, n12, n13, n14, n15, n2"), "{text}");
        in_order(
            &text,
            &[
                "16 nodes",
                "? cluster.reachable/",
                "✘ cluster.path-matrix/",
                "path MTU: ",
                "✘ n0–n6",
                "✔ ",
                "exit 1: ",
            ],
        );
        // The matrix: only its cells below the target.
        assert!(!text.contains("from \\ to"), "{text}");
        assert!(text.contains("→ n12: 1500✘"), "{text}");
    }
}

#[test]
fn a_64_node_cluster_with_a_black_hole_fits_one_screen() {
    let test = "cluster-64";
    if !tmux_or_skip(test) {
        return;
    }
    for (w, text) in cluster_screens(test, 64, &[]) {
        // One screen: 40 lines at 120 columns, 50 at 80.
        let lines = if w == 120 { 40 } else { 50 };
        assert!(
            text.lines().count() <= lines,
            "{}\n{text}",
            text.lines().count()
        );
        assert!(
            text.contains("n0–n39, n41–n63: mtu.path/black-hole"),
            "{text}"
        );
        assert!(
            text.contains("✘ n40: mtu.path/black-hole: 63 of 63 peers"),
            "{text}"
        );
    }
}
