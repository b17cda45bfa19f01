//! Text from outside is data, never terminal control: an interface name
//! made of escape sequences (the kernel allows any byte but '/', ':',
//! NUL and white space) reaches the table and the JUnit file of a node
//! run shown inert (`\x1b`), and the JSON report exactly.

use super::*;
use crate::support::run_replayed;

/// A window title, a screen clear and a BEL in 11 bytes: a valid name.
const NAME: &str = "e\u{1b}]0;X\u{7}\u{1b}[2J";

#[root_test]
fn an_interface_named_in_escape_sequences_is_shown_inert() {
    let (here, there) = (Netns::new(), Netns::new());
    here.veth(NAME, &there, "p0");
    there.ip(&["link", "set", "p0", "mtu", "9000"]);
    here.ip(&["addr", "add", "198.18.91.1/24", "dev", NAME]);
    there.ip(&["addr", "add", "198.18.91.2/24", "dev", "p0"]);
    let args = [
        "--check",
        "mtu.path",
        "--mtu",
        "9000",
        "--peer",
        "198.18.91.2",
    ];

    // The JSON report holds the name exactly.
    let (code, doc) = run_json(here.spx().args(args));
    assert_eq!(code, 1, "{doc:#}");
    let c = support::check(&doc, "mtu.path");
    assert!(c["summary"].as_str().unwrap().contains(NAME), "{c:#}");
    assert!(
        c["remediation"]
            .to_string()
            .contains(r"e\u001b]0;X\u0007\u001b[2J"),
        "{c:#}"
    );

    // The table (plain, verbose and in colour) shows it as text.
    for extra in [&[][..], &["-v"], &["--color", "always"]] {
        let (code, text, _) = run_replayed(here.spx().args(args).args(extra));
        assert_eq!(code, 1, "{text}");
        assert!(text.contains(r"e\x1b]0;X\x07\x1b[2J"), "{extra:?}: {text}");
        assert!(!text.contains('\u{7}'), "{extra:?}: {text}");
        let escapes = text.matches('\u{1b}').count();
        let colours = text.matches("\u{1b}[").count();
        assert_eq!(
            escapes, colours,
            "{extra:?}: only the table's colours: {text:?}"
        );
        assert!(!text.contains("\u{1b}[2J"), "{extra:?}: {text:?}");
    }

    // JUnit shows it as the table does: XML that junitparser reads.
    if crate::junit::junitparser_or_skip("an_interface_named_in_escape_sequences_is_shown_inert") {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("node.xml");
        let (code, _, err) = run(here
            .spx()
            .args(args)
            .args(["--format", "junit", "--output"])
            .arg(&xml));
        assert_eq!(code, 1, "{err}");
        let junit = crate::junit::read_junit(&xml);
        let result = &junit["suites"][0]["cases"][0]["results"][0];
        assert_eq!(result["kind"], "failure", "{junit:#}");
        assert!(
            result["message"]
                .as_str()
                .unwrap()
                .contains(r"e\x1b]0;X\x07\x1b[2J"),
            "{result:#}"
        );
    }
}
