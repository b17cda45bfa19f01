//! The machine type and the QEMU version its defaults come from.

use crate::facts::qemu::cmdline::machine_type_version;
use crate::facts::qemu::QemuCommandLine;

/// The machine type and the version whose defaults apply. A versioned type
/// names it; an alias (`q35`, `pc`, or no -machine at all) is the binary's
/// newest type, so its version is QEMU's own, known only through QMP.
pub(super) fn machine(
    cl: &QemuCommandLine,
    qemu: Option<(u32, u32)>,
) -> (String, Option<(u32, u32)>) {
    let written = cl.machine_type();
    if let Some(v) = written.and_then(machine_type_version) {
        return (written.unwrap_or_default().to_owned(), Some(v));
    }
    let name = written.unwrap_or("default");
    let alias = !name.contains('-');
    match qemu.filter(|_| alias) {
        Some((major, minor)) => (
            format!("{name} (QEMU {major}.{minor})"),
            Some((major, minor)),
        ),
        None => (name.to_owned(), None),
    }
}
