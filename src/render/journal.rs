//! The agent's log: one line per event on stderr, which systemd puts in
//! the journal (`journalctl -u spx-doctor-agent`). Under systemd (it sets
//! `JOURNAL_STREAM`) each line starts with its syslog priority, `<4>`,
//! which journald reads as the entry's level and strips; on a terminal
//! the line names the agent instead. Text from outside (a server's words,
//! a request's fields) is made one printable line first.

use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Error = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
}

pub fn log(priority: Priority, message: &str) {
    let line = crate::bus::one_line(message);
    let text = if std::env::var_os("JOURNAL_STREAM").is_some() {
        format!("<{}>{line}\n", priority as u8)
    } else {
        let word = match priority {
            Priority::Error => "error: ",
            Priority::Warning => "warning: ",
            Priority::Notice | Priority::Info => "",
        };
        format!("spx-doctor agent: {word}{line}\n")
    };
    // A closed stderr is not a reason to stop answering.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
