// spank_pskel.so's entry points: the plugin symbols Slurm looks up, each routed by context to
// one file (alloc.cpp, stepd.cpp). No exception crosses into Slurm, and no callback ever fails
// a job: problems are logged and the job runs untraced.
#include <exception>

#include "plugin.h"

#define PSKEL_EXPORT __attribute__((visibility("default")))

namespace {

template <class F>
int guarded(const char* phase, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    pskel::spank::log_error(std::string(phase) + ": " + e.what());
  } catch (...) {
    pskel::spank::log_error(std::string(phase) + ": unknown exception");
  }
  return ESPANK_SUCCESS;
}

std::vector<std::string> arguments(int ac, char** av) {
  std::vector<std::string> out;
  for (int i = 0; i < ac; ++i)
    if (av[i]) out.emplace_back(av[i]);
  return out;
}

}  // namespace

namespace pskel::spank {

void log_error(const std::string& line) { slurm_error("pskel: %s", line.c_str()); }
void log_debug(const std::string& line) { slurm_debug("pskel: %s", line.c_str()); }

}  // namespace pskel::spank

extern "C" {

// SPANK_PLUGIN(pskel, 1), spelled out: in C++ these need explicit extern "C" definitions.
PSKEL_EXPORT extern const char plugin_name[] = "pskel";
PSKEL_EXPORT extern const char plugin_type[] = "spank";
PSKEL_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;  // checked
PSKEL_EXPORT extern const unsigned int spank_plugin_version = 1;

PSKEL_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    // Every context, so that sbatch and salloc know the option too.
    const spank_err_t rc = spank_option_register(sp, pskel::spank::predict_option());
    if (rc != ESPANK_SUCCESS)
      pskel::spank::log_error(std::string("init: register --predict: ") + spank_strerror(rc));
    if (spank_context() == S_CTX_REMOTE) return pskel::spank::stepd_init(sp, arguments(ac, av));
    return static_cast<int>(ESPANK_SUCCESS);
  });
}

PSKEL_EXPORT int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return guarded("init_post_opt", [&] {
    switch (spank_context()) {
      case S_CTX_ALLOCATOR:
      case S_CTX_LOCAL: return pskel::spank::alloc_init_post_opt(sp);
      default: return static_cast<int>(ESPANK_SUCCESS);
    }
  });
}

PSKEL_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
  return guarded("task_init_privileged", [&] {
    if (spank_context() != S_CTX_REMOTE) return static_cast<int>(ESPANK_SUCCESS);
    return pskel::spank::stepd_task_init_privileged(sp);
  });
}

PSKEL_EXPORT int slurm_spank_task_init(spank_t sp, int, char**) {
  return guarded("task_init", [&] {
    if (spank_context() != S_CTX_REMOTE) return static_cast<int>(ESPANK_SUCCESS);
    return pskel::spank::stepd_task_init(sp);
  });
}

}  // extern "C"
