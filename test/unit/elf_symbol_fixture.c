/* A stand-in Slurm plugin for doctor_test: the symbols pskel doctor reads from a plugin file. */
#include <stdint.h>

const char plugin_name[] = "doctor test fixture";
const uint32_t plugin_version = 0x160508; /* SLURM_VERSION_NUMBER of 22.05.8 */
uint32_t not_in_the_file;                 /* .bss: no bytes to read */
