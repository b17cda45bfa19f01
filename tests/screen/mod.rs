//! The first screens (issue 34), drawn by the real binary: in a real
//! terminal (tmux at 80 and 120 columns, golden snapshots), piped, and in
//! colour or not, from real reports kept as fixtures.

mod fixtures;
mod goldens;
mod piped;
mod terminal;
