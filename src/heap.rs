//! The process's heap: glibc's arenas, and what a long-lived process (the
//! agent, the live `watch`) hands back to the kernel between rounds.

/// Every thread of the agent allocates from one glibc arena. A run starts
/// a thread per check, and by default glibc gives threads up to eight
/// arenas per core, each keeping its own free pages and fragments between
/// runs: over ten minutes at a 60 s interval an agent's RSS crept up by
/// 0.87 to 1.21 MiB (anonymous memory 2.4 to 3.3 MiB) even with
/// [`give_back_freed_memory`]. Side by side in the same lab, an agent with
/// one arena stayed within 0.24 MiB, 0.9 to 1.6 MiB lower (bench/watch.sh;
/// the figures are in docs/benchmarks.md). The check
/// threads spend their time waiting on the kernel, not in malloc, so the
/// one arena's lock costs nothing measurable. Set before the first thread.
pub fn one_heap_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and changes only the allocator's
    // policy for arenas made from now on; no thread exists yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Hand the heap a finished run freed back to the kernel. A run's check
/// threads allocate in glibc's per-thread arenas, which keep their pages
/// after the run; without this an agent running every minute grew its RSS
/// by 1.6 MiB over its first ten runs before levelling off (bench/watch.sh's
/// soak). `malloc_trim` only returns free pages; no live allocation moves.
pub fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and touches only memory the
    // allocator holds free; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
