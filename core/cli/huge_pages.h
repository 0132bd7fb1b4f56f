// Transparent huge pages, and a heap that keeps what it frees, for pskel's own large arrays.
// Its stages fill a job's records, the merge's per-rank views and simulate's graph once
// (gigabytes at 16,384 ranks) and then read across them: on 4 KiB pages that is a page fault
// per 4 KiB written, dear in a virtual machine, and a TLB miss per scattered read. Where the
// kernel gives huge pages only to memory that asks (THP mode "madvise", Debian's default),
// glibc's malloc asks when the tunable glibc.malloc.hugetlb=1 is set; tunables are read when a
// program starts, so pskel starts itself once more with it (docs/performance.md has the
// figures).
#pragma once

namespace pskel::cli {

// Call first in main(), with main's argc and argv. For a command that holds a job's trace
// (compress, skeleton, simulate, timeline, place, info, epilog), when huge pages are to be had
// only on request and the caller's GLIBC_TUNABLES says nothing of glibc.malloc.hugetlb,
// replaces the process with pskel run again with the tunable added. In that second run it
// restores GLIBC_TUNABLES as the caller had it, so that the programs pskel starts (a traced
// job, a skeleton, the compiler) see the caller's environment. Returns in the process that is
// to run the command; if the restart cannot be made, pskel runs on small pages as before.
void start_on_huge_pages(int argc, char** argv);

// Call next, for the same commands: freed memory stays with the process for the next rank's
// arrays (no trimming of the heap's top, no separate mapping below 32 MiB) instead of going back
// to the kernel and being faulted in, zeroed, again: these commands read a trace a rank at a
// time and free each rank's records once used (pskel timeline at 16,384 ranks: 1.6-2.7 s
// instead of 2.1-3.6 s, peak memory 2-4 % higher; docs/performance.md). No-op for other
// commands.
void keep_freed_memory(int argc, char** argv);

}  // namespace pskel::cli
