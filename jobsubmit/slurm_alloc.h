// Slurm's allocator, from libslurmfull (already loaded in slurmctld): strings and arrays handed
// to slurmctld are freed there with xfree, so they must come from here, never from malloc or
// new. Signatures as in Slurm 22.05's src/common/xmalloc.h and xstring.h (not installed).
#pragma once

#include <stddef.h>

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** item);
void* slurm_xrecalloc(void** item, size_t count, size_t size, bool clear, bool try_,
                      const char* file, int line, const char* func);
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}
